// `-o lazy_commit_ms=N` (default 5): a killed daemon is not a power cut.
// Every change acknowledged more than the delay before a SIGKILL of the
// daemon is in the image at the next mount, fsynced or not: the CIL writes
// it to the image without a device flush (the image file's page cache
// outlives the daemon).  commit=86400 keeps the timed (durable) push out of
// the way, so only the lazy push can have written these changes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

class LazyCommit : public MountedFs {
 public:
  static void SetUpTestSuite() { MountSuite({.image_size = "256m", .options = {"commit=86400"}}); }

 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
  }

  // A little more than the delay, then until the CIL is empty and every lazy
  // push (every push: cil_written_seq) has been written out (up to 5 s, for a loaded machine).  Returns
  // the stats then.
  std::string WaitWrittenOut() {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    std::string s = ReadFile(Root() + "/.walfs/stats");
    while (!(StatIn(s, "cil_items") == 0 && StatIn(s, "cil_lazy_pushes") > 0 &&
             StatIn(s, "cil_lazy_written") == StatIn(s, "cil_lazy_pushes") &&
             StatIn(s, "cil_written_seq") + 1 == StatIn(s, "cil_seq")) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      s = ReadFile(Root() + "/.walfs/stats");
    }
    return s;
  }
};

TEST_F(LazyCommit, EveryChangeAcknowledgedMoreThanTheDelayBeforeAKillSurvivesIt) {
  const long long timed = StatValue(Root(), "cil_timed_pushes");
  const long long forces = StatValue(Root(), "cil_forces");
  ASSERT_GE(StatValue(Root(), "cil_lazy_pushes"), 0) << "no cil_lazy_pushes line in .walfs/stats";
  const std::string data(100000, 'k');
  ASSERT_SYS(mkdir(Path("d").c_str(), 0755));
  WriteFile(Path("d/f"), data);
  WriteFile(Path("old"), "renamed");
  ASSERT_SYS(rename(Path("old").c_str(), Path("d/new").c_str()));
  WriteFile(Path("gone"), "unlinked");
  ASSERT_SYS(unlink(Path("gone").c_str()));
  ASSERT_SYS(symlink("d/f", Path("link").c_str()));
  ASSERT_SYS(chmod(Path("d/f").c_str(), 0600));
  const std::string s = WaitWrittenOut();
  ASSERT_EQ(StatIn(s, "cil_items"), 0) << "still in the CIL 5 s later:\n" << s;
  ASSERT_EQ(StatIn(s, "cil_lazy_written"), StatIn(s, "cil_lazy_pushes")) << s;
  EXPECT_EQ(StatIn(s, "cil_timed_pushes"), timed) << "written by the timed push, not the lazy one";
  EXPECT_EQ(StatIn(s, "cil_forces"), forces) << "something forced the log";
  KillDaemon();
  ASSERT_NO_FATAL_FAILURE(MountAgain());
  EXPECT_EQ(ReadFile(Path("d/f")), data);
  struct stat st {};
  ASSERT_SYS(stat(Path("d/f").c_str(), &st));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(ReadFile(Path("d/new")), "renamed");
  EXPECT_EQ(lstat(Path("old").c_str(), &st), -1);
  EXPECT_EQ(lstat(Path("gone").c_str(), &st), -1) << "the unlink was lost";
  char target[64] = {};
  EXPECT_EQ(readlink(Path("link").c_str(), target, sizeof target - 1), 3);
  EXPECT_STREQ(target, "d/f");
  ASSERT_NO_FATAL_FAILURE(Remount());  // fsck -n clean, and back
}

// SQLite in rollback-journal mode, synchronous=FULL: the journal is written
// and fsynced, the database written and fsynced, and the commit is the
// journal's unlink, which nobody fsyncs.  Killed after it, the commit stays.
TEST_F(LazyCommit, AnUnlinkAfterAnFsyncSurvivesAKillOfTheDaemon) {
  const auto write_sync = [](const std::string& path, const std::string& bytes) {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_SYS(fd);
    ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    ASSERT_SYS(fsync(fd));
    ASSERT_SYS(close(fd));
  };
  ASSERT_NO_FATAL_FAILURE(write_sync(Path("db-journal"), std::string(4096, 'j')));
  ASSERT_NO_FATAL_FAILURE(write_sync(Path("db"), std::string(8192, 'd')));
  ASSERT_SYS(unlink(Path("db-journal").c_str()));
  const std::string s = WaitWrittenOut();
  ASSERT_EQ(StatIn(s, "cil_items"), 0) << "still in the CIL 5 s later:\n" << s;
  KillDaemon();
  ASSERT_NO_FATAL_FAILURE(MountAgain());
  struct stat st {};
  EXPECT_EQ(lstat(Path("db-journal").c_str(), &st), -1) << "the journal's unlink (the commit) was lost";
  EXPECT_EQ(ReadFile(Path("db")), std::string(8192, 'd'));
  ASSERT_NO_FATAL_FAILURE(Remount());
}

TEST_F(LazyCommit, ADelayOutsideZeroToASecondIsRefusedBeforeMounting) {
  const std::string walfs = BinDir() + "/walfs";
  char dir[] = "/tmp/walfs-lazy-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  for (const char* bad : {"lazy_commit_ms=1001", "lazy_commit_ms=-1", "lazy_commit_ms=5ms", "lazy_commit_ms="}) {
    const ToolRun r = RunTool(walfs + " " + ImagePath() + " " + dir + " -f -o " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.out;  // a usage error
    EXPECT_NE(r.out.find("0 to 1000 milliseconds"), std::string::npos) << bad << ": " << r.out;
  }
  rmdir(dir);
}

}  // namespace
}  // namespace walfs::testing
