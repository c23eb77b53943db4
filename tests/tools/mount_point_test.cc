// The mount program's checks before anything is opened: where it mounts
// (tools/mount_point.h) and its whole-number options (tools/walfs_args.h).
#include "tools/mount_point.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tools/walfs_args.h"

namespace walfs::tools {
namespace {

class MountPoint : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/walfs-mount-point-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(MountPoint, TheSourceIsTheImagesCanonicalPathWithCommasEscaped) {
  const std::string image = dir_ + "/a,b";
  ASSERT_EQ(close(open(image.c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  const std::string relative = dir_ + "/./a,b";
  EXPECT_EQ(MountSource(relative.c_str()), dir_ + "/a\\,b");
}

TEST_F(MountPoint, AnImageThatDoesNotResolveIsTheSourceAsTyped) {
  EXPECT_EQ(MountSource("no/such/img"), "no/such/img");
}

TEST_F(MountPoint, ADirectoryResolvesToItsAbsolutePath) {
  std::string resolved;
  const std::string dotted = dir_ + "/../" + std::filesystem::path(dir_).filename().string();
  EXPECT_EQ(ResolveMountpoint(dotted.c_str(), &resolved), "");
  EXPECT_EQ(resolved, dir_);
}

TEST_F(MountPoint, AMissingMountPointSaysHowToMakeIt) {
  std::string resolved;
  const std::string missing = dir_ + "/mnt";
  EXPECT_EQ(ResolveMountpoint(missing.c_str(), &resolved),
            missing + ": the mount point does not exist (create it with mkdir)");
}

TEST_F(MountPoint, AFileIsNoMountPoint) {
  const std::string file = dir_ + "/f";
  ASSERT_EQ(close(open(file.c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  std::string resolved;
  EXPECT_EQ(ResolveMountpoint(file.c_str(), &resolved), file + ": the mount point is not a directory");
}

TEST_F(MountPoint, AnOpenedDevFuseIsPassedOn) {
  std::string resolved;
  EXPECT_EQ(ResolveMountpoint("/dev/fd/7", &resolved), "");
  EXPECT_EQ(resolved, "/dev/fd/7");
}

TEST_F(MountPoint, AMountThatWouldHideItsImageIsRefused) {
  const std::string image = dir_ + "/img";
  ASSERT_EQ(close(open(image.c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  EXPECT_EQ(HidesImage(image.c_str(), image.c_str()), image + ": the image cannot be its own mountpoint");
  EXPECT_NE(HidesImage(image.c_str(), dir_.c_str()).find("would hide the image under its own mount"),
            std::string::npos);
  ASSERT_EQ(mkdir((dir_ + "/mnt").c_str(), 0755), 0);
  EXPECT_EQ(HidesImage(image.c_str(), (dir_ + "/mnt").c_str()), "");
}

TEST(MountArgs, AWholeNumberInRangeIsTaken) {
  std::uint64_t n = 7;
  EXPECT_TRUE(ParseNumber("logbufs", nullptr, 2, 16, &n));
  EXPECT_EQ(n, 7u) << "an option not given leaves the value";
  EXPECT_TRUE(ParseNumber("logbufs", "16", 2, 16, &n));
  EXPECT_EQ(n, 16u);
}

TEST(MountArgs, ANumberOutOfRangeOrWithTrailingTextIsRefused) {
  std::uint64_t n = 7;
  for (const char* bad : {"1", "17", "-3", "5s", "", " 4"}) {
    testing::internal::CaptureStderr();
    EXPECT_FALSE(ParseNumber("logbufs", bad, 2, 16, &n, "log buffers")) << bad;
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(std::string("logbufs=") + bad + ": must be a whole number from 2 to 16 log buffers"),
              std::string::npos)
        << err;
  }
  EXPECT_EQ(n, 7u);
}

TEST(MountArgs, ACacheTimeoutIsZeroToAYear) {
  double s = -1;
  EXPECT_TRUE(ParseTimeout("0.5", &s));
  EXPECT_EQ(s, 0.5);
  EXPECT_FALSE(ParseTimeout("31536001", &s));
  EXPECT_FALSE(ParseTimeout("-1", &s));
  EXPECT_FALSE(ParseTimeout("1x", &s));
}

}  // namespace
}  // namespace walfs::tools
