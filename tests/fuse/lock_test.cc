// Locks: flock between two open file descriptions, open-file-description
// byte-range locks within one process, and classic POSIX locks against a
// child process.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

class Lock : public MountedFs {
 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WriteFile(Path("f"), std::string(1000, 'l'));
    a_ = open(Path("f").c_str(), O_RDWR);
    b_ = open(Path("f").c_str(), O_RDWR);
    ASSERT_SYS(a_);
    ASSERT_SYS(b_);
  }
  void TearDown() override {
    if (a_ >= 0) close(a_);
    if (b_ >= 0) close(b_);
    MountedFs::TearDown();
  }
  static int OfdLock(int fd, short type, off_t start, off_t len, int cmd = F_OFD_SETLK) {
    struct flock fl {};
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = start;
    fl.l_len = len;
    return fcntl(fd, cmd, &fl);
  }
  int a_ = -1, b_ = -1;
};

TEST_F(Lock, FlockExclusiveExcludesAnotherOpenFile) {
  ASSERT_SYS(flock(a_, LOCK_EX | LOCK_NB));
  EXPECT_ERRNO(EWOULDBLOCK, flock(b_, LOCK_EX | LOCK_NB));
  EXPECT_ERRNO(EWOULDBLOCK, flock(b_, LOCK_SH | LOCK_NB));
  ASSERT_SYS(flock(a_, LOCK_UN));
  EXPECT_SYS(flock(b_, LOCK_EX | LOCK_NB));
  EXPECT_SYS(flock(b_, LOCK_UN));
}

TEST_F(Lock, FlockSharedLocksCoexist) {
  ASSERT_SYS(flock(a_, LOCK_SH | LOCK_NB));
  EXPECT_SYS(flock(b_, LOCK_SH | LOCK_NB));
  const int c = open(Path("f").c_str(), O_RDONLY);
  ASSERT_SYS(c);
  EXPECT_ERRNO(EWOULDBLOCK, flock(c, LOCK_EX | LOCK_NB));
  close(c);
  // Closing the last fd of a description drops its lock.
  close(a_);
  a_ = -1;
  EXPECT_SYS(flock(b_, LOCK_EX | LOCK_NB)) << "upgrade once the other shared lock is gone";
}

TEST_F(Lock, OfdWriteLocksConflictOnOverlappingRangesOnly) {
  ASSERT_SYS(OfdLock(a_, F_WRLCK, 0, 100));
  EXPECT_ERRNO(EAGAIN, OfdLock(b_, F_WRLCK, 50, 100));
  EXPECT_ERRNO(EAGAIN, OfdLock(b_, F_RDLCK, 99, 1));
  EXPECT_SYS(OfdLock(b_, F_WRLCK, 100, 100)) << "adjacent range";
  struct flock probe {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  probe.l_start = 0;
  probe.l_len = 10;
  ASSERT_SYS(fcntl(b_, F_OFD_GETLK, &probe));
  EXPECT_EQ(probe.l_type, F_WRLCK);
  EXPECT_EQ(probe.l_start, 0);
  EXPECT_EQ(probe.l_len, 100);
  EXPECT_EQ(probe.l_pid, -1) << "OFD locks have no owning pid";
  ASSERT_SYS(OfdLock(a_, F_UNLCK, 0, 100));
  EXPECT_SYS(OfdLock(b_, F_WRLCK, 0, 100));
}

TEST_F(Lock, OfdReadLocksShare) {
  ASSERT_SYS(OfdLock(a_, F_RDLCK, 0, 0));  // the whole file
  EXPECT_SYS(OfdLock(b_, F_RDLCK, 10, 10));
  EXPECT_ERRNO(EAGAIN, OfdLock(b_, F_WRLCK, 500, 1));
}

TEST_F(Lock, PosixLocksOfAnotherProcessConflict) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 10;
  ASSERT_SYS(fcntl(a_, F_SETLK, &fl));
  const pid_t child = fork();
  ASSERT_SYS(child);
  if (child == 0) {
    const int fd = open(Path("f").c_str(), O_RDWR);
    struct flock c {};
    c.l_type = F_WRLCK;
    c.l_whence = SEEK_SET;
    c.l_start = 5;
    c.l_len = 1;
    const bool refused = fcntl(fd, F_SETLK, &c) == -1 && (errno == EAGAIN || errno == EACCES);
    c.l_start = 10;
    const bool beside = fcntl(fd, F_SETLK, &c) == 0;
    struct flock probe {};
    probe.l_type = F_WRLCK;
    probe.l_whence = SEEK_SET;
    probe.l_start = 0;
    probe.l_len = 1;
    const bool owner = fcntl(fd, F_GETLK, &probe) == 0 && probe.l_pid == getppid();
    _exit((refused ? 0 : 1) | (beside ? 0 : 2) | (owner ? 0 : 4));
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  const int r = WEXITSTATUS(status);
  EXPECT_EQ(r & 1, 0) << "the child's overlapping lock was not refused with EAGAIN/EACCES";
  EXPECT_EQ(r & 2, 0) << "the child could not lock a free range";
  EXPECT_EQ(r & 4, 0) << "F_GETLK did not name the parent as the holder";
}

}  // namespace
}  // namespace walfs::testing
