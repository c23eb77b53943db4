// Specs of a file's data through the Filesystem (fs/filesystem.h): Read and
// Write (short reads, holes, unaligned overwrites, large files, a random
// model), truncation through SetAttr, a fragmented file's extent tree, and
// SEEK_DATA / SEEK_HOLE.  Fallocate is in filesystem_fallocate_test.cc.
#include <linux/falloc.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "tests/fs/filesystem_fixture.h"

namespace walfs::fs {
namespace {

using testing::Err;
using testing::FilesystemTest;
using testing::kBs;
using testing::Pattern;
using testing::SameBytes;

TEST_F(FilesystemTest, TruncateRefusesDirectoriesSpecialFilesAndNegativeSizes) {
  const std::uint64_t d = Mkdir(root_, "d");
  const std::uint64_t fifo = Create(root_, "fifo", S_IFIFO | 0600);
  const std::uint64_t f = Create(root_, "f");
  struct stat a {};
  a.st_size = 10;
  EXPECT_EQ(Err(fs_->SetAttr(d, a, kSetSize)), EISDIR);
  EXPECT_EQ(Err(fs_->SetAttr(fifo, a, kSetSize)), EINVAL);
  a.st_size = -1;
  EXPECT_EQ(Err(fs_->SetAttr(f, a, kSetSize)), EINVAL);
  a.st_size = static_cast<off_t>((std::uint64_t{1} << 50) + 1);
  EXPECT_EQ(Err(fs_->SetAttr(f, a, kSetSize)), EFBIG);
  EXPECT_EQ(Stat(f).st_size, 0);
}

TEST_F(FilesystemTest, TruncateDownZeroesTheTailSoGrowingAgainReadsZeros) {
  const std::uint64_t f = Create(root_, "f");
  const std::uint64_t free_before = FreeBlocks();
  const std::string data(3 * kBs, 'a');
  Write(f, 0, data);
  EXPECT_EQ(free_before - FreeBlocks(), 3u);
  Truncate(f, 5000);
  EXPECT_EQ(Stat(f).st_size, 5000);
  EXPECT_EQ(free_before - FreeBlocks(), 2u) << "the block past the new end is freed";
  EXPECT_EQ(Stat(f).st_blocks, 2 * 8);
  Truncate(f, 3 * kBs);
  const std::string back = ReadAll(f);
  ASSERT_EQ(back.size(), 3 * kBs);
  EXPECT_TRUE(SameBytes(back.substr(0, 5000), std::string(5000, 'a')));
  EXPECT_TRUE(SameBytes(back.substr(5000), std::string(3 * kBs - 5000, '\0')));
  // The same through a write past the end rather than a truncate up.
  Truncate(f, 100);
  Write(f, 2 * kBs, "zz");
  const std::string w = ReadAll(f);
  ASSERT_EQ(w.size(), 2 * kBs + 2);
  EXPECT_TRUE(SameBytes(w.substr(0, 100), std::string(100, 'a')));
  EXPECT_TRUE(SameBytes(w.substr(100, 2 * kBs - 100), std::string(2 * kBs - 100, '\0')));
  EXPECT_TRUE(SameBytes(w.substr(2 * kBs), "zz"));
  Remount();
  EXPECT_TRUE(SameBytes(ReadAll(f), w));
  Truncate(f, 0);
  EXPECT_EQ(FreeBlocks(), free_before);
  EXPECT_EQ(Stat(f).st_blocks, 0);
}

TEST_F(FilesystemTest, ReadsPastTheEndAreShortAndDirectoriesCannotBeReadOrWritten) {
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, "abc");
  EXPECT_TRUE(SameBytes(Read(f, 1, 100), "bc"));
  EXPECT_TRUE(SameBytes(Read(f, 3, 100), ""));
  EXPECT_TRUE(SameBytes(Read(f, 1000, 100), ""));
  const std::uint64_t d = Mkdir(root_, "d");
  char buf[8];
  EXPECT_EQ(Err(fs_->Read(d, 0, 8, buf)), EISDIR);
  EXPECT_EQ(Err(fs_->Write(d, 0, "x", 1)), EINVAL);
  EXPECT_EQ(Err(fs_->Write(f, std::uint64_t{1} << 50, "x", 1)), EFBIG);
  auto zero = fs_->Write(f, 0, "", 0);
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(*zero, 0u);
  EXPECT_EQ(Stat(f).st_size, 3);
}

TEST_F(FilesystemTest, ASparseWriteLeavesAHoleThatReadsZeros) {
  const std::uint64_t f = Create(root_, "f");
  const std::uint64_t free_before = FreeBlocks();
  Write(f, 1 << 20, "tail");
  EXPECT_EQ(Stat(f).st_size, (1 << 20) + 4);
  EXPECT_EQ(free_before - FreeBlocks(), 1u);
  EXPECT_EQ(Stat(f).st_blocks, 8);
  const std::string all = ReadAll(f);
  EXPECT_TRUE(SameBytes(all.substr(0, 1 << 20), std::string(1 << 20, '\0')));
  EXPECT_TRUE(SameBytes(all.substr(1 << 20), "tail"));
}

TEST_F(FilesystemTest, UnalignedWritesAndOverwritesReadBackExactly) {
  const std::uint64_t f = Create(root_, "f");
  std::string model;
  auto put = [&](std::uint64_t off, const std::string& s) {
    Write(f, off, s);
    if (model.size() < off + s.size()) model.resize(off + s.size(), '\0');
    model.replace(off, s.size(), s);
  };
  put(4090, Pattern(100, 1));        // across a block boundary
  put(4095, "0123456789");           // overwrite inside it
  put(1, "x");                       // into the hole before
  put(3 * kBs - 3, Pattern(7, 2));   // a new block, not contiguous
  put(4000, Pattern(9000, 3));       // over everything
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_TRUE(SameBytes(Read(f, 4093, 11), model.substr(4093, 11)));
  Remount();
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
}

TEST_F(FilesystemTest, AWriteAcrossSeveralExtentsAndHolesFillsTheHoles) {
  const std::uint64_t f = Create(root_, "f");
  std::string model(12 * kBs, '\0');
  auto put = [&](std::uint64_t off, const std::string& s) {
    Write(f, off, s);
    model.replace(off, s.size(), s);
  };
  put(0, Pattern(4 * kBs, 1));
  put(8 * kBs, Pattern(4 * kBs, 2));
  Create(root_, "spacer");  // so the next allocation is not contiguous
  put(2 * kBs + 17, Pattern(8 * kBs - 40, 3));
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_EQ(Stat(f).st_blocks, 12 * 8);
  Truncate(f, 0);
}

TEST_F(FilesystemTest, TenMiBWithAPatternReadsBackInOddChunks) {
  const std::uint64_t f = Create(root_, "f");
  const std::string data = Pattern(10 << 20, 42);
  for (std::size_t off = 0; off < data.size(); off += 1 << 20)
    Write(f, off, std::string_view(data).substr(off, 1 << 20));
  EXPECT_EQ(Stat(f).st_size, 10 << 20);
  EXPECT_EQ(Stat(f).st_blocks, (10 << 20) / 512);
  for (std::size_t off = 0; off < data.size(); off += 65537) {
    const std::size_t n = std::min<std::size_t>(65537, data.size() - off);
    ASSERT_TRUE(SameBytes(Read(f, off, n), data.substr(off, n))) << "at " << off;
  }
  Remount();
  EXPECT_TRUE(SameBytes(ReadAll(f), data));
}

TEST_F(FilesystemTest, RandomWritesAndTruncatesAgreeWithAStringModel) {
  const std::uint64_t f = Create(root_, "f");
  std::mt19937_64 rng(7);
  std::string model;
  for (int i = 0; i < 300; ++i) {
    const std::uint64_t op = rng() % 10;
    if (op < 7) {
      const std::uint64_t off = rng() % (300 * 1024);
      const std::string s = Pattern(1 + rng() % 20000, i);
      Write(f, off, s);
      if (model.size() < off + s.size()) model.resize(off + s.size(), '\0');
      model.replace(off, s.size(), s);
    } else if (op < 9) {
      const std::uint64_t size = rng() % (320 * 1024);
      Truncate(f, size);
      model.resize(size, '\0');
    } else {
      const std::uint64_t off = rng() % (300 * 1024), len = 1 + rng() % 50000;
      ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len).ok());
      if (off < model.size()) {
        const std::uint64_t end = std::min<std::uint64_t>(model.size(), off + len);
        std::fill(model.begin() + off, model.begin() + end, '\0');
      }
    }
    ASSERT_EQ(static_cast<std::uint64_t>(Stat(f).st_size), model.size()) << "op " << i;
    if (i % 25 == 0) {
      ASSERT_TRUE(SameBytes(ReadAll(f), model)) << "op " << i;
    }
  }
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  Remount();
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
}

TEST_F(FilesystemTest, AFragmentedFileGetsAnExtentTreeAndGivesItBack) {
  const struct statvfs before = StatFs();
  const std::uint64_t f = Create(root_, "frag");
  ASSERT_TRUE(fs_->SetXattr(f, "user.x", "beside a tree", 0).ok());
  std::string model(119 * kBs, '\0');  // the last block written is 118
  // Every other block first: 60 separate extents, well past the 21 inline.
  for (int b = 0; b < 120; b += 2) {
    const std::string d = Pattern(kBs, b);
    Write(f, b * kBs, d);
    model.replace(b * kBs, kBs, d);
  }
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  // Then the holes, unaligned.
  for (int b = 1; b < 120; b += 4) {
    const std::string d = Pattern(kBs + 100, 1000 + b);
    Write(f, b * kBs - 50, d);
    model.replace(b * kBs - 50, d.size(), d);
  }
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  auto hole = fs_->Lseek(f, 0, SEEK_HOLE);
  ASSERT_TRUE(hole.ok());
  EXPECT_EQ(*hole, 3 * kBs);
  Remount();
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_EQ(*fs_->GetXattr(f, "user.x"), "beside a tree");
  Truncate(f, 37 * kBs + 5);
  model.resize(37 * kBs + 5);
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 3 * kBs, 20 * kBs).ok());
  std::fill(model.begin() + 3 * kBs, model.begin() + 23 * kBs, '\0');
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  UnlinkAndForget(root_, "frag");
  EXPECT_EQ(StatFs().f_bfree, before.f_bfree);
  EXPECT_EQ(StatFs().f_ffree, before.f_ffree);
}

TEST_F(FilesystemTest, SeekDataAndSeekHoleFollowTheExtentMap) {
  const std::uint64_t f = Create(root_, "f");
  Write(f, 2 * kBs, Pattern(2 * kBs, 1));  // data in blocks 2-3
  Write(f, 6 * kBs, Pattern(kBs, 2));      // and 6
  Truncate(f, 8 * kBs + 100);              // a hole at the end
  auto seek = [&](std::uint64_t off, int whence) -> std::int64_t {
    auto r = fs_->Lseek(f, off, whence);
    return r.ok() ? static_cast<std::int64_t>(*r) : -Err(r);
  };
  EXPECT_EQ(seek(0, SEEK_DATA), static_cast<std::int64_t>(2 * kBs));
  EXPECT_EQ(seek(0, SEEK_HOLE), 0);
  EXPECT_EQ(seek(2 * kBs + 5, SEEK_DATA), static_cast<std::int64_t>(2 * kBs + 5));
  EXPECT_EQ(seek(2 * kBs + 5, SEEK_HOLE), static_cast<std::int64_t>(4 * kBs));
  EXPECT_EQ(seek(4 * kBs, SEEK_DATA), static_cast<std::int64_t>(6 * kBs));
  EXPECT_EQ(seek(6 * kBs, SEEK_HOLE), static_cast<std::int64_t>(7 * kBs));
  EXPECT_EQ(seek(7 * kBs, SEEK_DATA), -ENXIO);
  EXPECT_EQ(seek(8 * kBs + 50, SEEK_HOLE), static_cast<std::int64_t>(8 * kBs + 50));
  EXPECT_EQ(seek(8 * kBs + 100, SEEK_DATA), -ENXIO);
  EXPECT_EQ(seek(8 * kBs + 100, SEEK_HOLE), -ENXIO);
  EXPECT_EQ(seek(0, SEEK_SET), -EINVAL);
  // A file that is all data: the only hole is the end.
  const std::uint64_t g = Create(root_, "g");
  Write(g, 0, Pattern(3 * kBs + 1, 3));
  auto h = fs_->Lseek(g, 10, SEEK_HOLE);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, 3 * kBs + 1);
}

}  // namespace
}  // namespace walfs::fs
