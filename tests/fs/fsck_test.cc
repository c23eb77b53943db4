// Specs of fsck: a fresh image is clean, and each class of damage it can
// see is reported (and, for counters, repaired with -y).
#include "fs/fsck.h"

#include <sys/stat.h>

#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "fs/format/ag_format.h"
#include "fs/format/inode_format.h"
#include "fs/format/block_types.h"
#include "fs/filesystem.h"
#include "fs/mkfs.h"
#include "fs/super.h"
#include "journal/buf_item.h"
#include "base/coding.h"
#include "journal/log.h"
#include "journal/log_format.h"
#include "journal/log_head.h"
#include "journal/log_region.h"
#include "journal/transaction.h"
#include "tests/fs/fs_test_fixture.h"

namespace walfs::fs {
namespace {

using namespace format;  // NOLINT(build/namespaces)

class Fsck : public ::testing::Test {
 protected:
  void SetUp() override {
    auto made = MakeFilesystem(&dev_, {.ag_count = 2});
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    sb_ = *made;
  }
  std::vector<std::byte> Read(std::uint64_t blkno) {
    std::vector<std::byte> b(sb_.block_size);
    EXPECT_TRUE(dev_.Read(blkno * sb_.block_size, b.data(), b.size()).ok());
    return b;
  }
  void Write(std::uint64_t blkno, const std::vector<std::byte>& b) {
    ASSERT_TRUE(dev_.Write(blkno * sb_.block_size, b.data(), b.size()).ok());
  }
  FsckReport Check(FsckOptions o = {}) {
    auto r = CheckImage(&dev_, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : FsckReport{};
  }
  // True if some problem mentions `what`.
  static bool Says(const FsckReport& r, std::string_view what) { return testing::FsckSays(r, what); }
  static std::string All(const FsckReport& r) { return testing::FsckProblems(r); }
  // Rewrites the root inode through `change`.
  template <typename F>
  void ChangeRoot(F change) {
    const std::uint64_t blk = sb_.root_ino / sb_.inodes_per_block();
    const std::size_t off = (sb_.root_ino % sb_.inodes_per_block()) * kInodeSize;
    auto b = Read(blk);
    auto n = DecodeInode(std::span<const std::byte>(b).subspan(off, kInodeSize), sb_.root_ino);
    ASSERT_TRUE(n.ok());
    InodeCore root = *n;
    change(&root);
    EncodeInode(root, std::span<std::byte>(b).subspan(off, kInodeSize));
    Write(blk, b);
  }

  MemoryDevice dev_{64ull << 20};
  Superblock sb_;
};

TEST_F(Fsck, AFreshImageIsClean) {
  FsckReport r = Check();
  EXPECT_TRUE(r.problems.empty()) << All(r);
  EXPECT_EQ(r.ExitCode(), 0);
  EXPECT_EQ(r.inodes_in_use, 1u);
  EXPECT_EQ(r.directories, 1u);
}

// Damage a mount recorded (fs/error_recorder.h), stored as the mount's
// clean unmount leaves it.
void RecordError(BlockDevice* dev) {
  auto sb = ReadSuperblock(dev);
  ASSERT_TRUE(sb.ok());
  sb->errors.count = 2;
  sb->errors.first = {.time_s = 1714564800, .ino = 0, .blkno = 77, .err = 117, .what = "directory block CRC"};
  sb->errors.last = {.time_s = 1714564801, .ino = 131, .blkno = 0, .err = 117, .what = "inode decode"};
  ASSERT_TRUE(WriteSuperblock(dev, *sb).ok());
}

TEST_F(Fsck, RecordedErrorsMakePreenCheckACleanImageAndItsRepairClearsThem) {
  RecordError(&dev_);
  FsckReport r = Check({.repair = true, .skip_if_clean = true});
  EXPECT_FALSE(r.skipped);
  ASSERT_EQ(r.problems.size(), 1u) << All(r);
  EXPECT_EQ(r.problems[0].message,
            "errors were recorded while mounted: 2 errors; first: directory block CRC (block 77) at "
            "2024-05-01 12:00:00 UTC; last: inode decode (inode 131) at 2024-05-01 12:00:01 UTC; "
            "the record is cleared");
  EXPECT_TRUE(r.problems[0].repaired);
  EXPECT_EQ(r.ExitCode(), 1);
  auto sb = ReadSuperblock(&dev_);
  ASSERT_TRUE(sb.ok());
  EXPECT_TRUE(sb->errors.empty());
  EXPECT_TRUE(sb->clean());
  EXPECT_TRUE(Check({.repair = true, .skip_if_clean = true}).skipped);
}

TEST_F(Fsck, RecordedErrorsStayWhileOtherProblemsAreLeft) {
  RecordError(&dev_);
  ChangeRoot([](InodeCore* c) { c->nlink = 7; });
  FsckReport r = Check({.repair = false});
  EXPECT_EQ(r.ExitCode(), 4);
  EXPECT_TRUE(Says(r, "errors were recorded while mounted")) << All(r);
  auto sb = ReadSuperblock(&dev_);
  ASSERT_TRUE(sb.ok());
  EXPECT_EQ(sb->errors.count, 2u) << "a check without repairs writes nothing";
}

TEST_F(Fsck, ProgressGoesThroughTheSixPhasesInOrderAndEachStartsAtZero) {
  std::vector<FsckProgress> seen;
  FsckOptions o;
  o.progress = [&seen](const FsckProgress& p) { seen.push_back(p); };
  FsckReport r = Check(o);
  EXPECT_TRUE(r.problems.empty()) << All(r);
  ASSERT_FALSE(seen.empty());
  int phase = 0;
  for (const FsckProgress& p : seen) {
    EXPECT_EQ(p.phases, 6);
    EXPECT_GE(p.done, 0.0);
    EXPECT_LE(p.done, 1.0);
    EXPECT_FALSE(p.name.empty());
    if (p.phase != phase) {
      EXPECT_EQ(p.phase, phase + 1) << "phases in order, none skipped";
      EXPECT_EQ(p.done, 0.0) << "phase " << p.phase << " starts at 0";
      phase = p.phase;
    }
  }
  EXPECT_EQ(phase, 6);
  EXPECT_EQ(seen.back().done, 1.0);
  EXPECT_EQ(seen.front().name, "log");
}

TEST_F(Fsck, NotAWalfsImageCannotBeChecked) {
  // Not zero: a wiped block 0 of a walfs image is rebuilt from the AG
  // headers' copies (super_copy_test.cc).
  std::vector<std::byte> other(sb_.block_size, std::byte{0x77});
  Write(0, other);
  auto r = CheckImage(&dev_, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a walfs image"), std::string_view::npos);
}

TEST_F(Fsck, WrongAgCountersAreReportedAndRepairedWithYes) {
  auto b = Read(sb_.AgStart(1));
  auto h = DecodeAgHeader(b, sb_, 1);
  ASSERT_TRUE(h.ok());
  h->free_blocks -= 5;
  EncodeAgHeader(*h, sb_, b);
  Write(sb_.AgStart(1), b);
  FsckReport r = Check({.replay = false});
  EXPECT_TRUE(Says(r, "AG 1 counters")) << All(r);
  EXPECT_EQ(r.ExitCode(), 4);
  FsckReport fixed = Check({.repair = true});
  EXPECT_EQ(fixed.ExitCode(), 1) << All(fixed);
  EXPECT_EQ(Check().ExitCode(), 0);
}

// The superblock's lazy counters are exact for an image marked clean: ones
// that are not are damage there (after a crash they are merely stale).
TEST_F(Fsck, WrongSuperblockCountersOfACleanImageAreReportedAndRepairedWithYes) {
  auto sb = ReadSuperblock(&dev_);
  ASSERT_TRUE(sb.ok());
  ASSERT_TRUE(sb->clean());
  sb->free_blocks -= 5;
  ASSERT_TRUE(WriteSuperblock(&dev_, *sb).ok());
  FsckReport r = Check({.replay = false});
  EXPECT_TRUE(Says(r, fmt::format("superblock counters: free {} ", sb->free_blocks))) << All(r);
  EXPECT_EQ(r.ExitCode(), 4);
  FsckReport fixed = Check({.repair = true});
  EXPECT_EQ(fixed.ExitCode(), 1) << All(fixed);
  EXPECT_EQ(Check().ExitCode(), 0);
  auto stored = ReadSuperblock(&dev_);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->free_blocks, sb->free_blocks + 5);
}

TEST_F(Fsck, ABitmapThatFreesUsedBlocksIsReported) {
  const std::uint64_t blk = sb_.AgStart(0) + AgBitmapStart();
  auto b = Read(blk);
  BitmapSet(b, 0, false);  // the AG header's own block, marked free
  SealBlock(b);
  Write(blk, b);
  FsckReport r = Check();
  EXPECT_TRUE(Says(r, "in use but free in the bitmap")) << All(r);
  EXPECT_EQ(r.ExitCode(), 4);
}

TEST_F(Fsck, ABitmapThatLeaksBlocksIsReported) {
  const std::uint64_t blk = sb_.AgStart(1) + AgBitmapStart();
  auto b = Read(blk);
  BitmapSet(b, AgFirstFree(sb_) + 100, true);  // in use, owned by nothing
  SealBlock(b);
  Write(blk, b);
  FsckReport r = Check();
  EXPECT_TRUE(Says(r, "owned by nothing")) << All(r);
}

TEST_F(Fsck, LeakedBlocksAreFreedWithYes) {
  const std::uint64_t blk = sb_.AgStart(1) + AgBitmapStart();
  auto b = Read(blk);
  BitmapSet(b, AgFirstFree(sb_) + 100, true);
  BitmapSet(b, AgFirstFree(sb_) + 101, true);
  SealBlock(b);
  Write(blk, b);
  FsckReport fixed = Check({.repair = true});
  EXPECT_TRUE(Says(fixed, "2 blocks are in use in the bitmap but owned by nothing (first")) << All(fixed);
  EXPECT_EQ(fixed.ExitCode(), 1) << All(fixed);
  FsckReport after = Check();
  EXPECT_EQ(after.ExitCode(), 0) << All(after);
}

TEST_F(Fsck, LeakedBlocksAreNotFreedWhileAnOwnerCouldNotBeRead) {
  // A leak beside an inode that does not decode: its blocks might be the
  // "leaked" ones, so -y leaves them alone.
  const std::uint64_t blk = sb_.AgStart(1) + AgBitmapStart();
  auto b = Read(blk);
  BitmapSet(b, AgFirstFree(sb_) + 100, true);
  SealBlock(b);
  Write(blk, b);
  const std::uint64_t root_block = sb_.root_ino / sb_.inodes_per_block();
  auto ib = Read(root_block);
  ib[(sb_.root_ino % sb_.inodes_per_block()) * kInodeSize] ^= std::byte{0x40};  // its magic: unreadable
  Write(root_block, ib);
  FsckReport r = Check({.repair = true});
  EXPECT_TRUE(Says(r, "owned by nothing")) << All(r);
  EXPECT_EQ(r.ExitCode(), 4) << All(r);
  EXPECT_TRUE(Says(Check({.replay = false}), "owned by nothing"));
}

TEST_F(Fsck, DamagedMetadataBlocksAreNamed) {
  auto b = Read(sb_.AgStart(0) + AgImapStart(sb_));
  b[200] ^= std::byte{1};
  Write(sb_.AgStart(0) + AgImapStart(sb_), b);
  FsckReport r = Check();
  EXPECT_TRUE(Says(r, "inode map block")) << All(r);
  EXPECT_TRUE(Says(r, "CRC")) << All(r);
}

// uninit_ag: map blocks past an AG header's counts were never written and
// are not read -- whatever an earlier use of the disk left there -- until
// the header says they are written.
TEST_F(Fsck, MapBlocksNeverWrittenAreNotReadUntilTheHeaderCountsThem) {
  ASSERT_TRUE(sb_.uninit_ag());
  const std::uint64_t imap = sb_.AgStart(1) + AgImapStart(sb_);
  const std::uint64_t bitmap = sb_.AgStart(1) + AgBitmapStart() + MetadataBitmapBlocks(sb_);
  std::vector<std::byte> junk(sb_.block_size, std::byte{0x5a});
  Write(imap, junk);
  if (MetadataBitmapBlocks(sb_) < sb_.bitmap_blocks) Write(bitmap, junk);
  FsckReport r = Check();
  EXPECT_TRUE(r.problems.empty()) << All(r);
  // Counted as written, the junk is damage.
  auto h = Read(sb_.AgStart(1));
  EncodeFixed32(reinterpret_cast<char*>(h.data()) + kAgImapInitOffset, 1);
  SealBlock(h);
  Write(sb_.AgStart(1), h);
  r = Check();
  EXPECT_TRUE(Says(r, "AG 1 inode map block 0")) << All(r);
}

TEST_F(Fsck, AnInodeMapThatDisagreesWithTheInodesIsReported) {
  const std::uint64_t blk = sb_.AgStart(0) + AgImapStart(sb_);
  auto b = Read(blk);
  ImapRecord rec = GetImapRecord(b, 0);
  rec.free_mask |= 1;  // the root, marked free
  rec.free_count += 1;
  PutImapRecord(b, 0, rec);
  SealBlock(b);
  Write(blk, b);
  FsckReport r = Check();
  EXPECT_TRUE(Says(r, "inode map says free")) << All(r);
}

TEST_F(Fsck, AWrongLinkCountIsReported) {
  ChangeRoot([](InodeCore* n) { n->nlink = 3; });
  FsckReport r = Check();
  EXPECT_TRUE(Says(r, "link count 3 but 2 links")) << All(r);
}

TEST_F(Fsck, AnEntryNamingAFreeInodeIsReported) {
  ChangeRoot([this](InodeCore* n) {
    n->literal = EncodeLocalDir(sb_.root_ino, {{sb_.root_ino + 1, 8, "ghost"}});
    n->size = n->literal.size();
  });
  FsckReport r = Check();
  EXPECT_TRUE(Says(r, "\"ghost\" names inode")) << All(r);
}

TEST_F(Fsck, ADamagedRootIsReported) {
  const std::uint64_t blk = sb_.root_ino / sb_.inodes_per_block();
  auto b = Read(blk);
  b[(sb_.root_ino % sb_.inodes_per_block()) * kInodeSize + 30] ^= std::byte{1};
  Write(blk, b);
  FsckReport r = Check();
  EXPECT_TRUE(Says(r, "CRC mismatch")) << All(r);
  EXPECT_TRUE(Says(r, "root inode")) << All(r);
}

}  // namespace
}  // namespace walfs::fs

namespace walfs::fs {
namespace {

// Changes byte `at` of a buffer in a transaction (the lock analysis cannot
// follow the early returns of ASSERTs, so the lock is taken here).
void ChangeByte(journal::Transaction* tx, journal::BufLogItem* item, std::uint32_t at,
                std::byte v) NO_THREAD_SAFETY_ANALYSIS {
  item->Lock();
  if (item->Read().ok()) {
    item->data()[at] = v;
    item->LogRange(at, at);
    tx->Join(item);
  }
  item->Unlock();
}

// A logged change to an AG header that was forced but never written back (a
// crash): fsck -n reports the dirty log; fsck replays it, sealing the block
// again (its CRC is not in the logged chunk's state), and the image is clean.
TEST(FsckReplay, ADirtyLogIsReplayedAndTheReplayedBlocksVerify) {
  MemoryDevice dev(64ull << 20);
  auto made = MakeFilesystem(&dev, {.ag_count = 2});
  ASSERT_TRUE(made.ok());
  const format::Superblock sb = *made;
  {
    auto log = journal::Log::Open(LogOptionsFor(&dev, sb));
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    auto item = std::make_unique<journal::BufLogItem>(journal::BufLogItemOptions{
        .device = &dev,
        .blkno = sb.AgStart(1),
        .block_size = sb.block_size,
        .lsn_offset = format::kHeaderLsnOffset,
        .ail = &(*log)->ail(),
        .type = static_cast<std::uint8_t>(format::BlockType::kAgHeader),
        .seal = [](std::span<std::byte> b) { format::SealBlock(b); }});
    (*log)->ail().Stop();  // the change stays in the log only
    auto tx = journal::Transaction::Begin(log->get(), journal::TransType::kSetattr);
    ASSERT_TRUE(tx.ok());
    ChangeByte(&*tx, item.get(), 200, std::byte{0x5a});  // a reserved byte: no counter changes
    auto seq = tx->Commit();
    ASSERT_TRUE(seq.ok());
    ASSERT_TRUE((*log)->Force(*seq).ok());
    (*log)->Halt();  // crash
    item.reset();
  }
  auto dry = CheckImage(&dev, {.replay = false});
  ASSERT_TRUE(dry.ok());
  EXPECT_TRUE(dry->log_dirty);
  EXPECT_EQ(dry->ExitCode(), 4);
  auto fixed = CheckImage(&dev, {});
  ASSERT_TRUE(fixed.ok());
  EXPECT_TRUE(fixed->replayed);
  for (const auto& p : fixed->problems) ADD_FAILURE() << p.message;
  std::vector<std::byte> b(sb.block_size);
  ASSERT_TRUE(dev.Read(sb.AgStart(1) * sb.block_size, b.data(), b.size()).ok());
  EXPECT_EQ(b[200], std::byte{0x5a});
  EXPECT_TRUE(format::DecodeAgHeader(b, sb, 1).ok());
}

}  // namespace
}  // namespace walfs::fs

namespace walfs::fs {
namespace {

// A mount that made a directory and a file, forced the log and crashed (no
// unmount): the log holds committed transactions.
class FsckAfterACrash : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(MakeFilesystem(&dev_, {.ag_count = 2, .now_s = 1}).ok());
    auto fs = Filesystem::MountDevice(&dev_, {});
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    auto dir = (*fs)->Mkdir({}, (*fs)->root(), "d", 0755);
    ASSERT_TRUE(dir.ok());
    auto file = (*fs)->Mknod({}, dir->st_ino, "f", S_IFREG | 0644, 0);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*fs)->Fsync(file->st_ino, false).ok());
    fs->reset();  // a crash: the log is halted, not closed
  }
  FsckReport Check(FsckOptions o) {
    auto r = CheckImage(&dev_, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : FsckReport{};
  }

  MemoryDevice dev_{64ull << 20};
};

// fsck -n says the log needs replay and checks the image as the log would
// leave it (the root, "d" and "d/f"), writing nothing.
TEST_F(FsckAfterACrash, CheckOnlyReplaysTheLogInMemoryAndWritesNothing) {
  const std::vector<std::byte> before = dev_.Contents();
  FsckReport dry = Check({.replay = false});
  EXPECT_EQ(dev_.Contents(), before) << "fsck -n wrote to the image";
  EXPECT_TRUE(dry.log_dirty);
  ASSERT_EQ(dry.problems.size(), 1u) << testing::FsckProblems(dry);
  EXPECT_TRUE(testing::FsckSays(dry, "committed transactions not yet replayed; run fsck.walfs without -n or mount it"))
      << testing::FsckProblems(dry);
  EXPECT_EQ(dry.inodes_in_use, 3u);
  EXPECT_EQ(dry.directories, 2u);
  EXPECT_EQ(dry.ExitCode(), 4);
  // What the real replay finds.
  FsckReport fixed = Check({});
  EXPECT_TRUE(fixed.replayed);
  EXPECT_EQ(fixed.problems.size(), 0u) << testing::FsckProblems(fixed);
  EXPECT_EQ(fixed.inodes_in_use, dry.inodes_in_use);
  EXPECT_EQ(fixed.blocks_in_use, dry.blocks_in_use);
}

// A replay by fsck leaves the log clean, as a mount's recovery and clean
// unmount do: fsck -n then finds nothing, and the next mount replays
// nothing.
TEST_F(FsckAfterACrash, AReplayLeavesTheLogCleanForTheNextCheckAndMount) {
  FsckReport fixed = Check({});
  ASSERT_TRUE(fixed.replayed);
  ASSERT_EQ(fixed.ExitCode(), 0) << testing::FsckProblems(fixed);
  FsckReport again = Check({.replay = false});
  EXPECT_FALSE(again.log_dirty);
  EXPECT_EQ(again.problems.size(), 0u) << testing::FsckProblems(again);
  EXPECT_EQ(again.ExitCode(), 0);
  std::vector<std::byte> b(format::kSuperSize);
  ASSERT_TRUE(dev_.Read(0, b.data(), b.size()).ok());
  auto sb = format::DecodeSuperblock(b, dev_.size_bytes());
  ASSERT_TRUE(sb.ok());
  EXPECT_TRUE(sb->clean()) << "the superblock is not marked clean after the replay";
  MountOptions ro;
  ro.read_only = true;
  auto fs = Filesystem::MountDevice(&dev_, ro);
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  EXPECT_NE((*fs)->Describe().find("clean log"), std::string::npos) << (*fs)->Describe();
  auto d = (*fs)->Lookup((*fs)->root(), "d");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE((*fs)->Lookup(d->st_ino, "f").ok());
  ASSERT_TRUE((*fs)->Unmount().ok());
}

// A damaged sector's cycle stamp is no cycle the log ever used: one stamped
// with the largest cycle makes the log unreplayable, and -L must still
// restart it, past the cycle of the records that read whole (it refused
// "too near the largest to restart past it", leaving the image with no way
// back but norecovery: the hostile campaign's log-damage flavour, seed 22).
TEST_F(FsckAfterACrash, MinusLRestartsALogWhoseDamagedSectorCarriesTheLargestCycle) {
  std::vector<std::byte> b(format::kSuperSize);
  ASSERT_TRUE(dev_.Read(0, b.data(), b.size()).ok());
  auto sb = format::DecodeSuperblock(b, dev_.size_bytes());
  ASSERT_TRUE(sb.ok());
  const journal::LogRegion region{&dev_, sb->log_offset(), sb->log_sectors()};
  std::string last(journal::kLogSectorSize, '\0');
  EncodeFixed32(last.data(), 0xffffffffu);
  ASSERT_TRUE(region.WriteSectors(region.sectors - 1, last).ok());
  ASSERT_FALSE(Filesystem::MountDevice(&dev_, {}).ok()) << "the damage did not stop recovery";

  FsckReport fixed = Check({.replay = true, .repair = true, .zero_log = true});
  EXPECT_TRUE(testing::FsckSays(fixed, "log zeroed (-L)")) << testing::FsckProblems(fixed);
  EXPECT_EQ(fixed.unrepaired(), 0u) << testing::FsckProblems(fixed);
  FsckReport again = Check({.replay = false});
  EXPECT_EQ(again.problems.size(), 0u) << testing::FsckProblems(again);
  auto pos = journal::FindLogPosition(region);
  ASSERT_TRUE(pos.ok()) << pos.status().ToString();
  EXPECT_TRUE(pos->clean);
  EXPECT_EQ(journal::CycleOf(pos->head), 3u) << "two past the records' cycle 1";
  auto fs = Filesystem::MountDevice(&dev_, {});
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  ASSERT_TRUE((*fs)->Unmount().ok());
}

// -n never repairs: asking for both is refused rather than repairing an
// overlay that is thrown away.
TEST_F(FsckAfterACrash, RepairWithoutReplayIsRefused) {
  auto r = CheckImage(&dev_, {.replay = false, .repair = true});
  EXPECT_FALSE(r.ok());
}

// -y's repairs of what a lost log leaves over partly written-back metadata
// (FsckRepairCrash in fs_crash_test runs them over every crash state of a
// workload); one damage at a time here.
class FsckRepair : public Fsck {
 protected:
  // A file "f" with 8 KiB of data in the root; returns its inode.
  std::uint64_t MakeFile(std::string_view name = "f") {
    auto fs = Filesystem::MountDevice(&dev_, {});
    EXPECT_TRUE(fs.ok()) << fs.status().ToString();
    auto st = (*fs)->Mknod({}, (*fs)->root(), name, 0100644, 0);
    EXPECT_TRUE(st.ok());
    const std::string data(8192, 'd');
    EXPECT_TRUE((*fs)->Write(st->st_ino, 0, data.data(), data.size()).ok());
    EXPECT_TRUE((*fs)->Unmount().ok());
    return st->st_ino;
  }
  template <typename F>
  void ChangeInode(std::uint64_t ino, F change) {
    const std::uint64_t blk = ino / sb_.inodes_per_block();
    const std::size_t off = (ino % sb_.inodes_per_block()) * kInodeSize;
    auto b = Read(blk);
    change(std::span<std::byte>(b).subspan(off, kInodeSize));
    Write(blk, b);
  }
  // Repaired (exit 1), and clean after.
  void ExpectRepaired(std::string_view says) {
    FsckReport fixed = Check({.repair = true, .clear_and_reconnect = true});
    EXPECT_TRUE(Says(fixed, says)) << All(fixed);
    EXPECT_EQ(fixed.ExitCode(), 1) << All(fixed);
    FsckReport after = Check({.replay = false});
    EXPECT_TRUE(after.problems.empty()) << All(after);
  }
};

TEST_F(FsckRepair, AnInodeMapThatCallsALiveInodeFreeIsCorrectedFromTheInode) {
  const std::uint64_t ino = MakeFile();
  const std::uint64_t blk = sb_.AgStart(0) + AgImapStart(sb_);
  auto b = Read(blk);
  ImapRecord rec = GetImapRecord(b, 0);
  const std::uint64_t index = ino - (sb_.AgStart(0) + rec.start) * sb_.inodes_per_block();
  rec.free_mask |= std::uint64_t{1} << index;  // free: the next create would take it
  rec.free_count += 1;
  PutImapRecord(b, 0, rec);
  SealBlock(b);
  Write(blk, b);
  ExpectRepaired("map corrected");
}

TEST_F(FsckRepair, ClaimedBlocksTheBitmapCallsFreeAreMarkedInUse) {
  MakeFile();
  const std::uint64_t blk = sb_.AgStart(0) + AgBitmapStart();
  auto b = Read(blk);
  // The file's data lies after the root chunk: clear the AG's last used bit.
  const std::uint64_t used = BitmapFind(b, AgFirstFree(sb_), BitsPerBitmapBlock(sb_.block_size), false);
  ASSERT_GT(used, 0u);
  BitmapSet(b, used - 1, false);
  SealBlock(b);
  Write(blk, b);
  ExpectRepaired("marked in use");
}

TEST_F(FsckRepair, AnInodeWithABadChecksumAloneGetsItRecomputedAndKeepsItsFile) {
  const std::uint64_t ino = MakeFile();
  ChangeInode(ino, [](std::span<std::byte> in) { in[120] ^= std::byte{1}; });  // the CRC field itself
  ExpectRepaired("checksum recomputed");
  auto fs = Filesystem::MountDevice(&dev_, {});
  ASSERT_TRUE(fs.ok());
  auto st = (*fs)->Lookup((*fs)->root(), "f");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->st_size, 8192);
  ASSERT_TRUE((*fs)->Unmount().ok());
}

TEST_F(FsckRepair, AnUnreadableInodeIsClearedAndTheEntryNamingItDropped) {
  const std::uint64_t ino = MakeFile();
  ChangeInode(ino, [](std::span<std::byte> in) { std::fill(in.begin(), in.end(), std::byte{0}); });
  ExpectRepaired("entry removed");
  FsckReport again = Check({.replay = false});
  EXPECT_EQ(again.ExitCode(), 0) << All(again);  // its blocks were freed by a later pass
}

TEST_F(FsckRepair, AWrongLinkCountIsSetToTheLinksFound) {
  const std::uint64_t ino = MakeFile();
  const std::uint64_t blk = ino / sb_.inodes_per_block();
  const std::size_t off = (ino % sb_.inodes_per_block()) * kInodeSize;
  auto b = Read(blk);
  auto n = DecodeInode(std::span<const std::byte>(b).subspan(off, kInodeSize), ino);
  ASSERT_TRUE(n.ok());
  n->nlink = 3;
  EncodeInode(*n, std::span<std::byte>(b).subspan(off, kInodeSize));
  Write(blk, b);
  ExpectRepaired("set to 1");
}

TEST_F(FsckRepair, AnInodeNoDirectoryNamesIsReconnectedInLostAndFound) {
  const std::uint64_t ino = MakeFile();
  // The root's inline entry dropped: the file is in use, named by nothing.
  ChangeRoot([](InodeCore* root) {
    const std::string empty = EncodeLocalDir(root->ino, {});
    root->literal = empty;
    root->size = empty.size();
  });
  // Preen (-p: repair without clear_and_reconnect) leaves it to a person.
  FsckReport preen = Check({.repair = true});
  EXPECT_TRUE(Says(preen, "in no directory")) << All(preen);
  EXPECT_EQ(preen.ExitCode(), 4) << All(preen);
  ExpectRepaired("reconnected as /lost+found/#" + std::to_string(ino));
  auto fs = Filesystem::MountDevice(&dev_, {});
  ASSERT_TRUE(fs.ok());
  auto lf = (*fs)->Lookup((*fs)->root(), "lost+found");
  ASSERT_TRUE(lf.ok()) << lf.status().ToString();
  auto st = (*fs)->Lookup(lf->st_ino, "#" + std::to_string(ino));
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->st_nlink, 1u);
  std::string data(8192, '\0');
  auto n = (*fs)->Read(ino, 0, data.size(), data.data());
  ASSERT_TRUE(n.ok() && *n == data.size());
  EXPECT_EQ(data, std::string(8192, 'd'));
  ASSERT_TRUE((*fs)->Unmount().ok());
}

}  // namespace
}  // namespace walfs::fs
