// The writeback cache (on by default) at a full disk: what a write that
// returned success is promised (mount/writeback_guard.h).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>
#include <atomic>
#include <string>
#include <vector>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace writeback_space_test {  // this file's own names (unity builds share one TU)
namespace {

constexpr size_t kChunk = 256 << 10;

// Writes kChunk blocks until write(2) fails or `limit` bytes are written;
// returns the bytes written and sets *err to the failure's errno (0: none).
size_t WriteUntilFull(int fd, size_t limit, int* err) {
  const std::vector<char> chunk(kChunk, 'w');
  size_t total = 0;
  *err = 0;
  while (total < limit) {
    const ssize_t n = write(fd, chunk.data(), chunk.size());
    if (n < 0) {
      *err = errno;
      break;
    }
    total += static_cast<size_t>(n);
  }
  return total;
}

// The default reserve (256 MiB) is more than a 64 MiB image has: every file
// opened for writing bypasses the cache, and write(2) reports the full disk.
class WritebackFullDisk : public MountedFs {
 protected:
  static void SetUpTestSuite() { MountSuite({.image_size = "64m"}); }
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
  }
};

TEST_F(WritebackFullDisk, WriteItselfGetsEnospcAndWhatItAcceptedSurvivesFsync) {
  ASSERT_EQ(StatValue(Root(), "writeback_cache"), 1) << "the writeback cache is the default";
  const int fd = open(Path("big").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_SYS(fd);
  int err = 0;
  const size_t written = WriteUntilFull(fd, size_t{256} << 20, &err);
  EXPECT_EQ(err, ENOSPC) << "dd on a full disk must stop with ENOSPC, not run on into the cache";
  EXPECT_LT(written, size_t{64} << 20);
  EXPECT_SYS(fsync(fd)) << "everything write(2) accepted is on disk";
  struct stat st {};
  ASSERT_SYS(fstat(fd, &st));
  EXPECT_EQ(static_cast<size_t>(st.st_size), written);
  close(fd);
  EXPECT_EQ(StatValue(Root(), "writeback_lost"), 0);
  ASSERT_SYS(unlink(Path("big").c_str()));
  // The next spec's directory needs space: the file's blocks come back once
  // the kernel has forgotten it and its free is checkpointed (both after
  // unlink returns; under TSan over the io_uring rings the next mkdir got
  // ENOSPC, 1 run in 2).
  for (int i = 0; i < 200; ++i) {
    const int dir = open(Root().c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_SYS(dir);
    syncfs(dir);
    struct statvfs sv {};
    const bool back = fstatvfs(dir, &sv) == 0 && sv.f_bavail * sv.f_frsize > (size_t{32} << 20);
    close(dir);
    if (back) return;
    usleep(50'000);
  }
  FAIL() << "the removed file's space never came back";
}

// A file opened write-through (FOPEN_DIRECT_IO) near a full disk still maps
// shared, as on any filesystem: without FUSE_DIRECT_IO_ALLOW_MMAP, which
// walfs asks for, the kernel refuses MAP_SHARED with ENODEV.
TEST_F(WritebackFullDisk, AFileOpenedWriteThroughStillMapsSharedAndItsStoresReachTheFile) {
  ASSERT_EQ(StatValue(Root(), "fuse_direct_io_mmap"), 1) << "this kernel (6.6+) offers the flag";
  const std::string f = Path("mapped");
  const int fd = open(f.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_SYS(fd);
  ASSERT_SYS(ftruncate(fd, 8192));
  void* m = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(m, MAP_FAILED) << "mmap(MAP_SHARED) of a write-through file: " << strerror(errno);
  std::memcpy(static_cast<char*>(m) + 4096, "mapped store", 12);
  ASSERT_SYS(msync(m, 8192, MS_SYNC));
  ASSERT_SYS(munmap(m, 8192));
  ASSERT_SYS(close(fd));
  const int rd = open(f.c_str(), O_RDONLY);
  ASSERT_SYS(rd);
  char got[12] = {};
  ASSERT_EQ(pread(rd, got, sizeof got, 4096), static_cast<ssize_t>(sizeof got));
  EXPECT_EQ(std::string(got, sizeof got), "mapped store");
  close(rd);
  ASSERT_SYS(unlink(f.c_str()));
}

// With no reserve a file opened on an empty disk keeps the cache: write(2)
// succeeds past the end of the space, and every fsync says the data is lost.
class WritebackNoReserve : public WritebackFullDisk {
 protected:
  static void SetUpTestSuite() { MountSuite({.image_size = "64m", .options = {"wb_reserve_mb=0"}}); }
};

TEST_F(WritebackNoReserve, AWriteBackThatFindsNoSpaceFailsEveryLaterFsyncUntilTruncated) {
  const int fd = open(Path("big").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_SYS(fd);
  int err = 0;
  WriteUntilFull(fd, size_t{96} << 20, &err);
  ASSERT_EQ(err, 0) << "the kernel's cache took the writes";
  for (int i = 0; i < 3; ++i) {
    errno = 0;
    EXPECT_EQ(fsync(fd), -1) << "fsync " << i << " after a lost write-back succeeded";
    EXPECT_EQ(errno, ENOSPC) << "fsync " << i;
  }
  EXPECT_GT(StatValue(Root(), "writeback_lost"), 0);
  EXPECT_NE(ReadFile(Root() + "/.walfs/messages").find("write-back"), std::string::npos);
  ASSERT_SYS(ftruncate(fd, 0));
  EXPECT_SYS(fsync(fd)) << "an emptied file has nothing lost in it";
  close(fd);
  ASSERT_SYS(unlink(Path("big").c_str()));
}

// The scenario: a file opened while the disk was empty keeps the
// page cache, and buffered 4 KiB writes fill a 1 GiB image past its end.
// Every write(2) that returned success must be on disk after a remount; the
// first write the space left cannot hold gets ENOSPC itself.  Each block
// carries its own number, so a lost or misplaced one is found.
class WritebackFillFromEmpty : public WritebackFullDisk {
 protected:
  // Filling and emptying 1 GiB takes a while under TSan: the unmount too.
  static void SetUpTestSuite() { MountSuite({.image_size = "1g", .exit_timeout_s = 120}); }

  // A file removed by the spec before is given back at its checkpoint (its
  // blocks are busy until then): wait for the space, so that the files the
  // next spec opens keep the cache rather than being opened write-through.
  void WaitForFreeSpaceAbove(unsigned long long bytes) {
    for (int i = 0; i < 200; ++i) {
      const int dir = open(Path().c_str(), O_RDONLY | O_DIRECTORY);
      if (dir >= 0) {
        syncfs(dir);
        struct statvfs sv {};
        const bool enough = fstatvfs(dir, &sv) == 0 && sv.f_bavail * sv.f_frsize > bytes;
        close(dir);
        if (enough) return;
      }
      usleep(50'000);
    }
    FAIL() << "the space of the spec before never came back";
  }
};

TEST_F(WritebackFillFromEmpty, NoWriteThatReturnedSuccessIsLostWhenTheDiskFills) {
  constexpr size_t kBlock = 4096;
  const int fd = open(Path("fill").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_SYS(fd);
  EXPECT_NE(StatValue(Root(), "writeback_low_space"), 1) << "opened with the disk empty: the cache is kept";
  std::vector<char> block(kBlock);
  size_t acked = 0;
  int err = 0;
  for (size_t i = 0; i < (size_t{1200} << 20) / kBlock; ++i) {
    std::memset(block.data(), static_cast<int>('a' + i % 26), kBlock);
    std::memcpy(block.data(), &i, sizeof i);
    if (write(fd, block.data(), kBlock) != static_cast<ssize_t>(kBlock)) {
      err = errno;
      break;
    }
    ++acked;
  }
  EXPECT_EQ(err, ENOSPC) << "write(2) itself must report the full disk";
  const int fsync_rc = fsync(fd);
  EXPECT_EQ(fsync_rc, 0) << "fsync of what write(2) accepted: " << strerrorname_np(errno);
  close(fd);
  EXPECT_GT(StatValue(Root(), "writeback_refused"), 0);
  EXPECT_EQ(StatValue(Root(), "writeback_lost"), 0);
  Remount();
  const int rd = open(Path("fill").c_str(), O_RDONLY);
  ASSERT_SYS(rd);
  size_t lost = 0, first_lost = 0;
  for (size_t i = 0; i < acked; ++i) {
    std::vector<char> got(kBlock);
    const ssize_t n = pread(rd, got.data(), kBlock, static_cast<off_t>(i * kBlock));
    size_t stamp = ~size_t{0};
    if (n == static_cast<ssize_t>(kBlock)) std::memcpy(&stamp, got.data(), sizeof stamp);
    if (stamp != i || got[kBlock - 1] != static_cast<char>('a' + i % 26)) {
      if (lost++ == 0) first_lost = i;
    }
  }
  close(rd);
  EXPECT_EQ(lost, 0u) << lost << " of " << acked << " acknowledged blocks lost, the first at block " << first_lost;
  RecordProperty("acknowledged_blocks", std::to_string(acked));
  std::printf("acknowledged %zu blocks (%zu MiB) of 4 KiB before ENOSPC; %zu lost\n", acked, acked * kBlock >> 20,
              lost);
  ASSERT_SYS(unlink(Path("fill").c_str()));
}

// The stress form: several writers, each with a file opened while the disk
// was empty, write 4 KiB blocks and sync now and then (fsync, fdatasync,
// syncfs in turn) until write(2) says ENOSPC.  A sync may only fail for a
// reason write(2) gave first: none may report ENOSPC for data write(2)
// accepted (ext4 gives 0 such failures; walfs gave hundreds).
TEST_F(WritebackFillFromEmpty, WritersThatSyncHearOfTheFullDiskFromWriteNeverFromASync) {
  constexpr int kWriters = 4;
  constexpr size_t kBlock = 4096;
  ASSERT_NO_FATAL_FAILURE(WaitForFreeSpaceAbove(size_t{512} << 20));
  std::vector<int> fds;
  for (int w = 0; w < kWriters; ++w) {
    const int fd = open(Path("w" + std::to_string(w)).c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_SYS(fd);
    fds.push_back(fd);
  }
  std::atomic<int> sync_enospc{0}, write_enospc{0}, syncs{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      const std::vector<char> block(kBlock, static_cast<char>('0' + w));
      for (size_t i = 0; i < (size_t{400} << 20) / kBlock; ++i) {
        if (write(fds[w], block.data(), kBlock) != static_cast<ssize_t>(kBlock)) {
          if (errno == ENOSPC) write_enospc.fetch_add(1);
          return;
        }
        if (i % 256 != 255) continue;
        const int kind = static_cast<int>(i / 256) % 3;
        const int rc = kind == 0 ? fsync(fds[w]) : kind == 1 ? fdatasync(fds[w]) : syncfs(fds[w]);
        syncs.fetch_add(1);
        if (rc != 0 && errno == ENOSPC) sync_enospc.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int fd : fds) {
    if (fsync(fd) != 0 && errno == ENOSPC) sync_enospc.fetch_add(1);
    close(fd);
  }
  EXPECT_EQ(write_enospc.load(), kWriters) << "every writer must meet the full disk in write(2)";
  EXPECT_EQ(sync_enospc.load(), 0) << "of " << syncs.load() << " syncs";
  EXPECT_EQ(StatValue(Root(), "writeback_lost"), 0);
  std::printf("%d syncs, %d of them ENOSPC; %d writers stopped by write(2)'s ENOSPC\n", syncs.load(),
              sync_enospc.load(), write_enospc.load());
  for (int w = 0; w < kWriters; ++w) ASSERT_SYS(unlink(Path("w" + std::to_string(w)).c_str()));
}

}  // namespace
}  // namespace writeback_space_test
}  // namespace walfs::testing
