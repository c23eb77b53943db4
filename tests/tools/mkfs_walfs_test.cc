// mkfs.walfs end to end: it makes images, refuses to overwrite filesystems
// without -f, explains every refusal, and walfs-logprint reads the log of
// the image it made.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_file.h"
#include "fs/format/superblock_format.h"
#include "tests/tools/tool_run.h"

namespace walfs {
namespace {

using testing::ToolRun;

ToolRun Sh(const std::string& cmd) { return testing::RunTool(cmd); }

std::string Mkfs(const std::string& args) { return std::string(WALFS_MKFS) + " " + args; }

class MkfsWalfs : public ::testing::Test {
 protected:
  void SetUp() override {
    image_ = ::testing::TempDir() + "mkfs_walfs_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".img";
    std::filesystem::remove(image_);
  }
  void TearDown() override { std::filesystem::remove(image_); }
  std::string image_;
};

TEST_F(MkfsWalfs, MakesAnImageThatDecodesAndWhoseLogIsEmpty) {
  ToolRun r = Sh(Mkfs("-L test " + image_ + " 64m"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("label \"test\""), std::string::npos) << r.out;
  EXPECT_EQ(std::filesystem::file_size(image_), 64u << 20);
  auto dev = FileDevice::Open(image_, {});
  ASSERT_TRUE(dev.ok());
  std::vector<std::byte> b(fs::format::kSuperSize);
  ASSERT_TRUE((*dev)->Read(0, b.data(), b.size()).ok());
  auto sb = fs::format::DecodeSuperblock(b, (*dev)->size_bytes());
  ASSERT_TRUE(sb.ok()) << sb.status().ToString();
  EXPECT_EQ(sb->label, "test");
  ToolRun lp = Sh(std::string(WALFS_LOGPRINT) + " " + image_);
  EXPECT_EQ(lp.exit_code, 0) << lp.out;
  EXPECT_NE(lp.out.find("empty log"), std::string::npos) << lp.out;
}

TEST_F(MkfsWalfs, RefusesToOverwriteWalfsWithoutForce) {
  ASSERT_EQ(Sh(Mkfs("-q " + image_ + " 32m")).exit_code, 0);
  ToolRun again = Sh(Mkfs(image_));
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.out.find("contains a walfs filesystem"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("-f"), std::string::npos);
  EXPECT_EQ(Sh(Mkfs("-q -f " + image_)).exit_code, 0);
}

TEST_F(MkfsWalfs, RefusesToOverwriteAnotherFilesystemWithoutForce) {
  if (Sh("command -v mkfs.ext4").exit_code != 0) GTEST_SKIP() << "mkfs.ext4 is not installed";
  ASSERT_EQ(Sh("truncate -s 32m " + image_ + " && mkfs.ext4 -q -F " + image_).exit_code, 0);
  ToolRun r = Sh(Mkfs(image_));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("ext4"), std::string::npos) << r.out;
  EXPECT_EQ(Sh(Mkfs("-q -f " + image_)).exit_code, 0);
}

TEST_F(MkfsWalfs, ExplainsEveryRefusal) {
  struct Case {
    std::string args, says;
  };
  const std::vector<Case> cases{
      {image_, "does not exist; give a SIZE"},
      {image_ + " 12q", "unknown unit"},
      {"-l size=64k " + image_ + " 64m", "too small"},
      {"-l bogus " + image_ + " 64m", "size=BYTES or concurrency=N"},
      {"-l concurrency=0 " + image_ + " 64m", "concurrency is a number"},
      {"-b 3000 " + image_ + " 64m", "power of two"},
      {image_ + " 100k", "too small"},
      {"-a 1000 " + image_ + " 1g", "ask for at most 997"},
  };
  for (const Case& c : cases) {
    ToolRun r = Sh(Mkfs(c.args));
    EXPECT_EQ(r.exit_code, 1) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "one line: " << r.out;
  }
  EXPECT_FALSE(std::filesystem::exists(image_)) << "a refused mkfs must not create the image";
}

// A value outside an option's range is a usage error (exit 2), not the
// default in disguise: -a 0 once meant "choose for me".
TEST_F(MkfsWalfs, AnAgCountOutOfRangeIsAUsageError) {
  for (const std::string a : {"0", "65537", "x"}) {
    ToolRun r = Sh(Mkfs("-a " + a + " " + image_ + " 64m"));
    EXPECT_EQ(r.exit_code, 2) << a << ": " << r.out;
    EXPECT_NE(r.out.find("--agcount"), std::string::npos) << a << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << a << ": " << r.out;
  }
  EXPECT_FALSE(std::filesystem::exists(image_));
}

}  // namespace
}  // namespace walfs
