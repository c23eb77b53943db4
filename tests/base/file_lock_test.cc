// The image lock (base/file_lock.h): one holder at a time, named when it
// refuses; a holder that exits frees it; FileDevice takes it on request.
#include "base/file_lock.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "base/block_device_file.h"

namespace walfs {
namespace {

class FileLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/walfs-lock-XXXXXX";
    const int fd = mkstemp(templ);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, 1 << 20), 0);
    close(fd);
    path_ = templ;
  }
  void TearDown() override { unlink(path_.c_str()); }
  int OpenIt() const { return open(path_.c_str(), O_RDWR | O_CLOEXEC); }
  std::string path_;
};

TEST_F(FileLockTest, SecondHolderIsRefusedWithEbusyNamingTheFirst) {
  const int a = OpenIt(), b = OpenIt();
  ASSERT_TRUE(LockImage(a, path_).ok());
  EXPECT_EQ(FlockHolder(b), getpid());
  Status s = LockImage(b, path_);
  EXPECT_EQ(s.ToErrno(), EBUSY);
  EXPECT_NE(s.message().find("in use by pid " + std::to_string(getpid())), std::string::npos)
      << s.message();
  close(a);
  EXPECT_TRUE(LockImage(b, path_).ok()) << "closing the holder's descriptor frees the lock";
  close(b);
}

TEST_F(FileLockTest, HolderThatIsKilledFreesTheLock) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int fd = OpenIt();
    if (fd < 0 || !LockImage(fd, path_).ok()) _exit(1);
    (void)!write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  const int fd = OpenIt();
  EXPECT_EQ(LockImage(fd, path_).ToErrno(), EBUSY);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(LockImage(fd, path_).ok());
  close(fd);
  close(ready[0]);
  close(ready[1]);
}

TEST_F(FileLockTest, FileDeviceTakesTheLockOnlyWhenAskedTo) {
  auto first = FileDevice::Open(path_, {.engine = IoEngine::kSync, .exclusive = true});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = FileDevice::Open(path_, {.engine = IoEngine::kSync, .exclusive = true});
  EXPECT_EQ(second.status().ToErrno(), EBUSY);
  auto shared = FileDevice::Open(path_, {.engine = IoEngine::kSync});
  EXPECT_TRUE(shared.ok()) << "without `exclusive` the lock is not looked at";
  first->reset();
  EXPECT_TRUE(FileDevice::Open(path_, {.engine = IoEngine::kSync, .exclusive = true}).ok());
}

}  // namespace
}  // namespace walfs
