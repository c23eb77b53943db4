// SEEK_DATA and SEEK_HOLE see what the kernel's page cache holds: a file
// being written is copied whole by programs that skip holes (cp, tar
// --sparse, rsync), as on ext4 and XFS, which count dirty cached data as
// data.  The kernel asks walfs (FUSE_LSEEK) without writing its cache back
// first, so walfs has it written back before it answers for a file someone
// writes through the cache (mount/fuse_server.cc, Lseek).  A file nobody
// writes keeps its holes in the answer, so sparse copies stay sparse.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace seek_cached_test {  // this file's own names (unity builds share one TU)
namespace {

constexpr off_t kMiB = 1 << 20;

class SeekCached : public MountedFs {
 protected:
  // Copies `from` to `to` as a sparse-aware copy does: the data ranges
  // SEEK_DATA/SEEK_HOLE report, and nothing else (the rest reads as zeros).
  static std::string SparseCopy(int fd, off_t size) {
    std::string out(static_cast<std::size_t>(size), '\0');
    off_t pos = 0;
    while (pos < size) {
      const off_t data = lseek(fd, pos, SEEK_DATA);
      if (data < 0) break;  // ENXIO: no data past pos
      const off_t hole = lseek(fd, data, SEEK_HOLE);
      if (hole < 0) break;
      for (off_t at = data; at < hole;) {
        const ssize_t n = pread(fd, out.data() + at, static_cast<std::size_t>(hole - at), at);
        if (n <= 0) break;
        at += n;
      }
      pos = hole;
    }
    return out;
  }
};

TEST_F(SeekCached, ALiveFileCopiesWholeWhileItsWriterKeepsItOpen) {
  const int w = open(Path("live").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_SYS(w);
  ASSERT_SYS(ftruncate(w, 64 * kMiB));
  const std::string mib(kMiB, 'L');
  ASSERT_EQ(pwrite(w, mib.data(), mib.size(), 8 * kMiB), kMiB);
  // No fsync: the MiB is in the kernel's cache only.
  const int r = open(Path("live").c_str(), O_RDONLY);
  ASSERT_SYS(r);
  const off_t data = lseek(r, 0, SEEK_DATA);
  EXPECT_GE(data, 0) << "SEEK_DATA called the written MiB a hole: " << strerrorname_np(errno);
  EXPECT_LE(data, 8 * kMiB);
  EXPECT_GE(lseek(r, 8 * kMiB, SEEK_HOLE), 9 * kMiB);
  std::string want(64 * kMiB, '\0');
  want.replace(8 * kMiB, kMiB, mib);
  EXPECT_TRUE(SparseCopy(r, 64 * kMiB) == want) << "a sparse-aware copy lost data";
  // cp itself, while the writer still holds the file open.
  ASSERT_EQ(pwrite(w, "tail", 4, 40 * kMiB), 4);
  want.replace(40 * kMiB, 4, "tail");
  const std::string cmd = "cp --sparse=auto '" + Path("live") + "' '" + Path("copy") + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_TRUE(ReadFile(Path("copy")) == want) << "cp of the live file is not byte-identical";
  close(r);
  close(w);
}

TEST_F(SeekCached, StoresThroughASharedMappingAreData) {
  const int fd = open(Path("mapped").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_SYS(fd);
  ASSERT_SYS(ftruncate(fd, 32 * kMiB));
  void* p = mmap(nullptr, 32 * kMiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  close(fd);  // the mapping keeps the file open; its stores stay in the cache
  static_cast<char*>(p)[20 * kMiB + 5] = 'm';
  const int r = open(Path("mapped").c_str(), O_RDONLY);
  ASSERT_SYS(r);
  const off_t data = lseek(r, 16 * kMiB, SEEK_DATA);
  EXPECT_GE(data, 0) << "SEEK_DATA called a mapped store a hole: " << strerrorname_np(errno);
  EXPECT_LE(data, 20 * kMiB + 5);
  char c = 0;
  EXPECT_EQ(pread(r, &c, 1, 20 * kMiB + 5), 1);
  EXPECT_EQ(c, 'm');
  close(r);
  munmap(p, 32 * kMiB);
}

TEST_F(SeekCached, DirectAndCachedWritesMixedAreAllData) {
  const int cached = open(Path("mix").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_SYS(cached);
  ASSERT_SYS(ftruncate(cached, 48 * kMiB));
  const int direct = open(Path("mix").c_str(), O_RDWR | O_DIRECT);
  ASSERT_SYS(direct);
  void* buf = nullptr;
  ASSERT_EQ(posix_memalign(&buf, 4096, 4096), 0);
  std::memset(buf, 'D', 4096);
  ASSERT_EQ(pwrite(direct, buf, 4096, 30 * kMiB), 4096);
  free(buf);
  ASSERT_EQ(pwrite(cached, "cached", 6, 40 * kMiB), 6);
  EXPECT_EQ(lseek(direct, 0, SEEK_DATA), 30 * kMiB) << "the direct write is the first data";
  const off_t second = lseek(direct, 30 * kMiB + 4096, SEEK_DATA);
  EXPECT_GE(second, 0) << "SEEK_DATA called the cached write a hole: " << strerrorname_np(errno);
  EXPECT_LE(second, 40 * kMiB);
  close(direct);
  close(cached);
}

TEST_F(SeekCached, AFileNobodyWritesKeepsItsHoles) {
  const int w = open(Path("sparse").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_SYS(w);
  ASSERT_SYS(ftruncate(w, 16 * kMiB));
  ASSERT_EQ(pwrite(w, "x", 1, 8 * kMiB), 1);
  close(w);  // the kernel writes its pages back before the release
  const int r = open(Path("sparse").c_str(), O_RDONLY);
  ASSERT_SYS(r);
  EXPECT_EQ(lseek(r, 0, SEEK_DATA), 8 * kMiB);
  EXPECT_EQ(lseek(r, 8 * kMiB, SEEK_HOLE), 8 * kMiB + 4096);
  EXPECT_ERRNO(ENXIO, lseek(r, 8 * kMiB + 4096, SEEK_DATA));
  close(r);
}

// With one worker nobody could serve the write-back a cached writer's
// LSEEK needs: walfs refuses it (ENOSYS) and the kernel answers from then
// on by itself, calling everything before the end of file data.
class SeekCachedOneWorker : public SeekCached {
 public:
  static void SetUpTestSuite() { MountSuite({.options = {"max_threads=1"}}); }
};

TEST_F(SeekCachedOneWorker, ALiveFileIsAllDataAndCopiesWhole) {
  const int w = open(Path("live").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_SYS(w);
  ASSERT_SYS(ftruncate(w, 16 * kMiB));
  ASSERT_EQ(pwrite(w, "live", 4, 8 * kMiB), 4);
  const int r = open(Path("live").c_str(), O_RDONLY);
  ASSERT_SYS(r);
  const off_t data = lseek(r, 0, SEEK_DATA);
  EXPECT_GE(data, 0) << strerrorname_np(errno);
  EXPECT_LE(data, 8 * kMiB);
  std::string want(16 * kMiB, '\0');
  want.replace(8 * kMiB, 4, "live");
  EXPECT_TRUE(SparseCopy(r, 16 * kMiB) == want);
  close(r);
  close(w);
}

}  // namespace
}  // namespace seek_cached_test
}  // namespace walfs::testing
