// Specs of inode allocation: free inodes of existing chunks first, new
// chunks when they run out, generations that change on reuse, AG counters
// and the inode map kept with every change, double frees, and recovery.
#include "fs/ialloc.h"

#include <sys/stat.h>

#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "fs/format/inode_format.h"
#include "tests/fs/fs_test_fixture.h"

namespace walfs::fs {
namespace {

constexpr std::uint32_t kIcount = 60, kIfree = 64, kChunks = 68;

class IallocTest : public testing::FsFixture {
 protected:
  static format::InodeCore File() {
    format::InodeCore n;
    n.mode = S_IFREG | 0644;
    n.nlink = 1;
    n.format = format::ForkFormat::kExtents;
    return n;
  }
  Result<std::uint64_t> Alloc(std::uint32_t ag) {
    WALFS_ASSIGN_OR_RETURN(FsTransaction tx, FsTransaction::Begin(log_.get(), journal::TransType::kCreate));
    Result<std::uint64_t> ino = ialloc_->Alloc(&tx, ag, File());
    if (!ino.ok()) return ino;
    WALFS_RETURN_IF_ERROR(tx.Commit().status());
    return ino;
  }
  Status Free(std::uint64_t ino) {
    WALFS_ASSIGN_OR_RETURN(FsTransaction tx, FsTransaction::Begin(log_.get(), journal::TransType::kRemove));
    WALFS_RETURN_IF_ERROR(ialloc_->Free(&tx, ino));
    return tx.Commit().status();
  }
  Result<format::InodeCore> ReadInode(std::uint64_t ino) NO_THREAD_SAFETY_ANALYSIS {
    WALFS_ASSIGN_OR_RETURN(BufRef b, cache_->Read(ialloc_->BlockOf(ino), format::BlockType::kInodes));
    b->Lock();
    auto n = format::DecodeInode(b->data().subspan(ialloc_->OffsetOf(ino), format::kInodeSize), ino);
    b->Unlock();
    return n;
  }
};

TEST_F(IallocTest, TheRootChunkIsUsedFirstThenNewChunks) {
  std::set<std::uint64_t> inos;
  for (int i = 0; i < 63 + 70; ++i) {  // the root chunk's 63, then two more chunks
    auto ino = Alloc(0);
    ASSERT_TRUE(ino.ok()) << ino.status().ToString();
    EXPECT_TRUE(inos.insert(*ino).second);
    auto n = ReadInode(*ino);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(n->mode, S_IFREG | 0644);
    EXPECT_EQ(n->generation, 1u);
  }
  EXPECT_EQ(AgField(0, kChunks), 3u);
  EXPECT_EQ(AgField(0, kIcount), 3u * 64);
  EXPECT_EQ(AgField(0, kIfree), 3u * 64 - 1 - 133);
  for (std::uint64_t ino : inos) ASSERT_TRUE(Free(ino).ok());
  EXPECT_EQ(AgField(0, kIfree), 3u * 64 - 1);
  Stop();
  FsckReport r = Fsck();
  EXPECT_TRUE(r.problems.empty()) << All(r);
}

TEST_F(IallocTest, AReusedInodeGetsANewGeneration) {
  auto a = Alloc(1);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(Free(*a).ok());
  auto b = Alloc(1);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*a, *b);
  auto n = ReadInode(*b);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->generation, 2u);
  ASSERT_TRUE(Free(*b).ok());
}

TEST_F(IallocTest, TheInodeComesFromThePreferredAg) {
  auto ino = Alloc(1);
  ASSERT_TRUE(ino.ok());
  EXPECT_EQ(ialloc_->AgOf(*ino), 1u);
  EXPECT_EQ(AgField(1, kChunks), 1u);
  ASSERT_TRUE(Free(*ino).ok());
}

TEST_F(IallocTest, FreeingAFreeInodeIsCorruption) {
  auto ino = Alloc(0);
  ASSERT_TRUE(ino.ok());
  ASSERT_TRUE(Free(*ino).ok());
  auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kRemove);
  ASSERT_TRUE(tx.ok());
  Status s = ialloc_->Free(&*tx, *ino);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  tx->Cancel();
  EXPECT_FALSE(log_->IsShutdown());
}

// Allocations forced before a crash come back through recovery with their
// chunk, map and counters consistent; fsck's only finding is that the new
// inodes are in no directory (none was written in this test).
TEST_F(IallocTest, ACrashAfterForcedAllocationsRecoversChunksAndCounts) {
  std::vector<std::uint64_t> inos;
  for (int i = 0; i < 70; ++i) {
    auto ino = Alloc(1);
    ASSERT_TRUE(ino.ok());
    inos.push_back(*ino);
  }
  ASSERT_TRUE(log_->Force().ok());
  log_->ail().Stop();
  Stop(/*crash=*/true);
  FsckReport r = Fsck();
  EXPECT_TRUE(r.replayed);
  EXPECT_EQ(r.inodes_in_use, 71u);
  for (const auto& p : r.problems)
    EXPECT_NE(p.message.find("is in no directory"), std::string::npos) << p.message;
  EXPECT_EQ(r.problems.size(), 70u) << All(r);
}

}  // namespace
}  // namespace walfs::fs

namespace walfs::fs {
namespace {

// Writeback stamps an inode block's LSN into its first inode; the inode
// must still verify in memory afterwards (it is resealed in place).
TEST_F(IallocTest, AnInodeBlockStillVerifiesAfterItsWriteback) {
  std::uint64_t eighth = 0;  // inode 0 of the chunk's second block (4 KiB blocks)
  for (int i = 0; i < 8; ++i) {
    auto ino = Alloc(0);
    ASSERT_TRUE(ino.ok());
    eighth = *ino;
  }
  ASSERT_EQ(eighth % sb_.inodes_per_block(), 0u);
  ASSERT_TRUE(log_->Force().ok());
  ASSERT_TRUE(log_->ail().WaitEmpty());
  EXPECT_TRUE(ReadInode(sb_.root_ino).ok());
  auto n = ReadInode(eighth);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_TRUE(Free(eighth).ok());
  ASSERT_TRUE(log_->Force().ok());
  ASSERT_TRUE(log_->ail().WaitEmpty());
  auto again = Alloc(0);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, eighth);
  EXPECT_FALSE(log_->IsShutdown());
}

// With 1 KiB blocks a chunk is 32 blocks, all logged when it is created:
// the create reservation must hold them.
class IallocSmallBlocks : public IallocTest {
 protected:
  void SetUp() override {
    auto sb = MakeFilesystem(&dev_, {.block_size = 1024, .ag_count = 2});
    ASSERT_TRUE(sb.ok()) << sb.status().ToString();
    sb_ = *sb;
    made_ = true;
    Open();
  }
};

TEST_F(IallocSmallBlocks, ANewChunkFitsTheCreateReservation) {
  ASSERT_EQ(sb_.blocks_per_chunk(), 32u);
  for (int i = 0; i < 64 + 5; ++i) {
    auto ino = Alloc(0);
    ASSERT_TRUE(ino.ok()) << "allocation " << i << ": " << ino.status().ToString();
  }
  EXPECT_FALSE(log_->IsShutdown());
}

}  // namespace
}  // namespace walfs::fs

namespace walfs::fs {
namespace {

// Mounting after a crash recomputes the lazy counters from the replayed AG
// headers; a clean unmount then stores them and fsck agrees.
TEST_F(IallocTest, MountingAfterACrashRecomputesTheLazyCounters) {
  for (int i = 0; i < 70; ++i) ASSERT_TRUE(Alloc(1).ok());
  ASSERT_TRUE(log_->Force().ok());
  Stop(/*crash=*/true);
  Open();  // recovery, then the mount marks recompute the counters
  // The root chunk in AG 0, and two chunks in AG 1 for the 70 new inodes.
  EXPECT_EQ(sb_.icount, 3u * 64);
  EXPECT_EQ(sb_.ifree, 3u * 64 - 1 - 70);
  Stop();
  FsckReport r = Fsck();
  for (const auto& p : r.problems)  // the 70 inodes are in no directory: nothing else
    EXPECT_NE(p.message.find("is in no directory"), std::string::npos) << p.message;
}

}  // namespace
}  // namespace walfs::fs
