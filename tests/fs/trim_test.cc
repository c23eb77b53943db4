// Specs of discard (docs/fs.md, "Discard"): Allocator::Trim discards free,
// non-busy runs and nothing else -- above all not a run freed by a
// transaction whose checkpoint is not on disk, which a crash would give
// back to its file -- and Filesystem::Trim (FITRIM) forces the log first,
// checks its range like ext4 and XFS, and leaves an image fsck finds clean.
#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "fs/alloc.h"
#include "fs/filesystem.h"
#include "fs/fsck.h"
#include "fs/mkfs.h"
#include "tests/fs/fs_test_fixture.h"

namespace walfs::fs {
namespace {

using format::Extent;

class TrimTest : public testing::FsFixture {
 protected:
  Result<Extent> Alloc(AllocRequest r) {
    WALFS_ASSIGN_OR_RETURN(FsTransaction tx, FsTransaction::Begin(log_.get(), journal::TransType::kWrite));
    Result<Extent> e = alloc_->Alloc(&tx, r);
    if (!e.ok()) return e;
    WALFS_RETURN_IF_ERROR(tx.Commit().status());
    return e;
  }
  Status Free(std::uint64_t block, std::uint32_t count) {
    WALFS_ASSIGN_OR_RETURN(FsTransaction tx, FsTransaction::Begin(log_.get(), journal::TransType::kTruncate));
    WALFS_RETURN_IF_ERROR(alloc_->Free(&tx, block, count));
    return tx.Commit().status();
  }
  // Trims [first, end) onto the memory device, recording what it discarded.
  Result<std::uint64_t> Trim(std::uint64_t first, std::uint64_t end, std::uint32_t min = 1) {
    return alloc_->Trim({.first = first, .end = end, .min = min}, [this](std::uint64_t block, std::uint64_t count) {
      discarded_[block] = count;
      return dev_.Discard(block * sb_.block_size, count * sb_.block_size);
    });
  }
  Result<std::uint64_t> TrimAll() { return Trim(0, sb_.total_blocks); }
  // Fills blocks with a byte that is not zero, as file data would.
  void Fill(const Extent& e, char c) {
    const std::string data(e.length * sb_.block_size, c);
    ASSERT_TRUE(dev_.Write(e.disk_block * sb_.block_size, data.data(), data.size()).ok());
  }
  bool Holds(const Extent& e, char c) {
    std::string got(e.length * sb_.block_size, '\0');
    EXPECT_TRUE(dev_.Read(e.disk_block * sb_.block_size, got.data(), got.size()).ok());
    return got == std::string(got.size(), c);
  }
  bool Discarded(std::uint64_t block) const {
    auto it = discarded_.upper_bound(block);
    if (it == discarded_.begin()) return false;
    --it;
    return block < it->first + it->second;
  }
  std::uint64_t FreeBlocks() { return AgField(0, 56) + AgField(1, 56); }

  std::map<std::uint64_t, std::uint64_t> discarded_;  // block -> count
};

TEST_F(TrimTest, DiscardsEveryFreeBlockAndNoAllocatedOne) {
  auto kept = Alloc({.goal = sb_.AgStart(1) + 100, .min = 32, .want = 32});
  auto gone = Alloc({.goal = sb_.AgStart(1) + 200, .min = 32, .want = 32});
  ASSERT_TRUE(kept.ok() && gone.ok());
  Fill(*kept, 'k');
  Fill(*gone, 'g');
  ASSERT_TRUE(Free(gone->disk_block, gone->length).ok());
  ASSERT_TRUE(log_->Force().ok());  // the free is on disk: no longer busy
  auto trimmed = TrimAll();
  ASSERT_TRUE(trimmed.ok()) << trimmed.status().ToString();
  EXPECT_EQ(*trimmed, FreeBlocks());
  EXPECT_TRUE(Holds(*kept, 'k'));
  EXPECT_TRUE(Holds(*gone, '\0'));
  for (std::uint32_t agno = 0; agno < sb_.ag_count; ++agno)
    for (std::uint64_t b = sb_.AgStart(agno); b < sb_.AgStart(agno) + format::AgFirstFree(sb_); ++b)
      EXPECT_FALSE(Discarded(b)) << "AG " << agno << " metadata block " << b;
  for (std::uint64_t b = kept->disk_block; b < kept->disk_block + kept->length; ++b) EXPECT_FALSE(Discarded(b));
  EXPECT_FALSE(Discarded(sb_.log_offset() / sb_.block_size)) << "the log";
  ASSERT_TRUE(Free(kept->disk_block, kept->length).ok());
  Stop();
  FsckReport r = Fsck();
  EXPECT_TRUE(r.problems.empty()) << All(r);
}

// The heart of crash safety: a run freed by a committed transaction whose
// checkpoint is not on disk is busy, so Trim leaves it alone; after a
// crash recovery gives it back to its owner with the owner's data intact.
TEST_F(TrimTest, ARunFreedByACheckpointNotOnDiskIsNotDiscardedAndSurvivesACrash) {
  auto e = Alloc({.goal = sb_.AgStart(1) + 300, .min = 10, .want = 10});
  ASSERT_TRUE(e.ok());
  Fill(*e, 'd');
  ASSERT_TRUE(log_->Force().ok());  // the allocation is durable
  ASSERT_TRUE(Free(e->disk_block, e->length).ok());  // committed, not on disk
  auto trimmed = TrimAll();
  ASSERT_TRUE(trimmed.ok()) << trimmed.status().ToString();
  EXPECT_EQ(*trimmed, FreeBlocks() - e->length);
  for (std::uint64_t b = e->disk_block; b < e->disk_block + e->length; ++b) EXPECT_FALSE(Discarded(b));
  EXPECT_TRUE(Holds(*e, 'd'));
  EXPECT_GT(alloc_->Stats().trim_busy_skips, 0u);
  log_->ail().Stop();
  Stop(/*crash=*/true);
  // Recovery brings the allocation back (the free never reached the disk),
  // and its blocks still hold their data.
  FsckReport r = Fsck();
  EXPECT_TRUE(r.replayed);
  ASSERT_EQ(r.problems.size(), 1u) << All(r);
  EXPECT_NE(r.problems[0].message.find("10 blocks are in use in the bitmap but owned by nothing"), std::string::npos)
      << All(r);
  EXPECT_TRUE(Holds(*e, 'd'));
}

// Once the freeing checkpoint is on disk the run is discarded, and a crash
// then recovers it free.
TEST_F(TrimTest, ARunWhoseFreeIsOnDiskIsDiscardedAndRecoversFree) {
  auto e = Alloc({.goal = sb_.AgStart(1) + 300, .min = 10, .want = 10});
  ASSERT_TRUE(e.ok());
  Fill(*e, 'd');
  ASSERT_TRUE(Free(e->disk_block, e->length).ok());
  ASSERT_TRUE(log_->Force().ok());
  ASSERT_TRUE(TrimAll().ok());
  EXPECT_TRUE(Discarded(e->disk_block));
  EXPECT_TRUE(Holds(*e, '\0'));
  log_->ail().Stop();
  Stop(/*crash=*/true);
  FsckReport r = Fsck();
  EXPECT_TRUE(r.problems.empty()) << All(r);
}

// A transaction that frees a run holds its AG's header until it commits:
// Trim waits for it, then sees the run busy (committed, not on disk).
TEST_F(TrimTest, TrimWaitsForATransactionFreeingInItsAgAndSkipsWhatItFreed) {
  auto e = Alloc({.goal = sb_.AgStart(0) + 400, .min = 8, .want = 8});
  ASSERT_TRUE(e.ok());
  Fill(*e, 'p');
  ASSERT_TRUE(log_->Force().ok());
  auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kTruncate);
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(alloc_->Free(&*tx, e->disk_block, e->length).ok());
  auto trim = std::async(std::launch::async, [&] { return Trim(sb_.AgStart(0), sb_.AgStart(1)); });
  EXPECT_EQ(trim.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout)
      << "Trim did not wait for the AG header";
  ASSERT_TRUE(tx->Commit().ok());
  ASSERT_EQ(trim.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  ASSERT_TRUE(trim.get().ok());
  EXPECT_FALSE(Discarded(e->disk_block));
  EXPECT_TRUE(Holds(*e, 'p'));
}

TEST_F(TrimTest, OnlyTheRangeAndRunsOfAtLeastMinAreDiscarded) {
  auto e = Alloc({.goal = sb_.AgStart(1) + 1000, .min = 10, .want = 10});
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->disk_block, sb_.AgStart(1) + 1000);
  ASSERT_TRUE(Free(e->disk_block + 2, 3).ok());  // a hole of 3 blocks inside it
  ASSERT_TRUE(log_->Force().ok());
  auto none = Trim(e->disk_block, e->disk_block + e->length, /*min=*/4);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0u);
  auto three = Trim(e->disk_block, e->disk_block + e->length, /*min=*/3);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(*three, 3u);
  EXPECT_TRUE(Discarded(e->disk_block + 2));
  discarded_.clear();
  // A range inside one free run: exactly its blocks.
  auto part = Trim(sb_.AgStart(1) + 5000, sb_.AgStart(1) + 5100);
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(*part, 100u);
  ASSERT_EQ(discarded_.size(), 1u);
  EXPECT_EQ(discarded_.begin()->first, sb_.AgStart(1) + 5000);
  // Past the end: nothing, and no error (Filesystem::Trim checks the range).
  auto past = Trim(sb_.total_blocks, sb_.total_blocks + 100);
  ASSERT_TRUE(past.ok());
  EXPECT_EQ(*past, 0u);
}

TEST_F(TrimTest, ADiscardErrorStopsTheTrimAndIsReturned) {
  auto r = alloc_->Trim({.first = 0, .end = sb_.total_blocks},
                        [](std::uint64_t, std::uint64_t) { return Status::FromErrno(EIO, "discard"); });
  EXPECT_EQ(r.status().ToErrno(), EIO);
  // The AG header was let go: allocation still works.
  EXPECT_TRUE(Alloc({.min = 1, .want = 1}).ok());
}

// Online discard (-o discard): a freed run is discarded once, and only
// once, its freeing checkpoint is on disk, and it is busy until then.
class OnlineDiscardTest : public TrimTest {
 protected:
  void SetUp() override {
    TrimTest::SetUp();
    alloc_->StartOnlineDiscard([this](std::uint64_t block, std::uint64_t count) {
      if (slow_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return dev_.Discard(block * sb_.block_size, count * sb_.block_size);
    });
  }
  // Waits until `n` runs have been discarded online.
  bool WaitForDiscards(std::uint64_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (alloc_->Stats().online_discards < n) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }
  std::atomic<bool> slow_{false};
};

TEST_F(OnlineDiscardTest, AFreedRunIsDiscardedOnceItsCheckpointIsOnDiskAndNotBefore) {
  auto e = Alloc({.goal = sb_.AgStart(1) + 700, .min = 16, .want = 16});
  ASSERT_TRUE(e.ok());
  Fill(*e, 'o');
  ASSERT_TRUE(log_->Force().ok());
  ASSERT_TRUE(Free(e->disk_block, e->length).ok());  // committed, not on disk
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(alloc_->Stats().online_discards, 0u);
  EXPECT_TRUE(Holds(*e, 'o')) << "discarded before the free was on disk";
  ASSERT_TRUE(log_->Force().ok());
  ASSERT_TRUE(WaitForDiscards(1));
  EXPECT_EQ(alloc_->Stats().online_discard_blocks, e->length);
  EXPECT_TRUE(Holds(*e, '\0'));
  // Discarded: no longer busy, so it is allocated again.
  auto again = Alloc({.goal = e->disk_block, .min = 16, .want = 16});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->disk_block, e->disk_block);
  ASSERT_TRUE(Free(again->disk_block, again->length).ok());
}

TEST_F(OnlineDiscardTest, ACrashBeforeTheFreeIsOnDiskKeepsTheOwnersData) {
  auto e = Alloc({.goal = sb_.AgStart(1) + 700, .min = 16, .want = 16});
  ASSERT_TRUE(e.ok());
  Fill(*e, 'o');
  ASSERT_TRUE(log_->Force().ok());
  ASSERT_TRUE(Free(e->disk_block, e->length).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  log_->ail().Stop();
  Stop(/*crash=*/true);  // the discarder stops too, with the free not on disk
  EXPECT_EQ(dev_.stats().discards, 0u);
  FsckReport r = Fsck();
  ASSERT_EQ(r.problems.size(), 1u) << All(r);
  EXPECT_NE(r.problems[0].message.find("16 blocks are in use in the bitmap but owned by nothing"), std::string::npos)
      << All(r);
  EXPECT_TRUE(Holds(*e, 'o'));
}

// Space that is on disk but still being discarded is waited for, not
// reported as NoSpace.
TEST_F(OnlineDiscardTest, AnAllocationOnAFullFilesystemWaitsForTheDiscardsOfWhatWasFreed) {
  std::vector<Extent> all;
  for (;;) {
    auto e = Alloc({.min = 1, .want = 4096});
    if (!e.ok()) break;
    all.push_back(*e);
  }
  slow_ = true;
  for (const Extent& e : all) ASSERT_TRUE(Free(e.disk_block, e.length).ok());
  auto e = Alloc({.min = 4096, .want = 4096});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_TRUE(Free(e->disk_block, e->length).ok());
  slow_ = false;
  ASSERT_TRUE(log_->Force().ok());
  ASSERT_TRUE(WaitForDiscards(all.size() + 1));
  Stop();
  FsckReport r = Fsck();
  EXPECT_TRUE(r.problems.empty()) << All(r);
}

TEST_F(OnlineDiscardTest, StoppingDiscardsWhatIsOnDiskAndLeavesTheRestBusy) {
  auto a = Alloc({.goal = sb_.AgStart(1) + 900, .min = 8, .want = 8});
  auto b = Alloc({.goal = sb_.AgStart(1) + 990, .min = 8, .want = 8});
  ASSERT_TRUE(a.ok() && b.ok());
  Fill(*a, 'a');
  Fill(*b, 'b');
  ASSERT_TRUE(log_->Force().ok());
  ASSERT_TRUE(Free(a->disk_block, a->length).ok());
  ASSERT_TRUE(log_->Force().ok());
  ASSERT_TRUE(Free(b->disk_block, b->length).ok());  // not on disk
  alloc_->StopOnlineDiscard();
  EXPECT_TRUE(Holds(*a, '\0'));
  EXPECT_TRUE(Holds(*b, 'b'));
  auto again = Alloc({.goal = b->disk_block, .min = 8, .want = 8});
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->disk_block, b->disk_block) << "b's free is not on disk: still busy";
  ASSERT_TRUE(Free(again->disk_block, again->length).ok());
}

// Filesystem::Trim, the FITRIM behind `fstrim`.
class FsTrimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(MakeFilesystem(&dev_, {.ag_count = 2}).ok());
    Mount();
  }
  void TearDown() override {
    if (fs_) {
      EXPECT_TRUE(fs_->Unmount().ok());
      fs_.reset();
    }
    auto r = CheckImage(&dev_, {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->problems.empty()) << (r->problems.empty() ? "" : r->problems[0].message);
  }
  void Mount(bool read_only = false) {
    MountOptions o;
    o.commit_interval_s = 0;  // nothing reaches the log unless forced
    o.lazy_commit_ms = 0;
    o.read_only = read_only;
    auto fs = Filesystem::MountDevice(&dev_, o);
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    fs_ = std::move(fs).value();
  }
  // How many bytes of the device hold `c` in 4 KiB blocks full of it.
  std::uint64_t BlocksOf(char c) {
    const std::vector<std::byte> image = dev_.Contents();
    const std::string full(4096, c);
    std::uint64_t n = 0;
    for (std::size_t off = 0; off + 4096 <= image.size(); off += 4096)
      if (std::memcmp(image.data() + off, full.data(), 4096) == 0) ++n;
    return n;
  }

  MemoryDevice dev_{64ull << 20};
  std::unique_ptr<Filesystem> fs_;
};

TEST_F(FsTrimTest, AnUnlinkedFilesBlocksAreTrimmedAfterTheLogIsForcedAndACrashThenKeepsItGone) {
  auto st = fs_->Mknod({}, fs_->root(), "f", S_IFREG | 0644, 0);
  ASSERT_TRUE(st.ok());
  const std::string data(4 << 20, 'F');
  auto n = fs_->Write(st->st_ino, 0, data.data(), data.size());
  ASSERT_TRUE(n.ok() && *n == data.size());
  ASSERT_TRUE(fs_->Fsync(st->st_ino, false).ok());
  ASSERT_EQ(BlocksOf('F'), 1024u);
  ASSERT_TRUE(fs_->Unlink(fs_->root(), "f").ok());
  fs_->Forget(st->st_ino, 1);  // frees the blocks; committed, not forced
  auto trimmed = fs_->Trim(0, ~std::uint64_t{0}, 0);
  ASSERT_TRUE(trimmed.ok()) << trimmed.status().ToString();
  EXPECT_GE(*trimmed, data.size());
  EXPECT_EQ(*trimmed % 4096, 0u);
  EXPECT_EQ(BlocksOf('F'), 0u);
  EXPECT_NE(fs_->StatsText().find("\ntrims 1\n"), std::string::npos) << fs_->StatsText();
  // Trim forced the unlink to disk before it discarded the file's blocks,
  // so recovery cannot bring the (now zeroed) file back.
  fs_.reset();  // a crash
  Mount();
  EXPECT_EQ(fs_->Lookup(fs_->root(), "f").status().ToErrno(), ENOENT);
}

TEST_F(FsTrimTest, RangesAreCheckedAsExt4AndXfsCheckThem) {
  const std::uint64_t size = fs_->superblock().total_blocks * 4096;
  EXPECT_EQ(fs_->Trim(size, 1 << 20, 0).status().ToErrno(), EINVAL) << "start past the end";
  EXPECT_EQ(fs_->Trim(~std::uint64_t{0} - 10, 1 << 20, 0).status().ToErrno(), EINVAL);
  EXPECT_EQ(fs_->Trim(0, 100, 0).status().ToErrno(), EINVAL) << "less than a block";
  EXPECT_EQ(fs_->Trim(0, size, std::uint64_t{1} << 40).status().ToErrno(), EINVAL) << "minlen over an AG";
  // A range running past the end is cut at the end.
  auto tail = fs_->Trim(size - (1 << 20), ~std::uint64_t{0}, 0);
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_LE(*tail, std::uint64_t{1} << 20);
  // A minlen longer than every free run trims nothing.
  auto none = fs_->Trim(0, size, std::uint64_t{fs_->superblock().ag_blocks} * 4096);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0u);
}

TEST_F(FsTrimTest, AReadOnlyMountRefusesWithEROFS) {
  ASSERT_TRUE(fs_->Unmount().ok());
  fs_.reset();
  Mount(/*read_only=*/true);
  EXPECT_EQ(fs_->Trim(0, ~std::uint64_t{0}, 0).status().ToErrno(), EROFS);
}

}  // namespace
}  // namespace walfs::fs
