// Specs of FileMap (fs/file_map.h): mapping extents (merging with a
// contiguous left neighbour of the same kind), Overlapping, Unmap cutting
// extents (pieces kept, the cut returned for the caller to free), MarkWritten
// splitting unwritten extents, the move from 21 inline records to a B+tree
// and everything again after it, NextFrom (SEEK_DATA) and DestroySome.
// Disk block numbers are only numbers here: FileMap never frees data blocks
// (the caller does), so the specs map made-up ranges.
#include "fs/file_map.h"

#include <sys/stat.h>

#include <map>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fs/fs_test_fixture.h"

namespace walfs::fs {
namespace {

using format::Extent;
using format::ForkFormat;
using format::InodeCore;


Extent E(std::uint64_t file_block, std::uint64_t disk_block, std::uint32_t length, bool unwritten = false) {
  return Extent{file_block, disk_block, length, unwritten};
}

std::string Show(const std::vector<Extent>& es) {
  std::string s;
  for (const Extent& e : es)
    s += "[" + std::to_string(e.file_block) + "+" + std::to_string(e.length) + "@" + std::to_string(e.disk_block) +
         (e.unwritten ? " u" : "") + "] ";
  return s;
}

class FileMapTest : public testing::FsFixture {
 protected:
  void SetUp() override {
    FsFixture::SetUp();
    maps_ = std::make_unique<FileMap>(cache_.get(), alloc_.get(), &sb_);
    file_.ino = sb_.root_ino;  // the tree's owner and allocation goal
    file_.mode = S_IFREG | 0644;
    file_.nlink = 1;
    file_.literal.assign(format::kLiteralSize, '\0');
    FileMap::InitEmpty(&file_);
  }
  void TearDown() override {
    maps_.reset();
    FsFixture::TearDown();
  }


  template <typename Fn>
  auto Change(Fn fn) {
    auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kWrite);
    EXPECT_TRUE(tx.ok()) << tx.status().ToString();
    auto r = fn(&*tx);
    Status c = tx->Commit().status();
    EXPECT_TRUE(c.ok()) << c.ToString();
    return r;
  }
  Status Map(const Extent& e) {
    return Change([&](FsTransaction* tx) { return maps_->Map(tx, &file_, e); });
  }
  // Unmaps [first, end) completely, max_extents per call; returns what was cut.
  std::vector<Extent> Unmap(std::uint64_t first, std::uint64_t end, std::uint32_t max_extents = 1000,
                            int* calls = nullptr) {
    std::vector<Extent> freed;
    for (int n = 1;; ++n) {
      Result<bool> done =
          Change([&](FsTransaction* tx) { return maps_->Unmap(tx, &file_, first, end, max_extents, &freed); });
      EXPECT_TRUE(done.ok()) << done.status().ToString();
      if (!done.ok() || *done || n > 10000) {
        if (calls) *calls = n;
        return freed;
      }
    }
  }
  int MarkWritten(std::uint64_t first, std::uint64_t end) {
    for (int n = 1;; ++n) {
      Result<bool> done = Change([&](FsTransaction* tx) { return maps_->MarkWritten(tx, &file_, first, end); });
      EXPECT_TRUE(done.ok()) << done.status().ToString();
      if (!done.ok() || *done || n > 10000) return n;
    }
  }
  std::vector<Extent> All() { return Over(0, UINT64_MAX / 2); }
  std::vector<Extent> Over(std::uint64_t first, std::uint64_t end) {
    auto r = maps_->Overlapping(file_, first, end);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<Extent>{};
  }
  std::optional<Extent> Next(std::uint64_t first) {
    auto r = maps_->NextFrom(file_, first);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::nullopt;
  }
  std::uint32_t TreeBlocks() {
    std::uint32_t n = 0;
    EXPECT_TRUE(maps_->ForEachBlock(file_, [&](std::uint64_t) { ++n; }).ok());
    return n;
  }
  // n separate one-block extents at file blocks 0, 2, 4, ... (never contiguous on disk).
  void MapSparse(std::uint32_t n, std::uint64_t first_file = 0) {
    for (std::uint32_t i = 0; i < n; ++i)
      ASSERT_TRUE(Map(E(first_file + 2 * i, 100000 + 10 * (first_file + i), 1)).ok()) << i;
  }

  std::unique_ptr<FileMap> maps_;
  InodeCore file_;
};

TEST_F(FileMapTest, AnEmptyMapHasNoExtents) {
  EXPECT_EQ(file_.format, ForkFormat::kExtents);
  EXPECT_EQ(file_.nextents, 0u);
  EXPECT_TRUE(All().empty());
  EXPECT_FALSE(Next(0).has_value());
  EXPECT_TRUE(Over(5, 5).empty()) << "an empty range overlaps nothing";
  EXPECT_TRUE(Unmap(0, 100).empty());
  EXPECT_EQ(MarkWritten(0, 100), 1);
}

TEST_F(FileMapTest, AContiguousExtentMergesWithItsLeftNeighbour) {
  ASSERT_TRUE(Map(E(0, 5000, 4)).ok());
  ASSERT_TRUE(Map(E(4, 5004, 4)).ok());
  EXPECT_EQ(All(), std::vector<Extent>{E(0, 5000, 8)});
  EXPECT_EQ(file_.nextents, 1u);
  // Contiguous in the file but not on disk: a new record.
  ASSERT_TRUE(Map(E(8, 9000, 2)).ok());
  // Contiguous on disk but of the other kind: a new record.
  ASSERT_TRUE(Map(E(10, 9002, 2, true)).ok());
  ASSERT_TRUE(Map(E(12, 9004, 2, true)).ok());
  EXPECT_EQ(All(), (std::vector<Extent>{E(0, 5000, 8), E(8, 9000, 2), E(10, 9002, 4, true)})) << Show(All());
  EXPECT_EQ(file_.nextents, 3u);
}

TEST_F(FileMapTest, AMergeNeverExceedsTheLongestExtent) {
  ASSERT_TRUE(Map(E(0, 100000, format::kMaxExtentLength)).ok());
  ASSERT_TRUE(Map(E(format::kMaxExtentLength, 100000 + format::kMaxExtentLength, 1)).ok());
  const std::vector<Extent> all = All();
  ASSERT_EQ(all.size(), 2u) << Show(all);
  EXPECT_EQ(all[0].length, format::kMaxExtentLength);
  EXPECT_EQ(all[1], E(format::kMaxExtentLength, 100000 + format::kMaxExtentLength, 1));
}

TEST_F(FileMapTest, OverlappingReturnsTheExtentsTouchingARangeInOrder) {
  ASSERT_TRUE(Map(E(20, 3000, 5)).ok());  // out of order on purpose
  ASSERT_TRUE(Map(E(0, 1000, 5)).ok());
  ASSERT_TRUE(Map(E(10, 2000, 5)).ok());
  EXPECT_EQ(Over(0, 1), std::vector<Extent>{E(0, 1000, 5)});
  EXPECT_EQ(Over(4, 10), std::vector<Extent>{E(0, 1000, 5)});
  EXPECT_TRUE(Over(5, 10).empty());
  EXPECT_EQ(Over(4, 11), (std::vector<Extent>{E(0, 1000, 5), E(10, 2000, 5)}));
  EXPECT_EQ(Over(0, 100), (std::vector<Extent>{E(0, 1000, 5), E(10, 2000, 5), E(20, 3000, 5)}));
  EXPECT_EQ(Over(24, 25), std::vector<Extent>{E(20, 3000, 5)});
  EXPECT_TRUE(Over(25, 1000).empty());
}

TEST_F(FileMapTest, UnmapInTheMiddleSplitsAnExtentAndReturnsTheCut) {
  ASSERT_TRUE(Map(E(0, 1000, 10)).ok());
  const std::vector<Extent> freed = Unmap(3, 6);
  EXPECT_EQ(freed, std::vector<Extent>{E(3, 1003, 3)});
  EXPECT_EQ(All(), (std::vector<Extent>{E(0, 1000, 3), E(6, 1006, 4)})) << Show(All());
  EXPECT_EQ(file_.nextents, 2u);
}

TEST_F(FileMapTest, UnmapTrimsEdgesAndSpansSeveralExtentsInBoundedSteps) {
  ASSERT_TRUE(Map(E(0, 1000, 4)).ok());
  ASSERT_TRUE(Map(E(10, 2000, 4, true)).ok());
  ASSERT_TRUE(Map(E(20, 3000, 4)).ok());
  int calls = 0;
  std::vector<Extent> freed = Unmap(2, 22, 1, &calls);
  EXPECT_EQ(calls, 3) << "one extent per call";
  // Freed from the front, the first extents first (each call looks at no
  // more than it cuts); the unwritten flag travels with the cut.
  EXPECT_EQ(freed, (std::vector<Extent>{E(2, 1002, 2), E(10, 2000, 4, true), E(20, 3000, 2)})) << Show(freed);
  EXPECT_EQ(All(), (std::vector<Extent>{E(0, 1000, 2), E(22, 3002, 2)})) << Show(All());
  // Unmapping a hole cuts nothing.
  EXPECT_TRUE(Unmap(5, 20).empty());
}

TEST_F(FileMapTest, MarkWrittenSplitsAnUnwrittenExtentIntoThree) {
  ASSERT_TRUE(Map(E(0, 1000, 10, true)).ok());
  EXPECT_EQ(MarkWritten(3, 6), 1) << "one extent changed, and the call says none is left";
  EXPECT_EQ(All(), (std::vector<Extent>{E(0, 1000, 3, true), E(3, 1003, 3), E(6, 1006, 4, true)})) << Show(All());
  // Edges: the head and the tail.
  MarkWritten(0, 1);
  MarkWritten(9, 10);
  EXPECT_EQ(All(), (std::vector<Extent>{E(0, 1000, 1), E(1, 1001, 2, true), E(3, 1003, 3), E(6, 1006, 3, true),
                                        E(9, 1009, 1)}))
      << Show(All());
  // Over everything: written throughout; written extents are left alone.
  MarkWritten(0, 10);
  for (const Extent& e : All()) EXPECT_FALSE(e.unwritten) << Show(All());
  std::uint64_t blocks = 0;
  for (const Extent& e : All()) blocks += e.length;
  EXPECT_EQ(blocks, 10u);
}

TEST_F(FileMapTest, APieceMadeWrittenJoinsTheWrittenNeighboursItContinues) {
  ASSERT_TRUE(Map(E(0, 1000, 10, true)).ok());
  MarkWritten(3, 6);
  // The head of what is left joins the written piece on its right ...
  MarkWritten(0, 3);
  EXPECT_EQ(All(), (std::vector<Extent>{E(0, 1000, 6), E(6, 1006, 4, true)})) << Show(All());
  // ... the tail the one on its left: one record again.
  MarkWritten(6, 10);
  EXPECT_EQ(All(), std::vector<Extent>{E(0, 1000, 10)}) << Show(All());
  EXPECT_EQ(file_.nextents, 1u);
}

TEST_F(FileMapTest, AnUnwrittenExtentBetweenTwoWrittenOnesJoinsBoth) {
  ASSERT_TRUE(Map(E(0, 1000, 3)).ok());
  ASSERT_TRUE(Map(E(3, 1003, 4, true)).ok());
  ASSERT_TRUE(Map(E(7, 1007, 3)).ok());
  ASSERT_EQ(All().size(), 3u);
  EXPECT_EQ(MarkWritten(3, 7), 1);
  EXPECT_EQ(All(), std::vector<Extent>{E(0, 1000, 10)}) << Show(All());
  EXPECT_EQ(file_.nextents, 1u);
  // The same for the way back (FALLOC_FL_ZERO_RANGE): unwritten joins unwritten.
  ASSERT_TRUE(Map(E(20, 2000, 3, true)).ok());
  ASSERT_TRUE(Map(E(23, 2003, 3)).ok());
  ASSERT_TRUE(Map(E(26, 2006, 3, true)).ok());
  EXPECT_TRUE(Change([&](FsTransaction* tx) { return maps_->MarkUnwritten(tx, &file_, 23, 26); }).ok());
  EXPECT_EQ(Over(20, 30), std::vector<Extent>{E(20, 2000, 9, true)}) << Show(All());
  EXPECT_EQ(file_.nextents, 2u);
}

TEST_F(FileMapTest, APieceJoinsNoNeighbourElsewhereOnDiskOrPastTheLongestExtent) {
  ASSERT_TRUE(Map(E(0, 1000, 3)).ok());
  ASSERT_TRUE(Map(E(3, 5000, 3, true)).ok());  // not where block 2 ends on disk
  MarkWritten(3, 6);
  EXPECT_EQ(All(), (std::vector<Extent>{E(0, 1000, 3), E(3, 5000, 3)})) << Show(All());
  const std::uint32_t max = format::kMaxExtentLength;
  ASSERT_TRUE(Map(E(100, 100000, max)).ok());
  ASSERT_TRUE(Map(E(100 + max, 100000 + max, 2, true)).ok());
  MarkWritten(100 + max, 102 + max);
  EXPECT_EQ(Over(100, 102 + max), (std::vector<Extent>{E(100, 100000, max), E(100 + max, 100000 + max, 2)}))
      << Show(All());
}

TEST_F(FileMapTest, JoinsInsideATreeKeepTheRecordCount) {
  MapSparse(FileMap::kInlineExtents + 1);
  ASSERT_EQ(file_.format, ForkFormat::kBtree);
  ASSERT_TRUE(Map(E(100, 50000, 20, true)).ok());
  MarkWritten(105, 110);
  MarkWritten(110, 120);
  EXPECT_EQ(Over(100, 120), (std::vector<Extent>{E(100, 50000, 5, true), E(105, 50005, 15)})) << Show(All());
  MarkWritten(100, 105);
  EXPECT_EQ(Over(100, 120), std::vector<Extent>{E(100, 50000, 20)}) << Show(All());
  EXPECT_EQ(file_.nextents, All().size());
}

// Many leaves of records contiguous on disk whose states alternate: random
// state changes join pieces across leaf boundaries (and empty leaves), and
// the map keeps agreeing with a block oracle; marking everything written
// at the end leaves one record.
TEST_F(FileMapTest, StateChangesAcrossManyLeavesJoinAndAgreeWithABlockOracle) {
  constexpr std::uint64_t kExtents = 1200, kLen = 2, kDisk = 300000;
  std::vector<bool> unwritten(kExtents * kLen);
  for (std::uint64_t i = 0; i < kExtents; ++i) {
    ASSERT_TRUE(Map(E(i * kLen, kDisk + i * kLen, kLen, i % 2 == 1)).ok()) << i;
    for (std::uint64_t x = 0; x < kLen; ++x) unwritten[i * kLen + x] = i % 2 == 1;
  }
  ASSERT_EQ(file_.nextents, kExtents);
  ASSERT_GT(TreeBlocks(), 4u) << "several leaves";
  std::mt19937_64 rng(5);
  for (int round = 0; round < 300; ++round) {
    const std::uint64_t first = rng() % (kExtents * kLen), len = 1 + rng() % 30;
    const std::uint64_t end = std::min(first + len, kExtents * kLen);
    const bool to_unwritten = rng() % 3 == 0;
    for (int n = 0;; ++n) {
      Result<bool> done = Change([&](FsTransaction* tx) {
        return to_unwritten ? maps_->MarkUnwritten(tx, &file_, first, end) : maps_->MarkWritten(tx, &file_, first, end);
      });
      ASSERT_TRUE(done.ok()) << done.status().ToString();
      if (*done) break;
      ASSERT_LT(n, 100);
    }
    for (std::uint64_t x = first; x < end; ++x) unwritten[x] = to_unwritten;
  }
  std::uint64_t at = 0;
  for (const Extent& e : All()) {
    ASSERT_EQ(e.file_block, at) << "no holes, no overlaps";
    EXPECT_EQ(e.disk_block, kDisk + e.file_block);
    for (std::uint64_t x = e.file_block; x < e.file_block + e.length; ++x) EXPECT_EQ(unwritten[x], e.unwritten) << x;
    at += e.length;
  }
  EXPECT_EQ(at, kExtents * kLen);
  EXPECT_EQ(file_.nextents, All().size());
  MarkWritten(0, kExtents * kLen);
  EXPECT_EQ(All(), std::vector<Extent>{E(0, kDisk, kExtents * kLen)}) << All().size() << " records";
  EXPECT_EQ(file_.nextents, 1u);
}

TEST_F(FileMapTest, TwentyOneExtentsStayInlineAndTheTwentySecondMakesATree) {
  const std::uint32_t free_before = FreeBlocks();
  MapSparse(FileMap::kInlineExtents);
  EXPECT_EQ(file_.format, ForkFormat::kExtents);
  EXPECT_EQ(file_.nextents, FileMap::kInlineExtents);
  EXPECT_EQ(TreeBlocks(), 0u);
  const std::vector<Extent> inline_all = All();
  ASSERT_TRUE(Map(E(1000, 777777, 3)).ok());
  EXPECT_EQ(file_.format, ForkFormat::kBtree);
  EXPECT_EQ(file_.nextents, FileMap::kInlineExtents + 1);
  EXPECT_EQ(TreeBlocks(), 1u);
  EXPECT_EQ(FreeBlocks(), free_before - 1);
  std::vector<Extent> expect = inline_all;
  expect.push_back(E(1000, 777777, 3));
  EXPECT_EQ(All(), expect);
}

TEST_F(FileMapTest, ATreeMapMergesOverlapsUnmapsAndMarksWritten) {
  MapSparse(FileMap::kInlineExtents + 1);
  ASSERT_EQ(file_.format, ForkFormat::kBtree);
  const std::uint32_t n = file_.nextents;
  // Merge with a left neighbour inside the tree.
  ASSERT_TRUE(Map(E(1, 100001, 1)).ok());  // block 0 is at 100000
  EXPECT_EQ(file_.nextents, n);
  EXPECT_EQ(Over(0, 2), std::vector<Extent>{E(0, 100000, 2)});
  // Overlapping finds an extent that starts before the range.
  ASSERT_TRUE(Map(E(100, 50000, 20, true)).ok());
  EXPECT_EQ(Over(110, 111), std::vector<Extent>{E(100, 50000, 20, true)});
  // MarkWritten and Unmap split inside the tree.
  MarkWritten(105, 110);
  EXPECT_EQ(Over(100, 120),
            (std::vector<Extent>{E(100, 50000, 5, true), E(105, 50005, 5), E(110, 50010, 10, true)}))
      << Show(Over(100, 120));
  std::vector<Extent> freed = Unmap(107, 112);
  EXPECT_EQ(freed, (std::vector<Extent>{E(107, 50007, 3), E(110, 50010, 2, true)})) << Show(freed);
  EXPECT_EQ(Over(100, 120), (std::vector<Extent>{E(100, 50000, 5, true), E(105, 50005, 2),
                                                 E(112, 50012, 8, true)}))
      << Show(Over(100, 120));
  // nextents follows the records in the tree.
  EXPECT_EQ(file_.nextents, All().size());
}

TEST_F(FileMapTest, UnmappingEverythingKeepsTheTreeUntilDestroySomeFreesIt) {
  const std::uint32_t free_before = FreeBlocks();
  MapSparse(600);  // several leaves
  ASSERT_EQ(file_.format, ForkFormat::kBtree);
  const std::uint32_t blocks = TreeBlocks();
  EXPECT_GT(blocks, 1u);
  EXPECT_EQ(free_before - FreeBlocks(), blocks);
  // DestroySome while records remain is only for an unmapped file; unmap first.
  std::vector<Extent> freed = Unmap(0, UINT64_MAX / 2, 50);
  EXPECT_EQ(freed.size(), 600u);
  EXPECT_TRUE(All().empty());
  EXPECT_EQ(file_.nextents, 0u);
  EXPECT_FALSE(Next(0).has_value());
  // Erasing records frees emptied nodes; whatever is left goes in steps.
  int steps = 0;
  for (bool done = false; !done; ++steps) {
    Result<bool> r = Change([&](FsTransaction* tx) { return maps_->DestroySome(tx, &file_, 1); });
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    done = *r;
    ASSERT_LT(steps, 1000);
  }
  EXPECT_EQ(file_.format, ForkFormat::kExtents);
  EXPECT_EQ(file_.nextents, 0u);
  EXPECT_EQ(TreeBlocks(), 0u);
  EXPECT_EQ(FreeBlocks(), free_before);
  // The map works again, inline.
  ASSERT_TRUE(Map(E(0, 1234, 1)).ok());
  EXPECT_EQ(All(), std::vector<Extent>{E(0, 1234, 1)});
}

TEST_F(FileMapTest, DestroySomeFreesATreeInBoundedSteps) {
  const std::uint32_t free_before = FreeBlocks();
  MapSparse(800);
  const std::uint32_t blocks = TreeBlocks();
  ASSERT_GT(blocks, 3u);
  // The records are dropped (the caller unmapped the data first in real use).
  std::uint32_t prev = blocks;
  int steps = 0;
  for (bool done = false; !done; ++steps) {
    Result<bool> r = Change([&](FsTransaction* tx) { return maps_->DestroySome(tx, &file_, 2); });
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    done = *r;
    const std::uint32_t now = done ? 0 : TreeBlocks();
    EXPECT_LT(now, prev) << "each call makes progress";
    EXPECT_EQ(free_before - FreeBlocks(), now) << "step " << steps;
    prev = now;
  }
  EXPECT_GT(steps, 1);
  EXPECT_EQ(file_.format, ForkFormat::kExtents);
  EXPECT_EQ(FreeBlocks(), free_before);
  // On an inline map, DestroySome simply empties it.
  ASSERT_TRUE(Map(E(0, 1, 1)).ok());
  Result<bool> r = Change([&](FsTransaction* tx) { return maps_->DestroySome(tx, &file_, 1); });
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(*r);
  EXPECT_TRUE(All().empty());
}

TEST_F(FileMapTest, NextFromFindsTheExtentCoveringOrFollowingABlock) {
  for (int phase = 0; phase < 2; ++phase) {
    if (phase == 1) {
      MapSparse(FileMap::kInlineExtents + 5, 1000);  // far away: makes a tree
      ASSERT_EQ(file_.format, ForkFormat::kBtree);
    } else {
      ASSERT_TRUE(Map(E(10, 5000, 5)).ok());
      ASSERT_TRUE(Map(E(30, 6000, 5, true)).ok());
    }
    EXPECT_EQ(Next(0), E(10, 5000, 5));
    EXPECT_EQ(Next(12), E(10, 5000, 5)) << "covering";
    EXPECT_EQ(Next(14), E(10, 5000, 5));
    EXPECT_EQ(Next(15), E(30, 6000, 5, true)) << "unwritten extents hold data too";
    EXPECT_EQ(Next(34), E(30, 6000, 5, true));
    if (phase == 0) {
      EXPECT_FALSE(Next(35).has_value());
    } else {
      EXPECT_EQ(Next(35)->file_block, 1000u);
      EXPECT_EQ(Next(1001)->file_block, 1002u);
      EXPECT_FALSE(Next(1000 + 2 * (FileMap::kInlineExtents + 5)).has_value());
    }
  }
}

TEST_F(FileMapTest, RandomMapsAndUnmapsAgreeWithABlockOracle) {
  std::mt19937_64 rng(21);
  std::map<std::uint64_t, std::pair<std::uint64_t, bool>> oracle;  // file block -> disk block, unwritten
  std::uint64_t next_disk = 200000;
  for (int round = 0; round < 400; ++round) {
    const std::uint64_t first = rng() % 2000;
    const std::uint64_t len = 1 + rng() % 40;
    if (rng() % 3 != 0) {
      // Map the holes of [first, first + len).
      for (std::uint64_t b = first; b < first + len;) {
        if (oracle.count(b)) { ++b; continue; }
        std::uint64_t e = b;
        while (e < first + len && !oracle.count(e)) ++e;
        const bool unwritten = rng() % 2;
        ASSERT_TRUE(Map(E(b, next_disk, static_cast<std::uint32_t>(e - b), unwritten)).ok());
        for (std::uint64_t x = b; x < e; ++x) oracle[x] = {next_disk + (x - b), unwritten};
        next_disk += (e - b) + (rng() % 2);  // sometimes contiguous with the next run
        b = e;
      }
    } else if (rng() % 2) {
      std::vector<Extent> freed = Unmap(first, first + len, 1 + rng() % 3);
      std::uint64_t cut = 0;
      for (const Extent& f : freed) {
        for (std::uint64_t x = 0; x < f.length; ++x) {
          ASSERT_TRUE(oracle.count(f.file_block + x));
          EXPECT_EQ(oracle[f.file_block + x].first, f.disk_block + x);
        }
        cut += f.length;
      }
      std::uint64_t expect = 0;
      for (std::uint64_t x = first; x < first + len; ++x) expect += oracle.erase(x);
      EXPECT_EQ(cut, expect);
    } else {
      MarkWritten(first, first + len);
      for (std::uint64_t x = first; x < first + len; ++x)
        if (oracle.count(x)) oracle[x].second = false;
    }
  }
  std::map<std::uint64_t, std::pair<std::uint64_t, bool>> seen;
  std::uint64_t prev_end = 0;
  for (const Extent& e : All()) {
    EXPECT_GE(e.file_block, prev_end) << "extents never overlap";
    prev_end = e.file_block + e.length;
    for (std::uint64_t x = 0; x < e.length; ++x) seen[e.file_block + x] = {e.disk_block + x, e.unwritten};
  }
  EXPECT_EQ(seen, oracle);
  EXPECT_EQ(file_.nextents, All().size());
}

}  // namespace
}  // namespace walfs::fs
