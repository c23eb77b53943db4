// Which requests the kernel no longer sends (mount/kernel_policy.h): each
// spec counts one opcode in .walfs/stats (`fuse_req_<op>`, counted by
// mount/session_io.h as the daemon reads it) around a user-level operation.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

class RequestDiet : public MountedFs {
 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
  }
  // Requests of opcode `op` the daemon has read (a line missing: none yet).
  long long Count(const std::string& op) {
    const long long v = StatValue(Root(), "fuse_req_" + op);
    return v < 0 ? 0 : v;
  }
  void ListDir(const std::string& path) {
    DIR* d = opendir(path.c_str());
    ASSERT_NE(d, nullptr) << path;
    while (readdir(d) != nullptr) {
    }
    closedir(d);
  }
};

TEST_F(RequestDiet, WritesAfterAFilesFirstDoNotAskForSecurityCapability) {
  const int fd = open(Path("f").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  const long long before = Count("getxattr");
  for (int i = 0; i < 20; ++i) ASSERT_EQ(pwrite(fd, "abcd", 4, i * 4096), 4);
  close(fd);
  EXPECT_LE(Count("getxattr") - before, 1) << "the superblock is not SB_NOSEC (FUSE_HANDLE_KILLPRIV_V2)";
  EXPECT_EQ(StatValue(Root(), "fuse_killpriv_v2"), 1);
}

TEST_F(RequestDiet, ChownNeedsNoAttributesFirst) {
  WriteFile(Path("f"), "x");
  struct stat st {};
  ASSERT_SYS(stat(Path("f").c_str(), &st));
  const long long before = Count("getattr");
  for (int i = 0; i < 5; ++i) ASSERT_SYS(chown(Path("f").c_str(), 1000 + i, 1000 + i));
  EXPECT_EQ(Count("getattr") - before, 0);
}

TEST_F(RequestDiet, CloseSendsNoFlush) {
  WriteFile(Path("f"), "x");
  const int first = open(Path("f").c_str(), O_RDONLY);  // the kernel learns ENOSYS once
  ASSERT_GE(first, 0);
  close(first);
  const long long before = Count("flush");
  for (int i = 0; i < 10; ++i) {
    const int fd = open(Path("f").c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  EXPECT_EQ(Count("flush") - before, 0);
}

TEST_F(RequestDiet, ADirectoryListedAgainIsServedFromTheKernelsCache) {
  ASSERT_SYS(mkdir(Path("d").c_str(), 0755));
  for (int i = 0; i < 50; ++i) WriteFile(Path("d/f" + std::to_string(i)), "x");
  ListDir(Path("d"));
  // walfs refuses OPENDIR and the kernel stops asking after the first
  // refusal; an OPENDIR sent before that refusal arrived (the writeback
  // push helper opens its clone's root while files are open for writing)
  // may still be on its way to the daemon: wait until none arrives for
  // 100 ms (CI once counted one after this point).
  for (long long seen = -1, i = 0; seen != Count("opendir") && i < 20; ++i) {
    seen = Count("opendir");
    usleep(100'000);
  }
  const long long opendirs = Count("opendir"), reads = Count("readdir") + Count("readdirplus");
  ListDir(Path("d"));
  ListDir(Path("d"));
  EXPECT_EQ(Count("opendir") - opendirs, 0);
  EXPECT_EQ(Count("readdir") + Count("readdirplus") - reads, 0);
  // A change made through the mount is seen at once.
  WriteFile(Path("d/new"), "x");
  bool seen = false;
  DIR* d = opendir(Path("d").c_str());
  ASSERT_NE(d, nullptr);
  while (dirent* e = readdir(d)) seen |= std::string(e->d_name) == "new";
  closedir(d);
  EXPECT_TRUE(seen);
}

TEST_F(RequestDiet, AMissingNameIsAskedForOnceThenCreatedNormally) {
  const long long before = Count("lookup");
  struct stat st {};
  for (int i = 0; i < 10; ++i) EXPECT_ERRNO(ENOENT, stat(Path("nothing").c_str(), &st));
  EXPECT_EQ(Count("lookup") - before, 1);
  WriteFile(Path("nothing"), "now");
  EXPECT_EQ(ReadFile(Path("nothing")), "now");
}

TEST_F(RequestDiet, AttributesStayCachedPastASecond) {
  // Made without opening it: a file open for writing may be opened by the
  // writeback push's helper too, whose close (as any close of a file
  // written through the cache) marks its block count stale.
  ASSERT_SYS(mknod(Path("f").c_str(), S_IFREG | 0644, 0));
  struct stat st {};
  ASSERT_SYS(stat(Path("f").c_str(), &st));
  const long long before = Count("getattr");
  usleep(1'200'000);
  ASSERT_SYS(stat(Path("f").c_str(), &st));
  EXPECT_EQ(Count("getattr") - before, 0);
}

TEST_F(RequestDiet, ServiceTimesAddUpToNoMoreThanTheWorkersWallTime) {
  const long long before = StatValue(Root(), "fuse_service_us");
  ASSERT_GE(before, 0);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) {
    const int fd = open(Path("s" + std::to_string(i)).c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "x", 1), 1);
    ASSERT_SYS(fsync(fd));
    close(fd);
  }
  const long long wall_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
  const long long service = StatValue(Root(), "fuse_service_us") - before;
  const long long workers = StatValue(Root(), "fuse_workers_busy_max");
  EXPECT_GT(service, 0);
  ASSERT_GE(workers, 1);
  EXPECT_LE(service, (wall_us + 1000) * workers) << "service time is counted once per request, read to reply";
  EXPECT_LE(StatValue(Root(), "fuse_req_taken_last_waiter"),
            StatValue(Root(), "fuse_requests") + StatValue(Root(), "fuse_req_control"));
}

TEST_F(RequestDiet, ConcurrentCallersKeepSeveralWorkersBusy) {
  // Four callers fsyncing at once: each fsync waits for the log in its
  // worker, so the daemon must have had more than one worker busy.
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([this, t, &failures] {
      const int fd = open(Path("c" + std::to_string(t)).c_str(), O_WRONLY | O_CREAT, 0644);
      if (fd < 0) return void(++failures);
      for (int i = 0; i < 40; ++i)
        if (pwrite(fd, "abcd", 4, i * 4096) != 4 || fsync(fd) != 0) ++failures;
      close(fd);
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GE(StatValue(Root(), "fuse_workers_busy_max"), 2);
}

}  // namespace
}  // namespace walfs::testing
