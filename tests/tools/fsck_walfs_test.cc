// fsck.walfs end to end on real image files: what it does with a log a
// crash left behind, and the exit codes fsck(8) expects of it.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "fs/filesystem.h"
#include "tests/tools/tool_run.h"

namespace walfs {
namespace {

using testing::ToolRun;

ToolRun Sh(const std::string& cmd) { return testing::RunTool(cmd); }
std::string Fsck(const std::string& args) { return std::string(WALFS_FSCK) + " " + args; }

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class FsckWalfs : public ::testing::Test {
 protected:
  void SetUp() override {
    image_ = ::testing::TempDir() + "fsck_walfs_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".img";
    std::filesystem::remove(image_);
    ToolRun made = Sh(std::string(WALFS_MKFS) + " -q " + image_ + " 64m");
    ASSERT_EQ(made.exit_code, 0) << made.out;
  }
  void TearDown() override { std::filesystem::remove(image_); }

  // Mounts the image in this process, makes a directory and a file in it,
  // fsyncs, and crashes (the Filesystem goes without Unmount): the log
  // holds committed transactions a mount or fsck must replay.
  void MountWriteAndCrash() {
    fs::MountOptions o;
    o.image = image_;
    auto fs = fs::Filesystem::Mount(o);
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    auto dir = (*fs)->Mkdir({}, (*fs)->root(), "d", 0755);
    ASSERT_TRUE(dir.ok());
    auto file = (*fs)->Mknod({}, dir->st_ino, "f", S_IFREG | 0644, 0);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*fs)->Write(file->st_ino, 0, "data", 4).ok());
    ASSERT_TRUE((*fs)->Fsync(file->st_ino, false).ok());
    fs->reset();
  }
  // What a read-only mount says about the log ("clean log" or "log
  // recovered: ...").
  std::string MountSays() {
    fs::MountOptions o;
    o.image = image_;
    o.read_only = true;
    auto fs = fs::Filesystem::Mount(o);
    if (!fs.ok()) return fs.status().ToString();
    const std::string d = (*fs)->Describe();
    EXPECT_TRUE((*fs)->Unmount().ok());
    return d;
  }

  std::string image_;
};

TEST_F(FsckWalfs, CheckOnlySaysTheLogNeedsReplayAndChecksTheImageAsItWouldLeaveIt) {
  MountWriteAndCrash();
  const std::string before = Slurp(image_);
  ToolRun n = Sh(Fsck("-n " + image_));
  EXPECT_EQ(n.exit_code, 4) << n.out;
  EXPECT_NE(n.out.find("the log holds "), std::string::npos) << n.out;
  EXPECT_NE(n.out.find(" committed transactions not yet replayed; run fsck.walfs without -n or mount it"),
            std::string::npos)
      << n.out;
  // The root, d and d/f: not the "0 inodes in use" of an unreplayed image.
  EXPECT_NE(n.out.find("3 inodes in use (2 directories)"), std::string::npos) << n.out;
  EXPECT_NE(n.out.find("1 problem(s), 0 repaired, 1 left"), std::string::npos) << n.out;
  EXPECT_TRUE(Slurp(image_) == before) << "fsck -n changed the image";
  EXPECT_NE(MountSays().find("log recovered"), std::string::npos) << "the log is still to replay";
}

TEST_F(FsckWalfs, AReplayLeavesTheLogCleanSoCheckOnlyAndTheNextMountFindNothingToDo) {
  MountWriteAndCrash();
  ToolRun fix = Sh(Fsck(image_));
  EXPECT_EQ(fix.exit_code, 0) << fix.out;
  EXPECT_NE(fix.out.find("replayed the log"), std::string::npos) << fix.out;
  EXPECT_NE(fix.out.find(": clean"), std::string::npos) << fix.out;
  ToolRun n = Sh(Fsck("-n -v " + image_));
  EXPECT_EQ(n.exit_code, 0) << n.out;
  EXPECT_NE(n.out.find(": clean"), std::string::npos) << n.out;
  EXPECT_NE(n.out.find("3 inodes in use"), std::string::npos) << n.out;
  const std::string says = MountSays();
  EXPECT_NE(says.find("clean log"), std::string::npos) << says;
}

}  // namespace
}  // namespace walfs
