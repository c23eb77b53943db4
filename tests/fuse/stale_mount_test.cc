// A daemon killed with SIGKILL: its mount is left dead ("Transport endpoint
// is not connected"), its image lock goes with it, and the next `walfs` on
// the same mountpoint says so, detaches the dead mount and mounts; fsynced
// data is there after recovery.  While a daemon runs, a second mount, fsck
// and mkfs of its image are refused (tools/stale_mount.h, base/file_lock.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

class StaleMount : public MountedFs {
 protected:
  static void SetUpTestSuite() { MountSuite({.image_size = "256m", .options = {}}); }
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
  }
  static std::string Bin(const std::string& tool) {
    const char* env = std::getenv("WALFS_BIN_DIR");
    return (env != nullptr && *env != '\0' ? std::string(env) : std::string(WALFS_BIN_DIR)) + "/" + tool;
  }
  // Writes and fsyncs a file and its directory.
  void WriteDurably(const std::string& path, const std::string& data) {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_SYS(fd);
    ASSERT_EQ(write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
    ASSERT_SYS(fsync(fd));
    ASSERT_SYS(close(fd));
    const int dfd = open(Path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_SYS(dfd);
    ASSERT_SYS(fsync(dfd));
    ASSERT_SYS(close(dfd));
  }
};

// What the kernel fails a request with once the daemon is dead.
bool DeadConnectionErrno(int err) { return err == ENOTCONN || err == ECONNABORTED || err == ECANCELED; }

TEST_F(StaleMount, KilledDaemonLeavesADeadMountThatTheNextMountReportsAndDetaches) {
  ASSERT_NO_FATAL_FAILURE(WriteDurably(Path("kept"), "fsynced before the kill\n"));
  KillDaemon();
  struct statfs sf {};  // stat may still be answered from the attribute cache
  // Over /dev/fuse the kernel fails it with ENOTCONN; over the io_uring
  // rings a request that reached a queue as the daemon died is ended by the
  // abort with ECONNABORTED, or with ECANCELED when it was being handed to
  // an entry whose lane was already dead (fs/fuse/dev_uring.c,
  // IO_URING_F_TASK_DEAD); the later ones get ENOTCONN.
  const int rc = statfs(Root().c_str(), &sf);
  const int err = errno;
  EXPECT_EQ(rc, -1);
  EXPECT_TRUE(DeadConnectionErrno(err)) << std::strerror(err);

  ASSERT_NO_FATAL_FAILURE(MountAgain());
  const std::string said = DaemonOutput();
  EXPECT_NE(said.find("Transport endpoint is not connected"), std::string::npos) << said;
  EXPECT_NE(said.find("detaching it"), std::string::npos) << said;
  EXPECT_NE(said.find("log recovered"), std::string::npos) << said;
  EXPECT_EQ(ReadFile(Path("kept")), "fsynced before the kill\n");
  ASSERT_NO_FATAL_FAILURE(Remount());  // a clean unmount, fsck -n clean, and back
  EXPECT_EQ(ReadFile(Path("kept")), "fsynced before the kill\n");
}

TEST_F(StaleMount, KilledDaemonsImageLockDoesNotBlockFsck) {
  KillDaemon();
  // The log is dirty, so -n may find problems; the image must not be "in use".
  ToolRun r = RunTool(Bin("fsck.walfs") + " -n " + ImagePath());
  EXPECT_EQ(r.out.find("is in use by pid"), std::string::npos) << r.out;
  EXPECT_NE(r.exit_code, 8) << r.out;
  ASSERT_NO_FATAL_FAILURE(MountAgain());
}

TEST_F(StaleMount, SecondMountOfAMountedImageIsRefusedWithTheHoldersPid) {
  char dir[] = "/tmp/walfs-second-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  ToolRun r = RunTool(Bin("walfs") + " " + ImagePath() + " " + dir + " -f");
  rmdir(dir);
  EXPECT_EQ(r.exit_code, 32) << r.out;  // mount(8)'s "mount failure"
  EXPECT_NE(r.out.find("is in use by pid"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Unmount it first"), std::string::npos) << r.out;
}

TEST_F(StaleMount, FsckAndMkfsRefuseAMountedImage) {
  ToolRun fsck = RunTool(Bin("fsck.walfs") + " -n " + ImagePath());
  EXPECT_EQ(fsck.exit_code, 8) << fsck.out;
  EXPECT_NE(fsck.out.find("is in use by pid"), std::string::npos) << fsck.out;
  ToolRun mkfs = RunTool(Bin("mkfs.walfs") + " -f " + ImagePath());
  EXPECT_EQ(mkfs.exit_code, 1) << mkfs.out;
  EXPECT_NE(mkfs.out.find("is in use by pid"), std::string::npos) << mkfs.out;
  // Still mounted and intact.
  WriteFile(Path("after"), "x");
  EXPECT_EQ(ReadFile(Path("after")), "x");
}

// `umount m && fsck.walfs img`: umount returns before the daemon has written
// everything back; fsck waits for it (base/file_lock.h) instead of saying
// the image is in use.
TEST_F(StaleMount, FsckRightAfterAnUnmountWaitsForTheDaemonInsteadOfRefusing) {
  for (int i = 0; i < 1000; ++i) WriteFile(Path("f" + std::to_string(i)), "unsynced");
  ToolRun um = RunTool("fusermount3 -u " + Root());
  ASSERT_EQ(um.exit_code, 0) << um.out;
  ToolRun fsck = RunTool(Bin("fsck.walfs") + " -n " + ImagePath());
  EXPECT_EQ(fsck.out.find("is in use"), std::string::npos) << fsck.out;
  EXPECT_EQ(fsck.exit_code, 0) << fsck.out;
  EXPECT_EQ(WaitForDaemonExit(60), "");
  ASSERT_NO_FATAL_FAILURE(MountAgain());
  EXPECT_EQ(ReadFile(Path("f999")), "unsynced");
}

// A killed daemon cannot take writes, so a writer must hear of it at once,
// also one writing through the page cache into pages the kernel already
// holds: on this kernel (6.18) the first write(2) after the kill fails with
// ENOTCONN.  (A report of cached writes succeeding for 30-73 s after a kill
// was not reproduced here, with the daemon in the foreground or detached;
// this spec keeps what was seen.)
TEST_F(StaleMount, ACachedWriterHearsOfAKilledDaemonAtOnce) {
  WriteFile(Path("wal"), "");
  const int fd = open(Path("wal").c_str(), O_WRONLY);  // an existing file, as SQLite's WAL
  ASSERT_SYS(fd);
  const std::string line(100, 'x');
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(write(fd, line.data(), line.size()), 100);
    usleep(1000);
  }
  KillDaemon();
  const auto killed = std::chrono::steady_clock::now();
  int err = 0;
  long accepted = 0;
  while (std::chrono::steady_clock::now() - killed < std::chrono::seconds(5)) {
    if (write(fd, line.data(), line.size()) < 0) {
      err = errno;
      break;
    }
    ++accepted;
    usleep(1000);  // a writer that commits every millisecond, as SQLite might
  }
  const double after_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - killed).count();
  close(fd);
  EXPECT_TRUE(DeadConnectionErrno(err))  // the rings' errnos: above
      << "writes still succeeded " << after_ms << " ms after the kill (errno " << err << ")";
  EXPECT_LT(after_ms, 500) << accepted << " writes were accepted after the kill";
  std::printf("the first write to fail did so %.1f ms after the kill; %ld were accepted before it\n", after_ms,
              accepted);
  ASSERT_NO_FATAL_FAILURE(MountAgain());
}

}  // namespace
}  // namespace walfs::testing
