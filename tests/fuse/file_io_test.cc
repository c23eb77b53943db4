// File data: reads and writes at offsets, appends, holes, a large file,
// truncation, fsync, files that live on after their last name is gone, and
// copy_file_range.  Allocation (fallocate, SEEK_DATA) is in space_test.cc.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace file_io_test {  // this file's own names (unity builds share one TU)
namespace {

constexpr off_t kMiB = 1 << 20;

// The byte every pattern file holds at `off`: differs between neighbouring
// bytes, blocks and MiBs, so a misplaced block shows.
char PatternByte(off_t off) {
  const uint64_t x = static_cast<uint64_t>(off);
  return static_cast<char>((x * 131) ^ (x >> 12) ^ (x >> 20) * 7);
}

std::string Pattern(off_t off, size_t len) {
  std::string s(len, '\0');
  for (size_t i = 0; i < len; ++i) s[i] = PatternByte(off + static_cast<off_t>(i));
  return s;
}

class FileIo : public MountedFs {
 protected:
  int Open(const std::string& rel, int flags = O_RDWR | O_CREAT) {
    const int fd = open(Path(rel).c_str(), flags | O_CLOEXEC, 0644);
    EXPECT_NE(fd, -1) << rel << ": " << strerrorname_np(errno);
    return fd;
  }
  static std::string PRead(int fd, size_t len, off_t off) {
    std::string s(len, '\0');
    const ssize_t n = pread(fd, s.data(), len, off);
    EXPECT_NE(n, -1) << strerrorname_np(errno);
    s.resize(n < 0 ? 0 : n);
    return s;
  }
  static void PWrite(int fd, const std::string& data, off_t off) {
    ASSERT_EQ(pwrite(fd, data.data(), data.size(), off), static_cast<ssize_t>(data.size()))
        << "at " << off << ": " << strerrorname_np(errno);
  }
  static struct stat FStat(int fd) {
    struct stat st {};
    EXPECT_EQ(fstat(fd, &st), 0);
    return st;
  }
};

TEST_F(FileIo, ReadsReturnWhatWritesPutAtEachOffset) {
  const int fd = Open("f");
  ASSERT_GE(fd, 0);
  PWrite(fd, "hello", 0);
  PWrite(fd, "world", 100);
  PWrite(fd, "HE", 1);
  EXPECT_EQ(FStat(fd).st_size, 105);
  EXPECT_EQ(PRead(fd, 5, 0), "hHElo");
  EXPECT_EQ(PRead(fd, 95, 5), std::string(95, '\0')) << "the gap reads as zeros";
  EXPECT_EQ(PRead(fd, 100, 100), "world") << "reads stop at end of file";
  EXPECT_EQ(PRead(fd, 10, 200), "");
  // The file offset moves with read and write.
  ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
  char buf[3];
  ASSERT_EQ(read(fd, buf, 3), 3);
  ASSERT_EQ(write(fd, "XY", 2), 2);
  EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 5);
  EXPECT_EQ(PRead(fd, 5, 0), "hHEXY");
  close(fd);
}

TEST_F(FileIo, AppendsFromTwoDescriptorsNeverOverwriteEachOther) {
  const int a = Open("log", O_WRONLY | O_CREAT | O_APPEND);
  const int b = Open("log", O_WRONLY | O_APPEND);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  std::string expect;
  for (int i = 0; i < 200; ++i) {
    const std::string rec = (i % 2 ? "b" : "a") + std::to_string(i) + ";";
    ASSERT_EQ(write(i % 2 ? b : a, rec.data(), rec.size()), static_cast<ssize_t>(rec.size()));
    expect += rec;
  }
  close(a);
  close(b);
  EXPECT_EQ(ReadFile(Path("log")), expect);
}

TEST_F(FileIo, SparseFileAtOneGiBHoldsFewBlocksAndItsHolesReadZero) {
  const int fd = Open("sparse");
  ASSERT_GE(fd, 0);
  const off_t at = 1024 * kMiB;
  PWrite(fd, Pattern(at, 4096), at);
  ASSERT_SYS(fsync(fd));
  const struct stat st = FStat(fd);
  EXPECT_EQ(st.st_size, at + 4096);
  EXPECT_LE(st.st_blocks * 512, 1 * kMiB) << "a hole is not allocated";
  EXPECT_EQ(PRead(fd, 4096, 0), std::string(4096, '\0'));
  EXPECT_EQ(PRead(fd, 8192, 512 * kMiB - 4096), std::string(8192, '\0'));
  EXPECT_EQ(PRead(fd, 4096, at), Pattern(at, 4096));
  close(fd);
}

TEST_F(FileIo, A64MiBFileReadsBackItsPattern) {
  const int fd = Open("big");
  ASSERT_GE(fd, 0);
  for (off_t off = 0; off < 64 * kMiB; off += kMiB) PWrite(fd, Pattern(off, kMiB), off);
  ASSERT_SYS(fsync(fd));
  close(fd);
  const int rd = Open("big", O_RDONLY);
  ASSERT_GE(rd, 0);
  EXPECT_EQ(FStat(rd).st_size, 64 * kMiB);
  // Odd-sized reads so no read lines up with what was written.
  const size_t chunk = kMiB + 4097;
  for (off_t off = 0; off < 64 * kMiB; off += chunk) {
    const size_t len = std::min<off_t>(chunk, 64 * kMiB - off);
    const std::string got = PRead(rd, chunk, off);
    ASSERT_EQ(got.size(), len) << "at " << off;
    ASSERT_TRUE(got == Pattern(off, len)) << "data differs in [" << off << ", +" << len << ")";
  }
  close(rd);
}

TEST_F(FileIo, OddSizedWritesAcrossBlockBoundariesMatchAModel) {
  const int fd = Open("f");
  ASSERT_GE(fd, 0);
  std::mt19937 rng(42);
  std::string model;
  for (int i = 0; i < 300; ++i) {
    const off_t off = rng() % (3 * kMiB);
    const size_t len = 1 + rng() % 20000;
    std::string data(len, '\0');
    for (auto& c : data) c = static_cast<char>(rng());
    if (model.size() < off + len) model.resize(off + len, '\0');
    model.replace(off, len, data);
    PWrite(fd, data, off);
  }
  // Around every 4 KiB boundary explicitly as well.
  for (off_t b = 4096; b < 64 * 1024; b += 4096) {
    const std::string data = Pattern(b * 3, 3);
    model.replace(b - 1, 3, data);
    PWrite(fd, data, b - 1);
  }
  EXPECT_EQ(FStat(fd).st_size, static_cast<off_t>(model.size()));
  close(fd);
  EXPECT_TRUE(ReadFile(Path("f")) == model) << "file differs from the model";
}

TEST_F(FileIo, FsyncAndFdatasyncSucceed) {
  const int fd = Open("f");
  ASSERT_GE(fd, 0);
  PWrite(fd, "durable", 0);
  EXPECT_SYS(fsync(fd));
  PWrite(fd, "more", 7);
  EXPECT_SYS(fdatasync(fd));
  close(fd);
  const int dfd = open(Path().c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_SYS(dfd);
  EXPECT_SYS(fsync(dfd)) << "fsync of a directory";
  EXPECT_SYS(syncfs(dfd));
  close(dfd);
}

TEST_F(FileIo, TruncateDownThenUpReadsZerosBeyondTheCut) {
  const int fd = Open("f");
  ASSERT_GE(fd, 0);
  PWrite(fd, Pattern(0, 3 * 4096), 0);
  ASSERT_SYS(ftruncate(fd, 5000));  // mid-block: the block's tail must be zeroed
  EXPECT_EQ(FStat(fd).st_size, 5000);
  ASSERT_SYS(ftruncate(fd, 3 * 4096));
  EXPECT_EQ(PRead(fd, 5000, 0), Pattern(0, 5000));
  EXPECT_EQ(PRead(fd, 3 * 4096 - 5000, 5000), std::string(3 * 4096 - 5000, '\0'));
  // By path as well, and up far beyond the data.
  ASSERT_SYS(truncate(Path("f").c_str(), 100));
  ASSERT_SYS(truncate(Path("f").c_str(), 10 * kMiB));
  EXPECT_EQ(FStat(fd).st_size, 10 * kMiB);
  EXPECT_EQ(PRead(fd, 100, 0), Pattern(0, 100));
  EXPECT_EQ(PRead(fd, 4096, 100), std::string(4096, '\0'));
  EXPECT_EQ(PRead(fd, 4096, 10 * kMiB - 4096), std::string(4096, '\0'));
  ASSERT_SYS(ftruncate(fd, 0));
  EXPECT_EQ(FStat(fd).st_size, 0);
  EXPECT_ERRNO(EINVAL, ftruncate(fd, -1));
  ASSERT_SYS(mkdir(Path("d").c_str(), 0755));
  EXPECT_ERRNO(EISDIR, truncate(Path("d").c_str(), 0));
  close(fd);
}

TEST_F(FileIo, AnUnlinkedOpenFileStaysReadableAndWritableUntilClosed) {
  const int fd = Open("f");
  ASSERT_GE(fd, 0);
  PWrite(fd, "before", 0);
  ASSERT_SYS(unlink(Path("f").c_str()));
  struct stat st {};
  EXPECT_ERRNO(ENOENT, lstat(Path("f").c_str(), &st));
  EXPECT_EQ(FStat(fd).st_nlink, 0u);
  PWrite(fd, Pattern(0, 2 * kMiB), 6);
  EXPECT_EQ(PRead(fd, 6, 0), "before");
  EXPECT_EQ(PRead(fd, 2 * kMiB, 6), Pattern(0, 2 * kMiB));
  ASSERT_SYS(ftruncate(fd, 3));
  EXPECT_EQ(PRead(fd, 10, 0), "bef");
  // A new file under the old name is a different file.
  WriteFile(Path("f"), "new");
  EXPECT_EQ(PRead(fd, 10, 0), "bef");
  close(fd);
  EXPECT_EQ(ReadFile(Path("f")), "new");
}

TEST_F(FileIo, CopyFileRangeCopiesBetweenFilesAtOffsets) {
  const size_t len = kMiB + 123;
  WriteFile(Path("src"), Pattern(0, 2 * kMiB));
  const int in = Open("src", O_RDONLY);
  const int out = Open("dst", O_WRONLY | O_CREAT);
  ASSERT_GE(in, 0);
  ASSERT_GE(out, 0);
  loff_t in_off = 7;
  loff_t out_off = 4096 + 5;
  size_t copied = 0;
  while (copied < len) {
    const ssize_t n = copy_file_range(in, &in_off, out, &out_off, len - copied, 0);
    ASSERT_GT(n, 0) << strerrorname_np(errno);
    copied += n;
  }
  EXPECT_EQ(in_off, static_cast<loff_t>(7 + len));
  EXPECT_EQ(out_off, static_cast<loff_t>(4096 + 5 + len));
  close(in);
  close(out);
  const std::string dst = ReadFile(Path("dst"));
  ASSERT_EQ(dst.size(), 4096 + 5 + len);
  EXPECT_EQ(dst.substr(0, 4101), std::string(4101, '\0'));
  EXPECT_TRUE(dst.substr(4101) == Pattern(7, len)) << "copied data differs";
}

}  // namespace
}  // namespace file_io_test
}  // namespace walfs::testing
