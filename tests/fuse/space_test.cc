// Space: statfs accounting, fallocate (allocate, keep size, punch hole,
// zero range), SEEK_DATA/SEEK_HOLE, and running out of space on a small
// image -- for buffered and O_DIRECT writes and for renames -- and
// recovering from it.
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace space_test {  // this file's own names (unity builds share one TU)
namespace {

constexpr off_t kMiB = 1 << 20;

class Space : public MountedFs {
 protected:
  struct statvfs StatFs() {
    struct statvfs sv {};
    EXPECT_EQ(statvfs(Path().c_str(), &sv), 0) << strerrorname_np(errno);
    return sv;
  }
  // Free bytes, after pushing delayed frees out (ext4 returns freed blocks
  // at journal commit; walfs may return them lazily too).
  unsigned long long FreeBytes() {
    const int fd = open(Path().c_str(), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
      syncfs(fd);
      close(fd);
    }
    const struct statvfs sv = StatFs();
    return static_cast<unsigned long long>(sv.f_bfree) * sv.f_frsize;
  }
  static void WriteZeros(int fd, off_t len) {
    const std::string buf(kMiB, 'z');
    for (off_t off = 0; off < len; off += kMiB) {
      ASSERT_EQ(pwrite(fd, buf.data(), buf.size(), off), static_cast<ssize_t>(buf.size()))
          << strerrorname_np(errno);
    }
  }
  // Unlinks what a spec filled the disk with and waits until the space is
  // back, so the suite's next spec finds it free.
  void Empty(const std::vector<std::string>& paths, unsigned long long free_before) {
    for (const std::string& p : paths) unlink(p.c_str());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (FreeBytes() + 4 * kMiB < free_before && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  static blkcnt_t Blocks(int fd) {
    struct stat st {};
    EXPECT_EQ(fstat(fd, &st), 0);
    return st.st_blocks;
  }
};

TEST_F(Space, StatfsDescribesTheFilesystem) {
  const struct statvfs sv = StatFs();
  EXPECT_GT(sv.f_bsize, 0u);
  EXPECT_GT(sv.f_frsize, 0u);
  EXPECT_GT(sv.f_blocks, 0u);
  EXPECT_LE(sv.f_bfree, sv.f_blocks);
  EXPECT_LE(sv.f_bavail, sv.f_bfree);
  EXPECT_LE(sv.f_ffree, sv.f_files);
  EXPECT_EQ(sv.f_namemax, 255u);
}

TEST_F(Space, FreeBlocksDropAfterWriting16MiBAndComeBackAfterUnlink) {
  const unsigned long long before = FreeBytes();
  const int fd = open(Path("f").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_SYS(fd);
  WriteZeros(fd, 16 * kMiB);
  ASSERT_SYS(fsync(fd));
  close(fd);
  const unsigned long long written = FreeBytes();
  EXPECT_GE(before - std::min(before, written), 16ull * kMiB)
      << "free bytes before " << before << ", after writing " << written;
  ASSERT_SYS(unlink(Path("f").c_str()));
  // Frees may be lazy: give them a few seconds.
  unsigned long long after = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    after = FreeBytes();
    if (after + kMiB / 4 >= before) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_GE(after + kMiB / 4, before) << "free bytes before " << before << ", after unlink "
                                      << after;
}

TEST_F(Space, FallocateAllocatesZerosAndExtendsUnlessKeepSize) {
  const int fd = open(Path("f").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_SYS(fd);
  ASSERT_SYS(fallocate(fd, 0, 0, 4 * kMiB));
  struct stat st {};
  ASSERT_SYS(fstat(fd, &st));
  EXPECT_EQ(st.st_size, 4 * kMiB);
  EXPECT_GE(st.st_blocks * 512, 4 * kMiB);
  std::string buf(4 * kMiB, 'x');
  ASSERT_EQ(pread(fd, buf.data(), buf.size(), 0), 4 * kMiB);
  EXPECT_TRUE(buf == std::string(4 * kMiB, '\0')) << "preallocated space reads as zeros";
  ASSERT_SYS(fallocate(fd, FALLOC_FL_KEEP_SIZE, 4 * kMiB, 4 * kMiB));
  ASSERT_SYS(fstat(fd, &st));
  EXPECT_EQ(st.st_size, 4 * kMiB);
  EXPECT_GE(st.st_blocks * 512, 8 * kMiB);
  EXPECT_ERRNO(EINVAL, fallocate(fd, 0, 0, 0));
  close(fd);
}

TEST_F(Space, PunchHoleZerosTheRangeAndFreesItsBlocks) {
  const int fd = open(Path("f").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_SYS(fd);
  WriteZeros(fd, 8 * kMiB);
  ASSERT_SYS(fsync(fd));
  const blkcnt_t full = Blocks(fd);
  ASSERT_SYS(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, kMiB, 4 * kMiB));
  struct stat st {};
  ASSERT_SYS(fstat(fd, &st));
  EXPECT_EQ(st.st_size, 8 * kMiB);
  EXPECT_LE(st.st_blocks * 512, full * 512 - 4 * kMiB) << "the hole's blocks are freed";
  std::string buf(6 * kMiB, '?');
  ASSERT_EQ(pread(fd, buf.data(), buf.size(), 0), 6 * kMiB);
  EXPECT_TRUE(buf.substr(0, kMiB) == std::string(kMiB, 'z'));
  EXPECT_TRUE(buf.substr(kMiB, 4 * kMiB) == std::string(4 * kMiB, '\0')) << "hole reads zeros";
  EXPECT_TRUE(buf.substr(5 * kMiB) == std::string(kMiB, 'z'));
  // Unaligned punch: partial blocks are zeroed, not freed.
  ASSERT_SYS(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 6 * kMiB + 100, 5000));
  std::string part(5200, '?');
  ASSERT_EQ(pread(fd, part.data(), part.size(), 6 * kMiB), 5200);
  EXPECT_EQ(part, std::string(100, 'z') + std::string(5000, '\0') + std::string(100, 'z'));
  EXPECT_ERRNO(EOPNOTSUPP, fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4096))
      << "punching a hole needs KEEP_SIZE";
  close(fd);
}

TEST_F(Space, ZeroRangeZeroesTheRangeKeepsItAllocatedAndGrowsTheFileOnlyWithoutKeepSize) {
  const int fd = open(Path("f").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_SYS(fd);
  WriteZeros(fd, 4 * kMiB);  // 'z' bytes, through the page cache (kept: keep_cache)
  ASSERT_SYS(fsync(fd));
  const blkcnt_t full = Blocks(fd);
  // Unaligned at both ends: partial blocks zeroed, whole ones in between.
  ASSERT_SYS(fallocate(fd, FALLOC_FL_ZERO_RANGE, kMiB + 100, 2 * kMiB));
  std::string buf(4 * kMiB, '?');
  ASSERT_EQ(pread(fd, buf.data(), buf.size(), 0), 4 * kMiB);
  EXPECT_TRUE(buf.substr(0, kMiB + 100) == std::string(kMiB + 100, 'z'));
  EXPECT_TRUE(buf.substr(kMiB + 100, 2 * kMiB) == std::string(2 * kMiB, '\0')) << "the range reads zeros";
  EXPECT_TRUE(buf.substr(3 * kMiB + 100) == std::string(kMiB - 100, 'z'));
  struct stat st {};
  ASSERT_SYS(fstat(fd, &st));
  EXPECT_EQ(st.st_size, 4 * kMiB) << "inside the file the size stays";
  EXPECT_GE(st.st_blocks, full) << "the zeroed range keeps its blocks";
  // Past the end with KEEP_SIZE: allocated, the size unchanged.
  ASSERT_SYS(fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 4 * kMiB, kMiB));
  ASSERT_SYS(fstat(fd, &st));
  EXPECT_EQ(st.st_size, 4 * kMiB);
  EXPECT_GE(st.st_blocks * 512, 5 * kMiB);
  // Past the end without it: the file grows over zeros.
  ASSERT_SYS(fallocate(fd, FALLOC_FL_ZERO_RANGE, 5 * kMiB, kMiB + 5));
  ASSERT_SYS(fstat(fd, &st));
  EXPECT_EQ(st.st_size, 6 * kMiB + 5);
  EXPECT_GE(st.st_blocks * 512, 6 * kMiB + 5);
  std::string tail(2 * kMiB + 5, '?');
  ASSERT_EQ(pread(fd, tail.data(), tail.size(), 4 * kMiB), 2 * kMiB + 5);
  EXPECT_TRUE(tail == std::string(2 * kMiB + 5, '\0'));
  // Writes into the zeroed range land as usual.
  ASSERT_EQ(pwrite(fd, "back", 4, 2 * kMiB), 4);
  close(fd);
  if (OnWalfs()) Remount();
  const std::string after = ReadFile(Path("f"));
  ASSERT_EQ(after.size(), 6 * kMiB + 5);
  std::string want(6 * kMiB + 5, '\0');
  want.replace(0, kMiB + 100, std::string(kMiB + 100, 'z'));
  want.replace(3 * kMiB + 100, kMiB - 100, std::string(kMiB - 100, 'z'));
  want.replace(2 * kMiB, 4, "back");
  EXPECT_TRUE(after == want) << "after a remount";
}

TEST_F(Space, SeekDataAndSeekHoleFindTheExtentsOfASparseFile) {
  const int fd = open(Path("f").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_SYS(fd);
  const std::string block(4096, 'd');
  ASSERT_EQ(pwrite(fd, block.data(), 4096, 0), 4096);
  ASSERT_EQ(pwrite(fd, block.data(), 4096, kMiB), 4096);
  ASSERT_SYS(ftruncate(fd, 2 * kMiB));
  ASSERT_SYS(fsync(fd));
  EXPECT_EQ(lseek(fd, 0, SEEK_DATA), 0);
  EXPECT_EQ(lseek(fd, 0, SEEK_HOLE), 4096);
  EXPECT_EQ(lseek(fd, 4096, SEEK_DATA), kMiB);
  EXPECT_EQ(lseek(fd, kMiB + 10, SEEK_DATA), kMiB + 10);
  EXPECT_EQ(lseek(fd, kMiB, SEEK_HOLE), kMiB + 4096);
  EXPECT_EQ(lseek(fd, kMiB + 4096, SEEK_HOLE), kMiB + 4096);
  EXPECT_ERRNO(ENXIO, lseek(fd, kMiB + 4096, SEEK_DATA)) << "no data after the last extent";
  EXPECT_ERRNO(ENXIO, lseek(fd, 2 * kMiB, SEEK_HOLE)) << "at end of file";
  EXPECT_EQ(lseek(fd, 2 * kMiB - 1, SEEK_HOLE), 2 * kMiB - 1);
  close(fd);
}

// A 64 MiB image, so filling it is quick.
class SmallImage : public Space {
 public:
  static void SetUpTestSuite() {
    MountConfig c;
    c.image_size = "64m";
    MountSuite(c);
  }
};

TEST_F(SmallImage, WritingUntilENOSPCThenDeletingLetsWritesSucceedAgain) {
  if (FsBytes() > 1024 * kMiB) {
    GTEST_SKIP() << "filesystem under test is " << FsBytes() << " bytes; ENOSPC needs <= 1 GiB";
  }
  const unsigned long long start_free = FreeBytes();
  const int fd = open(Path("fill").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_SYS(fd);
  const std::string buf(kMiB, 'f');
  off_t written = 0;
  int err = 0;
  for (;;) {
    const ssize_t n = write(fd, buf.data(), buf.size());
    if (n < 0) {
      err = errno;
      break;
    }
    written += n;
    ASSERT_LE(written, static_cast<off_t>(FsBytes())) << "wrote more than the filesystem holds";
  }
  EXPECT_EQ(err, ENOSPC) << strerrorname_np(err);
  struct stat filled {};
  ASSERT_SYS(fstat(fd, &filled));
  EXPECT_EQ(filled.st_size, written) << "a short write's bytes, and only those, are in the file";
  // With write-back caching the error may surface only here; it may not be
  // lost in between.
  const int fsync_r = fsync(fd);
  EXPECT_TRUE(fsync_r == 0 || errno == ENOSPC) << strerrorname_np(errno);
  close(fd);
  EXPECT_GE(written, static_cast<off_t>(start_free / 2)) << "most free space is writable";
  EXPECT_ERRNO(ENOSPC, [&] {
    const int f2 = open(Path("more").c_str(), O_WRONLY | O_CREAT, 0644);
    if (f2 < 0) return -1;
    const ssize_t n = write(f2, buf.data(), buf.size());
    const int e = errno;
    close(f2);
    errno = e;
    return n < 0 ? -1 : static_cast<int>(n);
  }());

  ASSERT_SYS(unlink(Path("fill").c_str()));
  unlink(Path("more").c_str());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (FreeBytes() < start_free - 4 * kMiB && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const int again = open(Path("again").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_SYS(again);
  WriteZeros(again, 16 * kMiB);
  EXPECT_SYS(fsync(again));
  close(again);
  struct stat st {};
  ASSERT_SYS(stat(Path("again").c_str(), &st));
  EXPECT_EQ(st.st_size, 16 * kMiB);
}

// Fills the filesystem with the file at `path` (buffered 1 MiB writes, then
// 4 KiB ones, each until ENOSPC) and returns its size.
off_t FillUp(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  EXPECT_NE(fd, -1) << strerrorname_np(errno);
  if (fd < 0) return 0;
  const std::string buf(kMiB, 'f');
  for (const std::size_t len : {std::size_t{1} << 20, std::size_t{4096}}) {
    ssize_t n = 0;
    while ((n = write(fd, buf.data(), len)) > 0) {
    }
    EXPECT_EQ(errno, ENOSPC) << "filling: " << strerrorname_np(errno);
  }
  struct stat st {};
  EXPECT_EQ(fstat(fd, &st), 0);
  close(fd);
  return st.st_size;
}

// The file's bytes are a prefix of `want` of exactly its size.
::testing::AssertionResult HoldsPrefixOf(const std::string& path, const std::string& want, off_t size) {
  const std::string got = Slurp(path);
  if (static_cast<off_t>(got.size()) != size)
    return ::testing::AssertionFailure() << path << " has " << got.size() << " bytes, its size says " << size;
  if (got.size() > want.size() || want.compare(0, got.size(), got) != 0)
    return ::testing::AssertionFailure() << path << ": its " << got.size() << " bytes are not what was written";
  return ::testing::AssertionSuccess();
}

// `dd oflag=direct` on a nearly full image: the kernel's FUSE direct-I/O
// path turns a short WRITE reply into EIO (and truncates what it wrote), so
// walfs must answer a direct write whole or ENOSPC; a buffered write may be
// short (the kernel passes that on) and then ENOSPC.  Never EIO.
TEST_F(SmallImage, ODirectAndBufferedWritesOnANearlyFullDiskGetENOSPCNeverEIO) {
  if (FsBytes() > 1024 * kMiB) GTEST_SKIP() << "filesystem under test is too big to fill";
  const unsigned long long free_before = FreeBytes();
  const off_t filled = FillUp(Path("fill"));
  ASSERT_GT(filled, 0);
  // Room for a quarter of a 1 MiB write.
  ASSERT_SYS(truncate(Path("fill").c_str(), filled - kMiB / 4));

  void* mem = nullptr;
  ASSERT_EQ(posix_memalign(&mem, 4096, kMiB), 0);
  std::unique_ptr<char, decltype(&free)> aligned(static_cast<char*>(mem), &free);
  std::string data(kMiB, '\0');
  for (off_t i = 0; i < kMiB; ++i) data[i] = static_cast<char>('a' + i % 23);
  std::memcpy(aligned.get(), data.data(), kMiB);

  // Written until it fails; every call is a whole or short count or ENOSPC.
  auto write_until_full = [&](int fd, const char* buf, const char* what) {
    off_t total = 0;
    for (int i = 0; i < 64; ++i) {
      errno = 0;
      const ssize_t n = pwrite(fd, buf, kMiB, total);
      if (n < 0) {
        EXPECT_EQ(errno, ENOSPC) << what << ": " << strerrorname_np(errno) << " after " << total << " bytes";
        return total;
      }
      total += n;
      if (total >= kMiB) break;
      buf += n;
    }
    ADD_FAILURE() << what << ": " << total << " bytes fitted where a quarter MiB was free";
    return total;
  };

  const int direct = open(Path("d1").c_str(), O_WRONLY | O_CREAT | O_DIRECT, 0644);
  ASSERT_SYS(direct) << "O_DIRECT open";
  const off_t direct_written = write_until_full(direct, aligned.get(), "O_DIRECT");
  struct stat st {};
  ASSERT_SYS(fstat(direct, &st));
  EXPECT_EQ(st.st_size, direct_written) << "the size covers what the writes said, no more";
  close(direct);
  EXPECT_TRUE(HoldsPrefixOf(Path("d1"), data, st.st_size));

  const int buffered = open(Path("b1").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_SYS(buffered);
  const off_t buffered_written = write_until_full(buffered, data.data(), "buffered");
  ASSERT_SYS(fstat(buffered, &st));
  EXPECT_EQ(st.st_size, buffered_written);
  close(buffered);
  EXPECT_TRUE(HoldsPrefixOf(Path("b1"), data, st.st_size));

  Empty({Path("fill"), Path("d1"), Path("b1")}, free_before);
}

// An editor saves by writing a temporary file and renaming it over the
// original; on a full disk the write may fail but the rename must not:
// replacing a name, or adding one where its directory has room, needs no
// new block (XFS retries such renames without a block reservation).
TEST_F(SmallImage, RenamesThatNeedNoNewBlockWorkOnAFullDisk) {
  if (FsBytes() > 1024 * kMiB) GTEST_SKIP() << "filesystem under test is too big to fill";
  const unsigned long long free_before = FreeBytes();
  WriteFile(Path("doc"), "old version");
  WriteFile(Path("doc.tmp"), "new version");
  ASSERT_SYS(mkdir(Path("sub").c_str(), 0755));
  WriteFile(Path("sub/x"), "x");
  ASSERT_GT(FillUp(Path("fill")), 0);
  {
    // The editor's write may fail now; its file keeps what it had.
    const int fd = open(Path("doc.tmp").c_str(), O_WRONLY | O_APPEND);
    ASSERT_SYS(fd);
    const std::string more(kMiB, 'm');
    const ssize_t n = write(fd, more.data(), more.size());
    EXPECT_TRUE(n >= 0 || errno == ENOSPC) << strerrorname_np(errno);
    close(fd);
  }
  ASSERT_SYS(rename(Path("doc.tmp").c_str(), Path("doc").c_str())) << "save by rename over the original";
  EXPECT_EQ(ReadFile(Path("doc")).substr(0, 11), "new version");
  struct stat st {};
  EXPECT_ERRNO(ENOENT, lstat(Path("doc.tmp").c_str(), &st));
  ASSERT_SYS(rename(Path("doc").c_str(), Path("doc.renamed").c_str())) << "a new name in the same directory";
  ASSERT_SYS(rename(Path("sub/x").c_str(), Path("sub/y").c_str()));
  ASSERT_SYS(rename(Path("doc.renamed").c_str(), Path("sub/doc").c_str())) << "into another directory with room";
  EXPECT_EQ(ReadFile(Path("sub/doc")).substr(0, 11), "new version");
  EXPECT_EQ(ReadFile(Path("sub/y")), "x");
  EXPECT_EQ(ListDir(Path("sub")).size(), 2u);
  Empty({Path("fill"), Path("sub/doc"), Path("sub/y")}, free_before);
}

}  // namespace
}  // namespace space_test
}  // namespace walfs::testing
