// `-o commit=SECONDS`: what was written and never fsynced reaches the log
// within the interval (the CIL's timed push, xfs_log_worker), so a daemon
// killed after it loses none of it; within the interval it may be lost, as
// on any filesystem.  Bad values are refused before anything is mounted.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

// The value of `key` in .walfs/stats, or -1 if the line is missing.
long long Stat(const std::string& root, const std::string& key) {
  const std::string text = ReadFile(root + "/.walfs/stats");
  const std::string needle = "\n" + key + " ";
  const std::size_t at = ("\n" + text).find(needle);
  if (at == std::string::npos) return -1;
  return std::strtoll(text.c_str() + at + needle.size() - 1, nullptr, 10);
}

class CommitInterval : public MountedFs {
 public:
  static void SetUpTestSuite() { MountSuite({.image_size = "256m", .options = {"commit=1"}}); }

 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
  }
};

TEST_F(CommitInterval, WritesNobodyFsyncedSurviveADaemonKilledAfterTheInterval) {
  const std::string data(100000, 'c');
  WriteFile(Path("unsynced"), data);  // no fsync, of the file or the directory
  ASSERT_SYS(mkdir(Path("dir").c_str(), 0755));
  const long long pushes = Stat(Root(), "cil_timed_pushes");
  const long long committed = Stat(Root(), "cil_committed");
  ASSERT_GE(pushes, 0) << "no cil_timed_pushes line in .walfs/stats";
  ASSERT_GE(committed, 0) << "no cil_committed line in .walfs/stats";
  // Pushed one interval after the first change, and its commit record on
  // disk; allow for a loaded machine.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((Stat(Root(), "cil_timed_pushes") == pushes || Stat(Root(), "cil_committed") == committed) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GT(Stat(Root(), "cil_timed_pushes"), pushes) << "no timed push within 20 s of commit=1";
  ASSERT_GT(Stat(Root(), "cil_committed"), committed) << "no checkpoint committed";
  KillDaemon();
  ASSERT_NO_FATAL_FAILURE(MountAgain());
  EXPECT_EQ(ReadFile(Path("unsynced")), data);
  struct stat st {};
  EXPECT_SYS(stat(Path("dir").c_str(), &st));
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  ASSERT_NO_FATAL_FAILURE(Remount());  // fsck -n clean, and back
}

TEST_F(CommitInterval, AnIntervalOutsideOneToADayIsRefusedBeforeMounting) {
  const std::string walfs = BinDir() + "/walfs";
  char dir[] = "/tmp/walfs-commit-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  for (const char* bad : {"commit=0", "commit=86401", "commit=-1"}) {
    const ToolRun r = RunTool(walfs + " " + ImagePath() + " " + dir + " -f -o " + bad);
    EXPECT_EQ(r.exit_code, 1) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("1 to 86400 seconds"), std::string::npos) << bad << ": " << r.out;
  }
  rmdir(dir);
}

}  // namespace
}  // namespace walfs::testing
