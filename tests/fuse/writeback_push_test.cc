// The writeback push (mount/writeback_push.h, `-o wb_push_ms=N`, default
// 10): while a file is open for writing through the kernel's page cache,
// the daemon has the kernel write this mount's dirty pages back every N ms.
// So what a writer put in the cache and never fsynced survives a SIGKILL of
// the daemon once a push has sent it, walfs has answered those WRITEs and
// the lazy push (lazy_commit_ms) has run: the kernel, which would otherwise
// keep those pages for its own write-back (about 30 s), drops them with a
// dead connection.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <vector>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

std::string Pattern(std::size_t n, char seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + static_cast<char>(i % 23));
  return s;
}

// A thread rewriting 1 MiB pieces of the first `span` bytes of an open
// file through the cache until destroyed (or the mount dies): dirty pages
// for every push.
class BusyWriter {
 public:
  BusyWriter(int fd, off_t span) : thread_([this, fd, span] {
    const std::string chunk(1 << 20, 'w');
    for (off_t off = 0; !stop_.load(); off = (off + (1 << 20)) % span)
      if (pwrite(fd, chunk.data(), chunk.size(), off) < 0) break;
  }) {}
  ~BusyWriter() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Where two byte strings first differ, for a failure message.
std::string FirstDifference(const std::string& got, const std::string& want) {
  std::size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  if (i == got.size() && i == want.size()) return "equal";
  return fmt::format("{} bytes of {}; first difference at byte {} (block {})", got.size(), want.size(), i, i / 4096);
}

// cachestat(2) (Linux 6.5; glibc 2.36 has no wrapper, and its number is
// the same on every architecture): how many of a file's pages the kernel
// holds dirty or under write-back.
struct CacheCounts {
  std::uint64_t cache, dirty, writeback, evicted, recently_evicted;
};

bool CacheClean(int fd, std::string* why) {
  struct {
    std::uint64_t off = 0, len = 0;  // len 0: to the end of the file
  } range;
  CacheCounts c{};
  if (syscall(451, fd, &range, &c, 0) != 0) {
    *why = fmt::format("cachestat: {}", strerrorname_np(errno));
    return false;
  }
  *why = fmt::format("{} pages cached, {} dirty, {} under write-back", c.cache, c.dirty, c.writeback);
  return c.dirty == 0 && c.writeback == 0;
}

class WritebackPush : public MountedFs {
 public:
  // commit=86400: only the lazy push writes the log to the image, as after
  // a kill between two timed pushes.  1 GiB: well above the space where
  // files are opened write-through (wb_reserve_mb).
  static void SetUpTestSuite() { MountSuite({.image_size = "1g", .options = {"commit=86400"}}); }

 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
  }

  // Until two more pushes than `before` (read after the caller's writes)
  // have ended: the first may have begun before it was read, the second
  // began after the first ended, so after the writes.  Then until the
  // kernel holds no page of `files` dirty or under write-back: syncfs starts
  // the write-back but does not wait for a FUSE daemon's answers (since
  // Linux 6.14 a page stays under write-back until walfs answers its WRITE,
  // and CI's TSan job once killed the daemon with 2 MiB of a file's WRITEs
  // unanswered after two pushes had returned).  Then until every
  // checkpoint of what they brought is written to the image: the CIL is
  // empty and the last pushed checkpoint's records are out
  // (cil_written_seq), whether a lazy push or a background one wrote them.
  // (Counting lazy pushes is not enough: a background push that emptied the
  // CIL may still be writing, and CI's TSan job once lost a file's data
  // after that condition held.)
  // Up to 10 s, for a loaded machine.  Returns the stats then.
  std::string WaitPushedAndWrittenOut(long long before, std::initializer_list<int> files) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::string s = ReadFile(Root() + "/.walfs/stats");
    while (StatIn(s, "writeback_pushes") < before + 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      s = ReadFile(Root() + "/.walfs/stats");
    }
    EXPECT_GE(StatIn(s, "writeback_pushes"), before + 2) << "no push in 10 s:\n" << s;
    EXPECT_EQ(StatIn(s, "writeback_push_failed"), 0) << s;
    for (const int fd : files) {
      std::string why;
      while (!CacheClean(fd, &why) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      EXPECT_TRUE(CacheClean(fd, &why)) << "fd " << fd << " not written back: " << why;
    }
    s = ReadFile(Root() + "/.walfs/stats");
    while (!(StatIn(s, "cil_items") == 0 && StatIn(s, "cil_written_seq") + 1 == StatIn(s, "cil_seq")) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      s = ReadFile(Root() + "/.walfs/stats");
    }
    EXPECT_EQ(StatIn(s, "cil_items"), 0) << "still in the CIL:\n" << s;
    EXPECT_EQ(StatIn(s, "cil_written_seq") + 1, StatIn(s, "cil_seq")) << "a checkpoint not written out:\n" << s;
    return s;
  }
};

TEST_F(WritebackPush, IsOnByDefaultAndSaysSoInTheStats) {
  const std::string s = ReadFile(Root() + "/.walfs/stats");
  EXPECT_NE(s.find("\nwriteback_push on\n"), std::string::npos) << s;
  EXPECT_EQ(StatIn(s, "writeback_push_ms"), 10);
}

TEST_F(WritebackPush, DataWrittenToAFileStillOpenSurvivesAKillOfTheDaemon) {
  const std::string a = Pattern(3 << 20, 'a'), b = Pattern(5000, 'k');
  const int fa = open(Path("a").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_SYS(fa);
  const int fb = open(Path("b").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_SYS(fb);
  ASSERT_EQ(pwrite(fa, a.data(), a.size(), 0), static_cast<ssize_t>(a.size()));
  ASSERT_EQ(pwrite(fb, b.data(), b.size(), 0), static_cast<ssize_t>(b.size()));
  ASSERT_EQ(pwrite(fb, "ZZ", 2, 100), 2);  // an overwrite in a cached page
  const std::string stats = WaitPushedAndWrittenOut(StatValue(Root(), "writeback_pushes"), {fa, fb});
  ASSERT_FALSE(HasFailure());
  KillDaemon();
  close(fa);  // on a dead connection: the kernel drops whatever it still held
  close(fb);
  ASSERT_NO_FATAL_FAILURE(MountAgain());
  EXPECT_TRUE(ReadFile(Path("a")) == a) << "a lost its cached data: " << FirstDifference(ReadFile(Path("a")), a)
                                         << "\nstats before the kill:\n" << stats;
  std::string want_b = b;
  want_b.replace(100, 2, "ZZ");
  EXPECT_TRUE(ReadFile(Path("b")) == want_b) << "b: " << FirstDifference(ReadFile(Path("b")), want_b);
  ASSERT_NO_FATAL_FAILURE(Remount());
}

TEST_F(WritebackPush, StoresThroughASharedMappingSurviveAKillOfTheDaemon) {
  constexpr std::size_t kSize = 64 << 10;
  const int fd = open(Path("m").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_SYS(fd);
  ASSERT_SYS(ftruncate(fd, kSize));
  void* p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED) << strerrorname_np(errno);
  const std::string want = Pattern(kSize, 'm');
  std::memcpy(p, want.data(), kSize);
  const std::string stats = WaitPushedAndWrittenOut(StatValue(Root(), "writeback_pushes"), {fd});
  ASSERT_FALSE(HasFailure());
  KillDaemon();
  munmap(p, kSize);
  close(fd);
  ASSERT_NO_FATAL_FAILURE(MountAgain());
  EXPECT_TRUE(ReadFile(Path("m")) == want) << "the mapped stores were lost: " << FirstDifference(ReadFile(Path("m")), want)
                                           << "\nstats before the kill:\n" << stats;
  ASSERT_NO_FATAL_FAILURE(Remount());
}

// The system call each thread of `pid` is in (/proc/PID/task/TID/syscall:
// its number, or "running"), one entry per thread.
std::vector<std::string> SyscallsOf(pid_t pid) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(fmt::format("/proc/{}/task", pid), ec)) {
    std::string first;
    std::ifstream(task.path() / "syscall") >> first;
    out.push_back(first);
  }
  return out;
}

// What makes a killed daemon exit at once: none of its threads ever waits
// in syncfs(2) (number 306 on x86-64), which waits for WRITEs that only its
// other threads serve.  The helper does, and is not the daemon.
TEST_F(WritebackPush, NoThreadOfTheDaemonEverWaitsInSyncfs) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "syncfs's number is checked on x86-64 only";
#endif
  const int fd = open(Path("sampled").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_SYS(fd);
  const pid_t daemon = DaemonPid();
  int in_syncfs = 0, samples = 0;
  const long long before = StatValue(Root(), "writeback_pushes");
  {
    BusyWriter writer(fd, 32 << 20);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < until) {
      for (const std::string& call : SyscallsOf(daemon)) in_syncfs += call == "306";
      ++samples;
    }
  }
  close(fd);
  EXPECT_GT(StatValue(Root(), "writeback_pushes"), before + 10);
  EXPECT_EQ(in_syncfs, 0) << "a thread of the daemon was in syncfs in " << in_syncfs << " of " << samples
                          << " samples: killed then, the daemon could never exit";
}

// The pushes run in a helper process that holds no descriptor of the
// daemon's: a syncfs in flight waits for WRITEs only the daemon serves, and
// a thread of the daemon stuck there would keep /dev/fuse open, so the
// killed daemon would never exit nor its mount fail (KillDaemon gives it
// 30 s).
TEST_F(WritebackPush, AKillDuringPushesEndsTheDaemonAtOnce) {
  for (int round = 0; round < 10; ++round) {
    const int fd = open(Path("busy").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_SYS(fd);
    // The test's directory and the file are durable before the kill (a
    // directory's fsync forces the log): the kill may come before the lazy
    // push has written them, on a loaded machine.
    const int dfd = open(Path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_SYS(dfd);
    ASSERT_SYS(fsync(dfd));
    close(dfd);
    std::chrono::steady_clock::duration took{};
    {
      BusyWriter writer(fd, 64 << 20);  // ends at the dead mount's first error, or when told
      const long long before = StatValue(Root(), "writeback_pushes");
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (StatValue(Root(), "writeback_pushes") < before + 3 + round && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const auto t0 = std::chrono::steady_clock::now();
      KillDaemon();
      took = std::chrono::steady_clock::now() - t0;
    }
    close(fd);
    EXPECT_LT(took, std::chrono::seconds(5)) << "round " << round;
    ASSERT_NO_FATAL_FAILURE(MountAgain());
  }
  ASSERT_NO_FATAL_FAILURE(Remount());
}

TEST_F(WritebackPush, NothingOpenForWritingNothingPushed) {
  WriteFile(Path("closed"), "written and closed");  // close wrote it back
  // The kernel sends RELEASE after close(2) returns (a background request):
  // until it arrives the file counts as open for writing, and a push may
  // start (seen over the io_uring rings, 1 run in 1).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const long long before = StatValue(Root(), "writeback_pushes");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(StatValue(Root(), "writeback_pushes"), before);
}

// Each file open for writing through the cache is written back on its own
// (sync_file_range in the helper, which opened it by handle), not by a
// syncfs of the whole mount, whose write-back beside a buffered writer and
// a busy system took seconds and skipped files dirtied meanwhile.
TEST_F(WritebackPush, EachFileOpenForWritingIsWrittenBackOnItsOwn) {
  const int fa = open(Path("own_a").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_SYS(fa);
  const int fb = open(Path("own_b").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_SYS(fb);
  const long long syncfs_before = StatValue(Root(), "writeback_push_syncfs");
  const long long files_before = StatValue(Root(), "writeback_push_files");
  ASSERT_EQ(pwrite(fa, "aaaa", 4, 0), 4);
  ASSERT_EQ(pwrite(fb, "bbbb", 4, 8192), 4);
  const std::string s = WaitPushedAndWrittenOut(StatValue(Root(), "writeback_pushes"), {fa, fb});
  // Each file pushed at least once (from the second push that found it
  // open: WaitPushedAndWrittenOut waits for two).
  EXPECT_GE(StatIn(s, "writeback_push_files") - files_before, 2) << s;
  EXPECT_EQ(StatIn(s, "writeback_push_syncfs"), syncfs_before) << s;
  close(fa);
  close(fb);
}

// More files open for writing than the helper has slots for (64): those
// without one are written back by syncfs, as before.
TEST_F(WritebackPush, MoreFilesThanItsSlotsAreWrittenBackBySyncfs) {
  std::vector<int> fds;
  for (int i = 0; i < 70; ++i) {
    const int fd = open(Path("many" + std::to_string(i)).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_SYS(fd);
    fds.push_back(fd);
  }
  const long long syncfs_before = StatValue(Root(), "writeback_push_syncfs");
  ASSERT_EQ(pwrite(fds.back(), "last", 4, 0), 4);
  const std::string s = WaitPushedAndWrittenOut(StatValue(Root(), "writeback_pushes"), {fds.back()});
  EXPECT_GT(StatIn(s, "writeback_push_syncfs"), syncfs_before) << s;
  for (const int fd : fds) close(fd);
}

// A file open for writing for less than one interval is left to its own
// close (which writes it back and waits): the helper opens a file from the
// second push that finds it open, and never opens this one.  With 200 ms
// between pushes, a file held open 120 ms is seen by one push at most.
class WritebackPushSlow : public MountedFs {
 public:
  static void SetUpTestSuite() { MountSuite({.image_size = "1g", .options = {"wb_push_ms=200"}}); }
};

TEST_F(WritebackPushSlow, AFileOpenForLessThanAnIntervalIsLeftToItsOwnClose) {
  WALFS_REQUIRE_WALFS();
  WriteFile(Path("brief"), "x");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // its RELEASE, a background request
  // OPENs so far (no line yet: none); reading the stats is not one, but
  // what a read adds is measured, not assumed.
  auto opens = [](const std::string& s) { return std::max(0LL, StatIn(s, "fuse_req_open")); };
  const std::string stats = Root() + "/.walfs/stats";
  const long long first = opens(ReadFile(stats));
  const std::string before = ReadFile(stats);
  const long long per_read = opens(before) - first;
  for (int i = 0; i < 8; ++i) {
    const int fd = open(Path("brief").c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_SYS(fd);
    ASSERT_EQ(pwrite(fd, "y", 1, i), 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::string after = ReadFile(stats);
  EXPECT_GT(StatIn(after, "writeback_pushes"), StatIn(before, "writeback_pushes")) << "the pushes ran meanwhile";
  EXPECT_EQ(opens(after) - opens(before), 8 + per_read)
      << "the helper opened the file too";
}

class WritebackPushOff : public MountedFs {
 public:
  static void SetUpTestSuite() { MountSuite({.image_size = "1g", .options = {"wb_push_ms=0"}}); }
};

TEST_F(WritebackPushOff, ZeroTurnsItOff) {
  WALFS_REQUIRE_WALFS();
  const int fd = open(Path("f").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_SYS(fd);
  ASSERT_EQ(write(fd, "x", 1), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::string s = ReadFile(Root() + "/.walfs/stats");
  close(fd);
  EXPECT_NE(s.find("\nwriteback_push off\n"), std::string::npos) << s;
  EXPECT_EQ(StatIn(s, "writeback_pushes"), 0);
}

}  // namespace
}  // namespace walfs::testing
