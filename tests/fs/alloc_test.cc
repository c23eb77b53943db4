// Specs of the block allocator and the buffer cache under it: allocation
// near a goal, AG counters logged with every change, busy extents, running
// out of space, double frees, concurrency, and what recovery and fsck see.
#include "fs/alloc.h"

#include <atomic>
#include <chrono>
#include <future>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "base/coding.h"
#include "fs/format/ag_format.h"
#include "fs/format/block_types.h"
#include "fs/fsck.h"
#include "fs/mkfs.h"
#include "tests/fs/fs_test_fixture.h"

namespace walfs::fs {
namespace {

using format::BlockType;
using format::Extent;

class AllocTest : public testing::FsFixture {
 protected:
  Result<Extent> Alloc(AllocRequest r) {
    WALFS_ASSIGN_OR_RETURN(FsTransaction tx, FsTransaction::Begin(log_.get(), journal::TransType::kWrite));
    Result<Extent> e = alloc_->Alloc(&tx, r);
    if (!e.ok()) return e;
    WALFS_RETURN_IF_ERROR(tx.Commit().status());
    return e;
  }
  Status Free(const Extent& e) {
    WALFS_ASSIGN_OR_RETURN(FsTransaction tx, FsTransaction::Begin(log_.get(), journal::TransType::kTruncate));
    WALFS_RETURN_IF_ERROR(alloc_->Free(&tx, e.disk_block, e.length));
    return tx.Commit().status();
  }
  std::uint32_t AgFree(std::uint32_t agno) { return AgField(agno, 56); }
};

TEST_F(AllocTest, AllocatesNearTheGoalAndLogsTheAgCount) {
  const std::uint32_t before = AgFree(1);
  const std::uint64_t goal = sb_.AgStart(1) + 500;
  auto e = Alloc({.goal = goal, .min = 4, .want = 8});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->disk_block, goal);
  EXPECT_EQ(e->length, 8u);
  EXPECT_EQ(AgFree(1), before - 8);
  auto f = Alloc({.goal = goal, .min = 1, .want = 1});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->disk_block, goal + 8);  // the next free block after the goal
  ASSERT_TRUE(Free(*e).ok());
  ASSERT_TRUE(Free(*f).ok());
  EXPECT_EQ(AgFree(1), before);
  Stop();
  FsckReport r = Fsck();
  EXPECT_TRUE(r.problems.empty()) << All(r);
}

TEST_F(AllocTest, AlignmentIsHonoured) {
  auto e = Alloc({.goal = sb_.AgStart(0) + 1001, .min = 8, .want = 8, .align = 8});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ((e->disk_block - sb_.AgStart(0)) % 8, 0u);
  ASSERT_TRUE(Free(*e).ok());
}

TEST_F(AllocTest, FreedBlocksAreNotReusedUntilTheFreeIsOnDisk) {
  const std::uint64_t goal = sb_.AgStart(1) + 2000;
  auto e = Alloc({.goal = goal, .min = 16, .want = 16});
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(Free(*e).ok());
  // The free is committed but its checkpoint is not on disk: busy.
  auto again = Alloc({.goal = goal, .min = 16, .want = 16});
  ASSERT_TRUE(again.ok());
  EXPECT_GE(again->disk_block, e->disk_block + e->length) << "busy blocks were reused";
  EXPECT_GT(alloc_->Stats().busy_skips, 0u);
  ASSERT_TRUE(log_->Force().ok());
  auto reused = Alloc({.goal = goal, .min = 16, .want = 16});
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(reused->disk_block, e->disk_block);
  ASSERT_TRUE(Free(*again).ok());
  ASSERT_TRUE(Free(*reused).ok());
}

TEST_F(AllocTest, ABusyRunIsPassedOverInOneStepNotBlockByBlock) {
  // A deleted file's extents are busy until their checkpoint is on disk;
  // allocating just before them must step over each run at once (the scan
  // used to restart one block further on, 65,536 times for a 256 MiB
  // file: fio's fallocate took ten seconds).
  const std::uint64_t goal = sb_.AgStart(1) + 3000;
  auto e = Alloc({.goal = goal, .min = 512, .want = 512});
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->disk_block, goal);
  ASSERT_TRUE(Free(*e).ok());
  const std::uint64_t skips = alloc_->Stats().busy_skips;
  auto next = Alloc({.goal = goal, .min = 64, .want = 64});
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->disk_block, e->disk_block + e->length) << "the first block after the busy run";
  EXPECT_EQ(alloc_->Stats().busy_skips - skips, 1u);
  ASSERT_TRUE(Free(*next).ok());
}

TEST_F(AllocTest, RunningOutOfSpaceIsNoSpaceAndEverythingComesBack) {
  std::vector<Extent> all;
  for (;;) {
    auto e = Alloc({.min = 1, .want = 4096});
    if (!e.ok()) {
      EXPECT_TRUE(e.status().IsNoSpace()) << e.status().ToString();
      break;
    }
    all.push_back(*e);
  }
  EXPECT_EQ(AgFree(0), 0u);
  EXPECT_EQ(AgFree(1), 0u);
  for (const Extent& e : all) ASSERT_TRUE(Free(e).ok());
  Stop();
  FsckReport r = Fsck();
  EXPECT_TRUE(r.problems.empty()) << All(r);
}

TEST_F(AllocTest, ADoubleFreeIsCorruption) {
  auto e = Alloc({.min = 2, .want = 2});
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(Free(*e).ok());
  {
    auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kTruncate);
    ASSERT_TRUE(tx.ok());
    Status s = alloc_->Free(&*tx, e->disk_block, e->length);
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_NE(s.message().find("already free"), std::string_view::npos) << s.ToString();
    // Found before anything changed: the transaction cancels clean (the
    // filesystem layer then shuts down on the Corruption).
  }
  EXPECT_FALSE(log_->IsShutdown());
  // And the blocks are not left busy forever.
  ASSERT_TRUE(log_->Force().ok());
  auto again = Alloc({.goal = e->disk_block, .min = 2, .want = 2});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->disk_block, e->disk_block);
  ASSERT_TRUE(Free(*again).ok());
}

TEST_F(AllocTest, FreesOutsideTheDataAreaAreRefused) {
  auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kTruncate);
  ASSERT_TRUE(tx.ok());
  EXPECT_TRUE(alloc_->Free(&*tx, 0, 1).IsCorruption());
  EXPECT_TRUE(alloc_->Free(&*tx, sb_.AgStart(1), 1).IsCorruption());  // AG 1's header
  EXPECT_TRUE(alloc_->Free(&*tx, sb_.total_blocks - 1, 2).IsCorruption());
  tx->Cancel();  // clean: nothing was changed
  EXPECT_FALSE(log_->IsShutdown());
}

TEST_F(AllocTest, ConcurrentAllocationsNeverOverlap) {
  std::atomic<int> failures{0};
  std::vector<std::vector<Extent>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const std::uint32_t ag = static_cast<std::uint32_t>((t + i) % 2);
        auto e = Alloc({.goal = sb_.AgStart(ag) + 100 * static_cast<std::uint64_t>(t),
                        .min = 1,
                        .want = static_cast<std::uint32_t>(1 + i % 7)});
        if (!e.ok()) {
          ++failures;
          continue;
        }
        got[static_cast<std::size_t>(t)].push_back(*e);
        if (i % 3 == 0) {
          if (!Free(got[static_cast<std::size_t>(t)].back()).ok()) ++failures;
          got[static_cast<std::size_t>(t)].pop_back();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  std::set<std::uint64_t> blocks;
  for (const auto& list : got)
    for (const Extent& e : list)
      for (std::uint64_t b = e.disk_block; b < e.disk_block + e.length; ++b)
        EXPECT_TRUE(blocks.insert(b).second) << "block " << b << " allocated twice";
  for (const auto& list : got)
    for (const Extent& e : list) ASSERT_TRUE(Free(e).ok());
  Stop();
  FsckReport r = Fsck();
  EXPECT_TRUE(r.problems.empty()) << All(r);
}

// A crash after forced allocations: recovery (through fsck) brings back the
// bitmap and the AG header together -- the only finding is that nothing
// owns the blocks yet (no inode was written in this test).
TEST_F(AllocTest, ACrashAfterAForcedAllocationRecoversConsistentCounts) {
  auto e = Alloc({.goal = sb_.AgStart(1) + 300, .min = 10, .want = 10});
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(log_->Force().ok());
  log_->ail().Stop();
  Stop(/*crash=*/true);
  FsckReport r = Fsck();
  EXPECT_TRUE(r.replayed);
  ASSERT_EQ(r.problems.size(), 1u) << All(r);
  EXPECT_NE(r.problems[0].message.find("10 blocks are in use in the bitmap but owned by nothing"),
            std::string::npos)
      << All(r);
}

}  // namespace
}  // namespace walfs::fs

namespace walfs::fs {
namespace {

// Transaction A frees in AG 1 and then allocates with a goal in AG 0; B
// frees in AG 0 and then in AG 1 (ascending).  A may not wait for AG 0 while
// it holds AG 1, so it allocates elsewhere and both finish.
TEST_F(AllocTest, TransactionsNeverWaitForAgsInOppositeOrders) {
  auto e0 = Alloc({.goal = sb_.AgStart(0) + 2000, .min = 2, .want = 2});
  auto e1 = Alloc({.goal = sb_.AgStart(1) + 2000, .min = 2, .want = 2});
  ASSERT_TRUE(e0.ok() && e1.ok());
  std::promise<void> a_holds, b_holds;
  auto fa = std::async(std::launch::async, [&]() -> Status {
    WALFS_ASSIGN_OR_RETURN(FsTransaction tx, FsTransaction::Begin(log_.get(), journal::TransType::kTruncate));
    WALFS_RETURN_IF_ERROR(alloc_->Free(&tx, e1->disk_block, 1));
    a_holds.set_value();
    b_holds.get_future().wait();
    WALFS_ASSIGN_OR_RETURN(Extent x, alloc_->Alloc(&tx, {.goal = sb_.AgStart(0) + 100, .min = 1, .want = 1}));
    EXPECT_GE(x.disk_block, sb_.AgStart(1)) << "AG 0 is held by the other transaction";
    return tx.Commit().status();
  });
  auto fb = std::async(std::launch::async, [&]() -> Status {
    WALFS_ASSIGN_OR_RETURN(FsTransaction tx, FsTransaction::Begin(log_.get(), journal::TransType::kTruncate));
    WALFS_RETURN_IF_ERROR(alloc_->Free(&tx, e0->disk_block, 1));
    b_holds.set_value();
    a_holds.get_future().wait();
    WALFS_RETURN_IF_ERROR(alloc_->Free(&tx, e1->disk_block + 1, 1));
    return tx.Commit().status();
  });
  ASSERT_EQ(fa.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "deadlock";
  ASSERT_EQ(fb.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "deadlock";
  EXPECT_TRUE(fa.get().ok());
  EXPECT_TRUE(fb.get().ok());
}

// The goal's AG is full and the one with space is held by another
// transaction for a moment: the allocation waits for it (it holds no AG
// that would make that wait out of order) instead of failing.
TEST_F(AllocTest, AFullGoalAgFallsBackToABusyLowerAgByWaiting) {
  for (;;) {
    auto e = Alloc({.goal = sb_.AgStart(1), .min = 1, .want = 32768, .goal_ag_only = true});
    if (!e.ok()) break;
  }
  auto other = FsTransaction::Begin(log_.get(), journal::TransType::kWrite);
  ASSERT_TRUE(other.ok());
  auto agh0 = cache_->Read(sb_.AgStart(0), format::BlockType::kAgHeader);
  ASSERT_TRUE(agh0.ok());
  ASSERT_TRUE(other->HoldAgHeader(*agh0, 0));
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    other->Cancel();
  });
  auto e = Alloc({.goal = sb_.AgStart(1), .min = 1, .want = 1});
  release.join();
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_LT(e->disk_block, sb_.AgStart(1));
}

// A transaction that finds an AG header held waits for it, and counts the
// wait where it was told to; one that finds it free counts nothing.
TEST_F(AllocTest, AWaitForABusyAgHeaderIsCountedWithItsTime) {
  AgHeaderWaits waits;
  auto agh0 = cache_->Read(sb_.AgStart(0), format::BlockType::kAgHeader);
  ASSERT_TRUE(agh0.ok());
  {
    auto free_tx = FsTransaction::Begin(log_.get(), journal::TransType::kWrite);
    ASSERT_TRUE(free_tx.ok());
    free_tx->CountAgHeaderWaits(&waits);
    ASSERT_TRUE(free_tx->HoldAgHeader(*agh0, 0));
    free_tx->Cancel();
  }
  EXPECT_EQ(waits.waits.load(), 0u);
  auto holder = FsTransaction::Begin(log_.get(), journal::TransType::kWrite);
  ASSERT_TRUE(holder.ok());
  ASSERT_TRUE(holder->HoldAgHeader(*agh0, 0));
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    holder->Cancel();
  });
  auto waiter = FsTransaction::Begin(log_.get(), journal::TransType::kWrite);
  ASSERT_TRUE(waiter.ok());
  waiter->CountAgHeaderWaits(&waits);
  ASSERT_TRUE(waiter->HoldAgHeader(*agh0, 0));
  release.join();
  waiter->Cancel();
  EXPECT_EQ(waits.waits.load(), 1u);
  EXPECT_GE(waits.wait_ns.load(), 20'000'000u) << "the wait lasted until the holder let go";
}

// The inode allocator holds an AG's header and its inode map block while
// it asks for a chunk in that AG.  When the AG has no room the header must
// stay held: letting it go alone let another transaction take it and wait
// for the map block -- a deadlock (FilesystemTest.FourThreads... hung).
TEST_F(AllocTest, AnAgHeaderHeldBeforeAFailedAllocationStaysHeld) {
  for (;;) {
    auto e = Alloc({.goal = sb_.AgStart(1), .min = 1, .want = 32768, .goal_ag_only = true});
    if (!e.ok()) break;
  }
  auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kCreate);
  ASSERT_TRUE(tx.ok());
  auto agh1 = cache_->Read(sb_.AgStart(1), format::BlockType::kAgHeader);
  ASSERT_TRUE(agh1.ok());
  ASSERT_TRUE(tx->HoldAgHeader(*agh1, 1));
  auto e = alloc_->Alloc(&*tx, {.goal = sb_.AgStart(1), .min = 8, .want = 8, .align = 8, .goal_ag_only = true});
  EXPECT_TRUE(e.status().IsNoSpace()) << e.status().ToString();
  EXPECT_TRUE(tx->Holds(*agh1)) << "the caller's AG header was let go";
  // An AG the allocation took itself is let go again.
  auto agh0 = cache_->Read(sb_.AgStart(0), format::BlockType::kAgHeader);
  ASSERT_TRUE(agh0.ok());
  auto f = alloc_->Alloc(&*tx, {.goal = sb_.AgStart(0), .min = format::kMaxExtentLength,
                                 .want = format::kMaxExtentLength, .goal_ag_only = true});
  EXPECT_FALSE(f.ok());
  EXPECT_FALSE(tx->Holds(*agh0));
  tx->Cancel();
}

// A transaction cannot reuse what it freed itself (its free is not even
// committed); no log force can change that, so none is made.
TEST_F(AllocTest, ATransactionsOwnFreesAreNotWorthAForce) {
  Extent last{};
  for (;;) {
    auto e = Alloc({.min = 1, .want = 32768});
    if (!e.ok()) break;
    last = *e;
  }
  auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kTruncate);
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(alloc_->Free(&*tx, last.disk_block, 1).ok());
  const auto forces = alloc_->Stats().busy_forces;
  auto e = alloc_->Alloc(&*tx, {.goal = last.disk_block, .min = 1, .want = 1});
  EXPECT_TRUE(e.status().IsNoSpace()) << e.status().ToString();
  EXPECT_EQ(alloc_->Stats().busy_forces, forces);
  ASSERT_TRUE(tx->Commit().ok());
}

}  // namespace
}  // namespace walfs::fs
