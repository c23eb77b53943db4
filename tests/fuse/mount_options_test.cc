// The mount program's options and arguments: what it refuses before it
// mounts, with a message that says the allowed range, and what a read-only
// mount looks like to the kernel.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <utility>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

std::string ProcMountsLine(const std::string& mountpoint) {
  std::ifstream f("/proc/mounts");
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string dev, mnt;
    in >> dev >> mnt;
    if (mnt == mountpoint) return line;
  }
  return "";
}

class MountOptions : public MountedFs {
 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
    char dir[] = "/tmp/walfs-options-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    if (!dir_.empty()) {
      if (!ProcMountsLine(dir_).empty()) (void)!system(("umount " + dir_).c_str());
      rmdir(dir_.c_str());
    }
    MountedFs::TearDown();
  }
  std::string Walfs() const { return BinDir() + "/walfs"; }
  std::string dir_;
};

TEST_F(MountOptions, NumbersOutsideTheirRangeAreRefusedWithTheRange) {
  for (const char* bad : {"threads=0", "threads=-3", "max_threads=0", "trace_buffer_kb=0", "logbsize=99999999",
                          "logbufs=1", "logbufs=x", "trace_delay_us=0", "wb_reserve_mb=-1", "zeroout_kb=1025",
                          "zeroout_kb=32k"}) {
    const ToolRun r = RunTool(Walfs() + " " + ImagePath() + " " + dir_ + " -f -o " + bad);
    EXPECT_EQ(r.exit_code, 1) << bad << ": " << r.out;
    const std::string name = std::string(bad).substr(0, std::string(bad).find('='));
    EXPECT_NE(r.out.find(std::string(bad) + ": must be a whole number from"), std::string::npos) << r.out;
    EXPECT_EQ(ProcMountsLine(dir_), "") << bad << " mounted";
  }
}

TEST_F(MountOptions, AChoiceOutsideItsValuesIsRefusedNamingThem) {
  for (const auto& [bad, says] : std::vector<std::pair<std::string, std::string>>{
           {"io=fast", "io=fast: must be io=sync or io=uring"},
           {"force_io=bogus", "force_io=bogus: must be force_io=inline or force_io=device"},
           {"force_io=inline,force_io=device", "choose one"}}) {
    const ToolRun r = RunTool(Walfs() + " " + ImagePath() + " " + dir_ + " -f -o " + bad);
    EXPECT_EQ(r.exit_code, 1) << bad << ": " << r.out;
    EXPECT_NE(r.out.find(says), std::string::npos) << bad << ": " << r.out;
    EXPECT_EQ(ProcMountsLine(dir_), "") << bad << " mounted";
  }
}

TEST_F(MountOptions, AnImageIsNotMountedOnItselfOrOverTheDirectoryHoldingIt) {
  const ToolRun self = RunTool(Walfs() + " " + ImagePath() + " " + ImagePath() + " -f");
  EXPECT_EQ(self.exit_code, 1) << self.out;
  EXPECT_NE(self.out.find("cannot be its own mountpoint"), std::string::npos) << self.out;
  const std::string dir = ImagePath().substr(0, ImagePath().rfind('/'));
  const ToolRun above = RunTool(Walfs() + " " + ImagePath() + " " + dir + " -f");
  EXPECT_EQ(above.exit_code, 1) << above.out;
  EXPECT_NE(above.out.find("would hide the image"), std::string::npos) << above.out;
}

TEST_F(MountOptions, ErrorsNameTheImageOnceWithoutStatusNames) {
  const ToolRun r = RunTool(Walfs() + " " + dir_ + "-missing.img " + dir_ + " -f");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.find("NotFound"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("missing.img: open"), std::string::npos) << "the image named twice: " << r.out;
  EXPECT_NE(r.out.find("missing.img: No such file or directory"), std::string::npos) << r.out;
}

TEST_F(MountOptions, RemountSaysWhatToDoInstead) {
  const ToolRun r = RunTool(Walfs() + " " + ImagePath() + " " + dir_ + " -o rw,remount,ro");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("remount is not supported"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-o ro"), std::string::npos) << r.out;
}

// The second mount of the suite's image would be refused (it is locked), so
// these use an image of their own.
TEST_F(MountOptions, NorecoveryIsReadOnlyToTheKernelAndAMountPrintsNoLibfuseWarning) {
  const std::string img = dir_ + ".img";
  ASSERT_EQ(RunTool(BinDir() + "/mkfs.walfs " + img + " 64m").exit_code, 0);
  ToolRun r = RunTool(Walfs() + " " + img + " " + dir_ + " -o norecovery");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string line = ProcMountsLine(dir_);
  EXPECT_EQ(line.find(" rw,"), std::string::npos) << line;
  EXPECT_NE(line.find(" ro,"), std::string::npos) << line;
  EXPECT_ERRNO(EROFS, mkdir((dir_ + "/d").c_str(), 0755));
  ASSERT_EQ(system(("umount " + dir_).c_str()), 0);
  // In the foreground a mount's stderr holds walfs's lines only.
  r = RunTool("timeout -s INT 2 " + Walfs() + " " + img + " " + dir_ + " -f");
  EXPECT_EQ(r.out.find("Ignoring invalid max threads"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(img + ": " + img), std::string::npos) << "the image named twice: " << r.out;
  unlink(img.c_str());
}

}  // namespace
}  // namespace walfs::testing
