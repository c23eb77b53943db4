// FUSE over io_uring (mount/uring_transport.h, `-o transport=`,
// `-o uring_lanes=`): when the kernel offers the rings (the fuse module's
// enable_uring) requests travel them, one queue per CPU, and a request
// that waits holds one lane of its queue, not the queue; when it does
// not, the mount serves through /dev/fuse and says so in one line.  The
// whole FUSE suite also runs over the rings in CI (WALFS_FUSE_TRANSPORT=uring
// in scripts/test.sh); these are the specs of the transport itself.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

bool KernelOffersRings() { return Slurp("/sys/module/fuse/parameters/enable_uring").starts_with("Y"); }

std::string StatsText(const std::string& root) { return Slurp(root + "/.walfs/stats"); }

// Best effort: spreads callers over the CPUs, so over the queues.
void PinToCpu(int cpu) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(cpu, &cpus);
  pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus);
}

void PinToCpu0() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(0, &cpus);
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus), 0);
}

class UringTransport : public MountedFs {
 public:
  static void SetUpTestSuite() { MountSuite({.options = {"transport=uring", "uring_lanes=2"}}); }
};

TEST_F(UringTransport, RequestsTravelTheRingsWhenTheKernelOffersThemAndTheMountSaysWhichItUses) {
  WALFS_REQUIRE_WALFS();
  const std::string messages = Slurp(Root() + "/.walfs/messages");
  if (!KernelOffersRings()) {
    EXPECT_NE(StatsText(Root()).find("fuse_transport dev\n"), std::string::npos);
    EXPECT_NE(messages.find("serving FUSE requests through /dev/fuse: the kernel does not offer FUSE over io_uring"),
              std::string::npos)
        << messages;
    GTEST_SKIP() << "the fuse module's enable_uring is off here: the fallback was checked, the rings were not";
  }
  EXPECT_NE(messages.find("serving FUSE requests through io_uring"), std::string::npos) << messages;
  const long long before = StatValue(Root(), "fuse_uring_requests");
  for (int i = 0; i < 50; ++i) {
    const std::string name = Path("f" + std::to_string(i));
    WriteFile(name, std::string(5000 + i, static_cast<char>('a' + i % 26)));
    EXPECT_EQ(ReadFile(name), std::string(5000 + i, static_cast<char>('a' + i % 26)));
    ASSERT_SYS(rename(name.c_str(), (name + ".r").c_str()));
    if (i % 2 == 0) {
      ASSERT_SYS(unlink((name + ".r").c_str()));
    }
  }
  const std::string stats = StatsText(Root());
  EXPECT_NE(stats.find("fuse_transport uring\n"), std::string::npos) << stats;
  EXPECT_GE(StatValue(Root(), "fuse_uring_requests") - before, 150) << stats;
  EXPECT_EQ(StatValue(Root(), "fuse_uring_lanes_per_queue"), 2);
  EXPECT_EQ(StatValue(Root(), "fuse_uring_errors"), 0) << stats;
  for (long long q = 0; q < StatValue(Root(), "fuse_uring_queues"); ++q)
    EXPECT_NE(stats.find("fuse_uring_q" + std::to_string(q) + "_requests "), std::string::npos) << stats;
}

// A trace_pipe reader with no events to read waits in its handler for as
// long as it reads: one lane of CPU 0's queue is held.  Everything else CPU
// 0's callers ask must still be served, by the queue's other lane, while it
// waits.  (With -o uring_lanes=1 the creates below wait for the reader's
// timeout: the queue is stalled.)
TEST_F(UringTransport, AWaitingRequestHoldsItsLaneNotItsQueue) {
  WALFS_REQUIRE_WALFS();
  if (!KernelOffersRings()) GTEST_SKIP() << "the fuse module's enable_uring is off here";
  WriteFile(Root() + "/.walfs/events/enable", "0");
  constexpr int kReaderSeconds = 4;
  const auto start = std::chrono::steady_clock::now();
  std::thread reader([this] {
    const ToolRun r = RunTool("taskset -c 0 timeout " + std::to_string(kReaderSeconds) + " cat " + Root() +
                              "/.walfs/trace_pipe");
    EXPECT_EQ(r.exit_code, 124) << "the reader should still have been waiting when timeout ended it";
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the reader is in its read
  double served_s = 0;
  std::thread callers([&] {
    PinToCpu0();
    for (int i = 0; i < 100; ++i) {
      const std::string name = Path("w" + std::to_string(i));
      WriteFile(name, "x");
      struct stat st {};
      EXPECT_SYS(stat(name.c_str(), &st));
    }
    served_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  callers.join();
  reader.join();
  EXPECT_LT(served_s, kReaderSeconds - 1) << "CPU 0's requests waited for the reader";
  // The lane the reader held is free again: its queue serves as before.
  WriteFile(Path("after"), "y");
  EXPECT_EQ(ReadFile(Path("after")), "y");
}

// Callers on every CPU at once, each writing, fsyncing (a log force: the
// lane waits), reading back and renaming files of its own: every reply
// reaches the caller that asked, across all the queues' lanes.  TSan runs
// this spec over the rings in CI (scripts/test.sh, job tsan).
TEST_F(UringTransport, CallersOnEveryCpuAtOnceEachGetTheirOwnReplies) {
  WALFS_REQUIRE_WALFS();
  if (!KernelOffersRings()) GTEST_SKIP() << "the fuse module's enable_uring is off here";
  const long long queues = StatValue(Root(), "fuse_uring_queues");
  const long long before = StatValue(Root(), "fuse_uring_requests");
  const int cpus = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  const int callers = 3 * cpus;  // more than the lanes of any queue (2 each)
  constexpr int kFiles = 20;
  std::vector<std::thread> threads;
  for (int t = 0; t < callers; ++t) {
    threads.emplace_back([&, t] {
      PinToCpu(t % cpus);
      for (int i = 0; i < kFiles; ++i) {
        const std::string name = Path("c" + std::to_string(t) + "_" + std::to_string(i));
        const std::string body(1000 + 97 * t + i, static_cast<char>('a' + (t + i) % 26));
        const int fd = open(name.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
        ASSERT_GE(fd, 0) << name << ": " << strerror(errno);
        ASSERT_EQ(write(fd, body.data(), body.size()), static_cast<ssize_t>(body.size()));
        if (i % 4 == 0) {
          EXPECT_SYS(fsync(fd));
        }
        EXPECT_SYS(close(fd));
        EXPECT_EQ(ReadFile(name), body) << name;
        EXPECT_SYS(rename(name.c_str(), (name + ".done").c_str()));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < callers; ++t)
    for (int i = 0; i < kFiles; ++i) {
      struct stat st {};
      const std::string name = Path("c" + std::to_string(t) + "_" + std::to_string(i) + ".done");
      ASSERT_SYS(stat(name.c_str(), &st));
      EXPECT_EQ(st.st_size, 1000 + 97 * t + i) << name;
    }
  const std::string stats = StatsText(Root());
  EXPECT_EQ(StatValue(Root(), "fuse_uring_errors"), 0) << stats;
  EXPECT_GE(StatValue(Root(), "fuse_uring_requests") - before, callers * kFiles * 4LL) << stats;
  // The callers ran on every CPU, so more than one queue carried requests.
  if (queues > 1 && cpus > 1) {
    int used = 0;
    for (long long q = 0; q < queues; ++q)
      used += StatValue(Root(), "fuse_uring_q" + std::to_string(q) + "_requests") > 0;
    EXPECT_GT(used, 1) << stats;
  }
}

// A lazy unmount (umount -l) while callers on every CPU write and fsync
// through the rings: the detached mount keeps serving the files they hold
// open, every caller's calls return, and once the last is closed the
// kernel ends the connection -- it cancels the lanes' entries -- and the
// daemon exits on its own.  What each fsync acknowledged is on the image
// when it is mounted again.
TEST_F(UringTransport, ALazyUnmountWithRequestsInFlightEndsEveryCallerAndTheDaemon) {
  WALFS_REQUIRE_WALFS();
  if (geteuid() != 0) GTEST_SKIP() << "umount -l needs root";
  if (!KernelOffersRings()) GTEST_SKIP() << "the fuse module's enable_uring is off here";
  const int cpus = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  const int callers = 2 * cpus;
  constexpr std::size_t kRecord = 4096;
  std::atomic<bool> stop{false};
  std::atomic<bool> umount_done{false};
  std::atomic<int> after_detach{0};
  std::vector<long> synced(callers, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < callers; ++t) {
    threads.emplace_back([&, t] {
      PinToCpu(t % cpus);
      const std::string name = Path("u" + std::to_string(t));
      const int fd = open(name.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
      ASSERT_GE(fd, 0) << name << ": " << strerror(errno);
      const std::string record(kRecord, static_cast<char>('A' + t));
      bool counted = false;
      while (!stop.load()) {
        if (write(fd, record.data(), kRecord) != static_cast<ssize_t>(kRecord) || fsync(fd) != 0) {
          ADD_FAILURE() << name << ": " << strerror(errno) << " after " << synced[t] << " records";
          break;
        }
        ++synced[t];
        if (!counted && umount_done.load()) {
          counted = true;
          after_detach.fetch_add(1);
        }
      }
      EXPECT_SYS(close(fd));
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_SYS(umount2(Root().c_str(), MNT_DETACH));
  umount_done.store(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop.store(true);
  for (auto& th : threads) th.join();
  EXPECT_EQ(after_detach.load(), callers) << "every caller's files still served after the detach";
  // The session ends once its last user is gone.  Writing the image back
  // after it is given longer: CI once saw a daemon still running 20 s after
  // the detach, on a loaded machine, with no record of where it was.
  EXPECT_EQ(WaitForSessionEnd(10), "") << "walfs must leave its session once its last user is gone";
  EXPECT_EQ(WaitForDaemonExit(60), "") << "walfs must then write the image back and exit";
  MountAgain();  // the suite's teardown unmounts and checks it
  for (int t = 0; t < callers; ++t) {
    const std::string body = ReadFile(Path("u" + std::to_string(t)));
    EXPECT_GE(body.size(), synced[t] * kRecord) << "caller " << t;
    EXPECT_EQ(body.find_first_not_of(static_cast<char>('A' + t)), std::string::npos) << "caller " << t;
  }
}

// A READ's data is read straight into the lane's payload buffer, the one
// the reply goes back in (SessionIo::ReplyBuffer): the rings copy it no
// more than /dev/fuse's writev does.  O_DIRECT reads reach the daemon
// every time: full chunks, one that ends at end of file, one past it.
TEST_F(UringTransport, AFileReadIsReadIntoItsLanesEntryAndArrivesWhole) {
  WALFS_REQUIRE_WALFS();
  if (!KernelOffersRings()) GTEST_SKIP() << "the fuse module's enable_uring is off here";
  constexpr std::size_t kChunk = 128 << 10;
  std::string body(5 * kChunk + 1000, '\0');
  for (std::size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>((i * 131 + i / 4096) & 0xff);
  const std::string name = Path("direct");
  WriteFile(name, body);
  const long long before = StatValue(Root(), "fuse_uring_in_place_replies");
  const int fd = open(name.c_str(), O_RDONLY | O_DIRECT);
  ASSERT_GE(fd, 0) << strerror(errno);
  void* mem = nullptr;
  ASSERT_EQ(posix_memalign(&mem, 4096, kChunk), 0);
  std::unique_ptr<char, decltype(&std::free)> buf(static_cast<char*>(mem), &std::free);
  std::string back;
  for (off_t off = 0;; off += static_cast<off_t>(kChunk)) {
    const ssize_t n = pread(fd, buf.get(), kChunk, off);
    ASSERT_GE(n, 0) << strerror(errno);
    if (n == 0) break;
    back.append(buf.get(), static_cast<std::size_t>(n));
  }
  EXPECT_SYS(close(fd));
  ASSERT_EQ(back.size(), body.size());
  EXPECT_TRUE(back == body) << "the data read back differs";
  const std::string stats = StatsText(Root());
  EXPECT_GE(StatValue(Root(), "fuse_uring_in_place_replies") - before, 6) << stats;
  EXPECT_EQ(StatValue(Root(), "fuse_uring_errors"), 0) << stats;
}

// A commit the kernel refuses (with -o fault_injection, `ring_commit N` in
// .walfs/fault gives the N-th commit from now an id no request has, as a
// corrupted entry would): the kernel checks the id before it touches the
// entry, so the lane commits the reply again and its caller is served.
class UringCommitFault : public MountedFs {
 public:
  static void SetUpTestSuite() {
    MountSuite({.options = {"transport=uring", "uring_lanes=2", "fault_injection"}});
  }
  // write(2) of `command` to .walfs/fault: 0, or the errno.
  int Command(const std::string& command) {
    const int fd = open((Root() + "/.walfs/fault").c_str(), O_WRONLY);
    if (fd < 0) return errno;
    const ssize_t n = write(fd, command.data(), command.size());
    const int err = n < 0 ? errno : 0;
    close(fd);
    return err;
  }
};

TEST_F(UringCommitFault, ARefusedCommitIsCommittedAgainAndItsCallerIsServed) {
  WALFS_REQUIRE_WALFS();
  if (!KernelOffersRings()) {
    EXPECT_EQ(Command("ring_commit 1"), EINVAL) << "over /dev/fuse there is no ring commit to fail";
    GTEST_SKIP() << "the fuse module's enable_uring is off here: the refusal was checked, the rings were not";
  }
  WriteFile(Path("before"), "served");
  const long long failures = StatValue(Root(), "fuse_uring_commit_failures");
  // The write of the command is itself a request: its own reply's commit is
  // the first one after the command is armed, and is refused.
  ASSERT_EQ(Command("ring_commit 1"), 0);
  EXPECT_EQ(ReadFile(Path("before")), "served");
  WriteFile(Path("after"), "served too");
  EXPECT_EQ(ReadFile(Path("after")), "served too");
  const std::string stats = StatsText(Root());
  EXPECT_EQ(StatValue(Root(), "fuse_uring_commit_failures") - failures, 1) << stats;
  EXPECT_EQ(StatValue(Root(), "fuse_uring_reregistered"), 0) << stats;
  EXPECT_EQ(StatValue(Root(), "fuse_uring_errors"), 0) << stats;
  const std::string messages = Slurp(Root() + "/.walfs/messages");
  EXPECT_NE(messages.find("the kernel refused a reply's commit (No such file or directory): committing it again"),
            std::string::npos)
      << messages;
  EXPECT_NE(ReadFile(Root() + "/.walfs/fault").find("ring_commit_failures: "), std::string::npos);
}

TEST_F(UringCommitFault, AMalformedRingCommandIsRefusedWithEinval) {
  WALFS_REQUIRE_WALFS();
  for (const char* bad : {"ring_commit", "ring_commit x", "ring_commit 1 2", "ring_commit -1"})
    EXPECT_EQ(Command(bad), EINVAL) << bad;
  if (KernelOffersRings()) {
    EXPECT_EQ(Command("ring_commit 0"), 0) << "0 disarms";
  }
}

// Log space over the rings.  With the smallest log mkfs.walfs accepts (it
// holds three of the largest reservation, a setxattr's), eight callers on
// CPU 0 creating files and setting an xattr on each keep that queue's four
// lanes in transactions whose reservations are more than the log holds:
// lanes sleep for log space while the others hold it (12-52 sleeps a run
// here).  Nothing but the log's own threads frees log space (the AIL writes
// back what pins the tail, a log write moves it), never another FUSE
// request, so the sleepers are woken and every caller is served; were space
// freed by a request, a queue whose lanes all sleep could never take it.
std::string SmallestLogBytes() {
  const std::string probe = "/tmp/walfs-uring-logspace-probe-" + std::to_string(getpid());
  const ToolRun r = RunTool(BinDir() + "/mkfs.walfs -f -l size=4096 " + probe + " 64m");
  unlink(probe.c_str());
  const std::size_t at = r.out.find("at least ");
  if (at == std::string::npos) return "";
  const long long least = std::atoll(r.out.c_str() + at + 9);
  return std::to_string((least + 4095) / 4096 * 4096);
}

class UringLogSpace : public MountedFs {
 public:
  static void SetUpTestSuite() {
    const std::string least = SmallestLogBytes();
    ASSERT_FALSE(least.empty()) << "mkfs.walfs did not say the smallest log";
    MountSuite({.image_size = "256m",
                .options = {"transport=uring", "uring_lanes=4"},
                .mkfs_args = {"-l", "size=" + least}});
  }
};

TEST_F(UringLogSpace, LanesAsleepForLogSpaceAreWokenByTheLogAndEveryCallerIsServed) {
  WALFS_REQUIRE_WALFS();
  if (!KernelOffersRings()) GTEST_SKIP() << "the fuse module's enable_uring is off here";
  const long long sleeps = StatValue(Root(), "reserve_sleeps");
  constexpr int kCallers = 8;
  constexpr int kFiles = 150;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kCallers; ++t) {
    threads.emplace_back([&, t] {
      PinToCpu0();
      for (int i = 0; i < kFiles; ++i) {
        const std::string name = Path("s" + std::to_string(t) + "_" + std::to_string(i));
        WriteFile(name, std::string(100 + i, 'l'));
        // An xattr's reservation is the largest there is: two are most of the log.
        EXPECT_SYS(setxattr(name.c_str(), "user.walfs", name.data(), name.size(), 0));
        if (i % 2 == 1) {
          EXPECT_SYS(unlink(name.c_str()));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string stats = StatsText(Root());
  EXPECT_GT(StatValue(Root(), "reserve_sleeps") - sleeps, 0) << "no transaction slept for log space:\n" << stats;
  EXPECT_LT(seconds, 60) << stats;
  EXPECT_EQ(StatValue(Root(), "fuse_uring_errors"), 0) << stats;
  EXPECT_GT(StatValue(Root(), "fuse_uring_q0_requests"), kCallers * kFiles) << stats;
  for (int t = 0; t < kCallers; ++t)
    for (int i = 0; i < kFiles; i += 2) {
      const std::string name = Path("s" + std::to_string(t) + "_" + std::to_string(i));
      EXPECT_EQ(ReadFile(name), std::string(100 + i, 'l')) << name;
    }
}

class DevTransport : public MountedFs {
 public:
  static void SetUpTestSuite() { MountSuite({.options = {"transport=dev"}}); }
};

TEST_F(DevTransport, TransportDevServesThroughDevFuseAlone) {
  WALFS_REQUIRE_WALFS();
  WriteFile(Path("a"), "through /dev/fuse");
  EXPECT_EQ(ReadFile(Path("a")), "through /dev/fuse");
  const std::string stats = StatsText(Root());
  EXPECT_NE(stats.find("fuse_transport dev\n"), std::string::npos) << stats;
  EXPECT_EQ(stats.find("fuse_uring_"), std::string::npos) << stats;
  // Asked for, not a fallback: nothing to say about the transport.
  EXPECT_EQ(Slurp(Root() + "/.walfs/messages").find("serving FUSE requests through"), std::string::npos);
}

}  // namespace
}  // namespace walfs::testing
