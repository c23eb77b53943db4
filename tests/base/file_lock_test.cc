// The image lock (base/file_lock.h): one holder at a time, named when it
// refuses; a holder that exits frees it; FileDevice takes it on request.
#include "base/file_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
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
  // A child that takes the lock and, once it holds it, returns here; with
  // `closing` it names itself as a daemon whose mount is gone does
  // (MarkImageClosing).  It exits after `hold_ms`, or never if negative.
  pid_t StartHolder(bool closing = false, int hold_ms = -1) const {
    int ready[2];
    if (pipe(ready) != 0) return -1;
    const pid_t child = fork();
    if (child == 0) {
      const int fd = OpenIt();
      if (fd < 0 || !LockImage(fd, path_).ok()) _exit(1);
      if (closing) MarkImageClosing();
      (void)!write(ready[1], "x", 1);
      if (hold_ms < 0) pause();
      usleep(static_cast<useconds_t>(hold_ms) * 1000);
      _exit(0);
    }
    char c;
    const bool held = child > 0 && read(ready[0], &c, 1) == 1;
    close(ready[0]);
    close(ready[1]);
    return held ? child : -1;
  }
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
  const pid_t child = StartHolder();
  ASSERT_GT(child, 0);
  const int fd = OpenIt();
  EXPECT_EQ(LockImage(fd, path_).ToErrno(), EBUSY);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(LockImage(fd, path_).ok());
  close(fd);
}

TEST_F(FileLockTest, ADaemonWhoseMountIsGoneIsWaitedForAndSaidSo) {
  const pid_t child = StartHolder(/*closing=*/true, /*hold_ms=*/300);
  ASSERT_GT(child, 0);
  char* said = nullptr;
  size_t said_len = 0;
  std::FILE* notices = open_memstream(&said, &said_len);
  const int fd = OpenIt();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(LockImage(fd, path_, {.notices = notices}).ok()) << "the closing holder exits within the wait";
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
  std::fclose(notices);
  const std::string text(said, said_len);
  std::free(said);
  EXPECT_NE(text.find("waiting for pid " + std::to_string(child)), std::string::npos) << text;
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "said once: " << text;
  close(fd);
  waitpid(child, nullptr, 0);
}

TEST_F(FileLockTest, AClosingDaemonThatOutstaysTheWaitIsReportedNotWaitedForever) {
  const pid_t child = StartHolder(/*closing=*/true);
  ASSERT_GT(child, 0);
  const int fd = OpenIt();
  const Status s = LockImage(fd, path_, {.closing_holder_ms = 200, .live_holder_ms = 100, .notices = nullptr});
  EXPECT_EQ(s.ToErrno(), EBUSY);
  EXPECT_NE(s.message().find("still held by pid " + std::to_string(child)), std::string::npos) << s.message();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(fd);
}

TEST_F(FileLockTest, ALiveHolderThatIsNotClosingIsRefusedAfterAShortGrace) {
  const pid_t child = StartHolder();
  ASSERT_GT(child, 0);
  const int fd = OpenIt();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(LockImage(fd, path_, {.live_holder_ms = 100, .notices = nullptr}).ToErrno(), EBUSY);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(fd);
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
