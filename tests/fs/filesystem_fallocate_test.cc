// Specs of the Filesystem's Fallocate (fs/filesystem.h): preallocated
// (unwritten) blocks that read as zeros, writes into them with and without
// zeroout_kb, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE,
// FALLOC_FL_ZERO_RANGE, and the modes, lengths and file types refused.
// Fallocate on a full filesystem is in filesystem_space_test.cc.
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fs/filesystem_fixture.h"

namespace walfs::fs {
namespace {

using testing::Err;
using testing::FilesystemTest;
using testing::kBs;
using testing::Pattern;
using testing::SameBytes;

TEST_F(FilesystemTest, FallocatedBlocksReadAsZerosUntilWritten) {
  const std::uint64_t f = Create(root_, "f");
  const std::uint64_t free_before = FreeBlocks();
  ASSERT_TRUE(fs_->Fallocate(f, 0, 0, 16 * kBs).ok());
  EXPECT_EQ(Stat(f).st_size, static_cast<off_t>(16 * kBs));
  EXPECT_EQ(Stat(f).st_blocks, 16 * 8);
  EXPECT_EQ(free_before - FreeBlocks(), 16u);
  EXPECT_TRUE(SameBytes(ReadAll(f), std::string(16 * kBs, '\0')));
  // A write into the middle: the rest of its block still reads zero.
  Write(f, 5000, "written");
  std::string model(16 * kBs, '\0');
  model.replace(5000, 7, "written");
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_EQ(free_before - FreeBlocks(), 16u) << "writing into fallocated space allocates nothing";
  // Fallocate over data changes nothing.
  ASSERT_TRUE(fs_->Fallocate(f, 0, 0, 2 * kBs).ok());
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  Remount();
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
}

// Random block writes into a preallocated file, fio's default: each write
// zeroes what is left of its unwritten extent beside it when that is within
// zeroout_kb, and joins the written neighbours it continues, so the map stays
// a few records, where splitting each extent in three (zeroout_kb=0) leaves
// about two per write.  The bytes read back are the same either way.
TEST_F(FilesystemTest, WritesIntoPreallocatedSpaceZeroOutSmallRemaindersAndKeepTheMapSmall) {
  constexpr std::uint64_t kBlocks = 512;
  std::vector<std::uint64_t> order;
  for (std::uint64_t b = 0; b < kBlocks; b += 2) order.push_back(b);  // every other block
  std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  std::map<std::uint32_t, std::uint32_t> records;
  for (const std::uint32_t kb : {32u, 0u}) {
    zeroout_kb_ = kb;
    Remount();
    const std::string name = "f" + std::to_string(kb);
    const std::uint64_t f = Create(root_, name);
    ASSERT_TRUE(fs_->Fallocate(f, 0, 0, kBlocks * kBs).ok());
    std::string model(kBlocks * kBs, '\0');
    const std::uint64_t zeroed_before = Counter("zeroout_blocks");
    for (const std::uint64_t b : order) {
      const std::string data(kBs, static_cast<char>('a' + b % 26));
      Write(f, b * kBs, data);
      model.replace(b * kBs, kBs, data);
    }
    // Without zeroout every write converts; with it, later writes land in
    // blocks an earlier one zeroed, and each conversion zeroes less than
    // its limit's worth.
    const std::uint64_t conversions = Counter("unwritten_conversions");
    const std::uint64_t zeroed = Counter("zeroout_blocks") - zeroed_before;
    if (kb == 0) {
      EXPECT_EQ(conversions, order.size());
      EXPECT_EQ(zeroed, 0u);
    } else {
      EXPECT_LT(conversions, order.size());
      EXPECT_GT(zeroed, 0u);
      EXPECT_LT(zeroed, conversions * (kb * 1024 / kBs));
    }
    EXPECT_TRUE(SameBytes(ReadAll(f), model)) << "zeroout_kb=" << kb;
    records[kb] = ExtentRecords(f);
    EXPECT_TRUE(SameBytes(ReadAll(f), model)) << "after a remount, zeroout_kb=" << kb;
  }
  EXPECT_GE(records[0], kBlocks / 2) << "a written extent per write, unwritten ones between";
  EXPECT_LE(records[32] * 8, records[0]) << records[32] << " records with zeroout, " << records[0] << " without";
}

TEST_F(FilesystemTest, FallocateKeepSizeAllocatesWithoutGrowingTheFile) {
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, "abc");
  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_KEEP_SIZE, 0, 8 * kBs).ok());
  EXPECT_EQ(Stat(f).st_size, 3);
  EXPECT_EQ(Stat(f).st_blocks, 8 * 8);
  EXPECT_TRUE(SameBytes(ReadAll(f), "abc"));
  // Growing into the preallocated blocks reads zeros there.
  Truncate(f, 5 * kBs);
  std::string model(5 * kBs, '\0');
  model.replace(0, 3, "abc");
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_EQ(Stat(f).st_blocks, 8 * 8) << "truncate up frees nothing";
}

TEST_F(FilesystemTest, PunchHoleZeroesPartialBlocksAndFreesWholeOnes) {
  const std::uint64_t f = Create(root_, "f");
  const std::string data = Pattern(4 * kBs, 9);
  Write(f, 0, data);
  const std::uint64_t free_before = FreeBlocks();
  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1000, 3 * kBs + 100 - 1000).ok());
  std::string model = data;
  std::fill(model.begin() + 1000, model.begin() + 3 * kBs + 100, '\0');
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_EQ(Stat(f).st_size, static_cast<off_t>(4 * kBs));
  EXPECT_EQ(FreeBlocks() - free_before, 2u) << "blocks 1 and 2 are whole inside the hole";
  EXPECT_EQ(Stat(f).st_blocks, 2 * 8);
  auto hole = fs_->Lseek(f, 0, SEEK_HOLE);
  ASSERT_TRUE(hole.ok());
  EXPECT_EQ(*hole, kBs);
  // Inside one block: zeroed in place, nothing freed.
  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 3 * kBs + 200, 10).ok());
  std::fill(model.begin() + 3 * kBs + 200, model.begin() + 3 * kBs + 210, '\0');
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_EQ(FreeBlocks() - free_before, 2u);
}

TEST_F(FilesystemTest, FallocateRefusesBadModesLengthsAndFileTypes) {
  const std::uint64_t f = Create(root_, "f");
  const std::uint64_t d = Mkdir(root_, "d");
  const std::uint64_t fifo = Create(root_, "fifo", S_IFIFO | 0600);
  EXPECT_EQ(Err(fs_->Fallocate(f, FALLOC_FL_PUNCH_HOLE, 0, kBs)), EOPNOTSUPP);
  EXPECT_EQ(Err(fs_->Fallocate(f, FALLOC_FL_COLLAPSE_RANGE, 0, kBs)), EOPNOTSUPP);
  EXPECT_EQ(Err(fs_->Fallocate(f, 0, 0, 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Fallocate(f, 0, std::uint64_t{1} << 50, kBs)), EFBIG);
  EXPECT_EQ(Err(fs_->Fallocate(d, 0, 0, kBs)), EISDIR);
  EXPECT_EQ(Err(fs_->Fallocate(fifo, 0, 0, kBs)), ENODEV);
  EXPECT_EQ(Stat(f).st_size, 0);
}

TEST_F(FilesystemTest, ZeroRangeZeroesDataHolesAndUnwrittenBlocksAndLeavesThemAllAllocated) {
  const std::uint64_t f = Create(root_, "f");
  const std::string data = Pattern(8 * kBs, 11);
  Write(f, 0, data);                                       // blocks 0-7 written
  ASSERT_TRUE(fs_->Fallocate(f, 0, 12 * kBs, 4 * kBs).ok());  // 8-11 a hole, 12-15 unwritten
  Write(f, 14 * kBs, "tail");
  const std::uint64_t free_before = FreeBlocks();
  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_ZERO_RANGE, 1000, 14 * kBs + 50 - 1000).ok());
  std::string model(16 * kBs, '\0');
  model.replace(0, 1000, data.substr(0, 1000));
  EXPECT_EQ(Stat(f).st_size, static_cast<off_t>(16 * kBs)) << "inside the file: the size stays";
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_EQ(free_before - FreeBlocks(), 4u) << "the hole is allocated, nothing else";
  EXPECT_EQ(Stat(f).st_blocks, 16 * 8);
  auto hole = fs_->Lseek(f, 0, SEEK_HOLE);
  ASSERT_TRUE(hole.ok());
  EXPECT_EQ(*hole, 16 * kBs) << "no hole is left in the range";
  // Writes into the zeroed range need no block and land as usual.
  Write(f, 3 * kBs + 7, "again");
  model.replace(3 * kBs + 7, 5, "again");
  EXPECT_EQ(free_before - FreeBlocks(), 4u);
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  Remount();
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  // Crash-safe too: fsynced, crashed, recovered.
  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_ZERO_RANGE, 0, kBs).ok());
  model.replace(0, kBs, std::string(kBs, '\0'));
  ASSERT_TRUE(fs_->Fsync(f, false).ok());
  Crash();
  Mount();
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
}

TEST_F(FilesystemTest, ZeroRangePastTheEndGrowsTheFileOnlyWithoutKeepSize) {
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, "abc");
  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 2, 4 * kBs).ok());
  EXPECT_EQ(Stat(f).st_size, 3);
  EXPECT_EQ(Stat(f).st_blocks, 5 * 8) << "allocated past the end";
  EXPECT_TRUE(SameBytes(ReadAll(f), std::string("ab\0", 3)));
  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_ZERO_RANGE, 6 * kBs, 100).ok());
  EXPECT_EQ(Stat(f).st_size, static_cast<off_t>(6 * kBs + 100));
  std::string model(6 * kBs + 100, '\0');
  model.replace(0, 2, "ab");
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_EQ(Err(fs_->Fallocate(f, FALLOC_FL_ZERO_RANGE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, kBs)),
            EOPNOTSUPP);
}

}  // namespace
}  // namespace walfs::fs
