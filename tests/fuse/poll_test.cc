// poll(2) and the daemon.  The kernel's FUSE client asks the daemon
// (FUSE_POLL) whenever a walfs file is polled, and io_uring polls a file
// before every read or write it tries without blocking (Linux 6.x: a file
// without FMODE_NOWAIT is pollable, so io_uring asks whether it is ready).
// Answering those requests cost every io_uring I/O a synchronous round trip.
//  - default: the daemon refuses the first FUSE_POLL with ENOSYS, the kernel
//    never asks again, and poll reports every file readable at once;
//  - `-o trace_poll`: poll on .walfs/trace_pipe sleeps until events arrive,
//    and every io_uring I/O pays the round trip.
// `fuse_polls` in .walfs/stats counts the requests the daemon received.
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace poll_test {  // this file's own names (unity builds share one TU)
namespace {

constexpr int kReads = 64;
constexpr std::size_t kBlock = 4096;

// Reads the first kReads blocks of `path` through io_uring (O_DIRECT), one
// at a time.  "" on success, else what failed; `skip` is set when this
// machine has no io_uring.
std::string IoUringReads(const std::string& path, bool* skip) {
  *skip = false;
  io_uring ring;
  if (const int e = io_uring_queue_init(8, &ring, 0); e < 0) {
    *skip = true;
    return std::string("io_uring_queue_init: ") + strerrorname_np(-e);
  }
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECT);
  if (fd < 0) {
    io_uring_queue_exit(&ring);
    return std::string("open: ") + strerrorname_np(errno);
  }
  void* raw = nullptr;
  if (posix_memalign(&raw, kBlock, kBlock) != 0) std::abort();
  std::unique_ptr<void, decltype(&std::free)> buf(raw, &std::free);
  std::string error;
  for (int i = 0; i < kReads && error.empty(); ++i) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    io_uring_prep_read(sqe, fd, buf.get(), kBlock, static_cast<std::uint64_t>(i) * kBlock);
    io_uring_submit(&ring);
    io_uring_cqe* cqe = nullptr;
    if (const int e = io_uring_wait_cqe(&ring, &cqe); e < 0) {
      error = std::string("io_uring_wait_cqe: ") + strerrorname_np(-e);
      break;
    }
    if (cqe->res != static_cast<int>(kBlock))
      error = "read " + std::to_string(i) + " returned " + std::to_string(cqe->res);
    io_uring_cqe_seen(&ring, cqe);
  }
  close(fd);
  io_uring_queue_exit(&ring);
  return error;
}

class PollFixture : public MountedFs {
 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
    ctl_ = Root() + "/.walfs";
  }
  void Put(const std::string& rel, const std::string& value) { PutControl(Root(), rel, value); }
  // A file of kReads blocks to read back.
  std::string DataFile() {
    const std::string p = Path("data");
    WriteFile(p, std::string(kReads * kBlock, 'd'));
    return p;
  }
  std::string ctl_;
};

class DefaultPoll : public PollFixture {
 public:
  static void SetUpTestSuite() { MountSuite({.image_size = "256m", .options = {}}); }
};

class TracePoll : public PollFixture {
 public:
  static void SetUpTestSuite() { MountSuite({.image_size = "256m", .options = {"trace_poll"}}); }
};

TEST_F(DefaultPoll, IoUringReadsAskTheDaemonToPollAtMostOnceAMount) {
  const std::string file = DataFile();
  bool skip = false;
  const std::string error = IoUringReads(file, &skip);
  if (skip) GTEST_SKIP() << error;
  ASSERT_EQ(error, "");
  const long long polls = StatValue(Root(), "fuse_polls");
  ASSERT_GE(polls, 0) << "no fuse_polls line in .walfs/stats";
  EXPECT_LE(polls, 1) << "the kernel should stop asking after the first ENOSYS";
}

TEST_F(DefaultPoll, PollOnTracePipeReportsItReadableAtOnce) {
  const int fd = open((ctl_ + "/trace_pipe").c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_SYS(fd);
  char buf[65536];
  while (read(fd, buf, sizeof buf) > 0) {
  }
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 5000), 1);
  EXPECT_TRUE(p.revents & POLLIN);
  EXPECT_EQ(read(fd, buf, sizeof buf), -1) << "nothing to read: the report is the kernel's default";
  EXPECT_EQ(errno, EAGAIN) << strerrorname_np(errno);
  close(fd);
  const long long polls = StatValue(Root(), "fuse_polls");
  ASSERT_GE(polls, 0) << "no fuse_polls line in .walfs/stats";
  EXPECT_LE(polls, 1);
}

TEST_F(TracePoll, PollOnTracePipeWaitsForEventsThenReportsThemReadable) {
  Put("tracing_on", "1");
  Put("events/fs/enable", "1");
  const int fd = open((ctl_ + "/trace_pipe").c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_SYS(fd);
  // Drain what is there until a poll times out: nothing to read, poll
  // waits.  (The kernel's own late requests -- forgets, releases of the
  // previous test's files -- may add a few events first.)
  char buf[65536];
  pollfd p{fd, POLLIN, 0};
  bool quiet = false;
  for (int round = 0; round < 20 && !quiet; ++round) {
    while (read(fd, buf, sizeof buf) > 0) {
    }
    EXPECT_EQ(errno, EAGAIN) << strerrorname_np(errno);
    quiet = poll(&p, 1, 200) == 0;
  }
  ASSERT_TRUE(quiet) << "trace_pipe never stopped being readable";
  // An operation on the filesystem while poll waits wakes it.
  std::thread later([&] {
    usleep(300 * 1000);
    WriteFile(Path("poked"), "x");
  });
  const auto start = std::chrono::steady_clock::now();
  const int n = poll(&p, 1, 5000);
  const auto waited = std::chrono::steady_clock::now() - start;
  later.join();
  EXPECT_EQ(n, 1);
  EXPECT_TRUE(p.revents & POLLIN);
  EXPECT_LT(waited, std::chrono::seconds(3));
  EXPECT_GT(read(fd, buf, sizeof buf), 0);
  close(fd);
  Put("events/fs/enable", "0");
}

// The cost trace_poll documents: where the kernel's io_uring polls a file
// before trying it without blocking, every read is a FUSE_POLL request too.
TEST_F(TracePoll, EveryIoUringReadIsAlsoAPollRequest) {
  const std::string file = DataFile();
  const long long before = StatValue(Root(), "fuse_polls");
  ASSERT_GE(before, 0) << "no fuse_polls line in .walfs/stats";
  bool skip = false;
  const std::string error = IoUringReads(file, &skip);
  if (skip) GTEST_SKIP() << error;
  ASSERT_EQ(error, "");
  const long long polls = StatValue(Root(), "fuse_polls") - before;
  if (polls == 0) GTEST_SKIP() << "this kernel's io_uring does not poll FUSE files before I/O";
  EXPECT_GE(polls, kReads);
}

}  // namespace
}  // namespace poll_test
}  // namespace walfs::testing
