// `-o commit=SECONDS`: what was written and never fsynced reaches the log
// within the interval (the CIL's timed push, xfs_log_worker), so a daemon
// killed after it loses none of it; within the interval it may be lost, as
// on any filesystem.  Bad values are refused before anything is mounted.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

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
  const long long pushes = StatValue(Root(), "cil_timed_pushes");
  ASSERT_GE(pushes, 0) << "no cil_timed_pushes line in .walfs/stats";
  const std::string data(100000, 'c');
  WriteFile(Path("unsynced"), data);  // no fsync, of the file or the directory
  ASSERT_SYS(mkdir(Path("dir").c_str(), 0755));
  // Where those changes are: in the current context (cil_seq) if it holds
  // any, else in an earlier one already swapped out.
  const std::string after = ReadFile(Root() + "/.walfs/stats");
  const long long seq = StatIn(after, "cil_seq");
  ASSERT_GE(seq, 1) << "no cil_seq line in .walfs/stats";
  ASSERT_GE(StatIn(after, "cil_items"), 0) << "no cil_items line in .walfs/stats";
  const long long target = StatIn(after, "cil_items") > 0 ? seq : seq - 1;
  // Pushed one interval after the first change, nobody forcing, and the
  // commit record on disk; allow for a loaded machine.
  std::string now = after;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (StatIn(now, "cil_committed_seq") < target && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    now = ReadFile(Root() + "/.walfs/stats");
  }
  ASSERT_GE(StatIn(now, "cil_committed_seq"), target) << "not on disk within 20 s of commit=1:\n" << now;
  EXPECT_GT(StatIn(now, "cil_timed_pushes"), pushes) << "written by something else than the timed push";
  KillDaemon();
  ASSERT_NO_FATAL_FAILURE(MountAgain());
  EXPECT_EQ(ReadFile(Path("unsynced")), data);
  struct stat st {};
  EXPECT_SYS(stat(Path("dir").c_str(), &st));
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  ASSERT_NO_FATAL_FAILURE(Remount());  // fsck -n clean, and back
}

TEST_F(CommitInterval, AnIntervalThatIsNotZeroToADayInSecondsIsRefusedBeforeMounting) {
  const std::string walfs = BinDir() + "/walfs";
  char dir[] = "/tmp/walfs-commit-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  for (const char* bad : {"commit=86401", "commit=-1", "commit=5s", "commit=", "commit=4294967326"}) {
    const ToolRun r = RunTool(walfs + " " + ImagePath() + " " + dir + " -f -o " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.out;  // a usage error
    EXPECT_NE(r.out.find("0 to 86400 seconds"), std::string::npos) << bad << ": " << r.out;
  }
  rmdir(dir);
}

}  // namespace
}  // namespace walfs::testing
