// Specs of growing a mounted filesystem (Filesystem::Grow, walfs-growfs;
// docs/disk_format.md, "Growing"): the last AG lengthened, AGs added, both;
// statfs and the allocators see the new space; fsck is clean and a remount
// keeps it; shrinking, sizes not block-aligned, remainders too small for an
// AG and devices that cannot grow; a grow under concurrent writes (TSan),
// and recovery of a log that holds one.  The crash harness's every-write
// spec is in grow_crash_test.cc.
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "fs/filesystem.h"
#include "fs/fsck.h"
#include "fs/grow.h"
#include "fs/mkfs.h"
#include "tests/sizes.h"

namespace walfs::fs {
namespace {

using walfs::testing::kMiB;

class GrowTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (fs_) Unmount();
    ExpectFsckClean();
  }
  // A filesystem of `bytes` at the start of the (larger) device.
  void Make(std::uint64_t bytes, std::uint32_t ag_count, std::uint32_t block_size = 4096) {
    auto sb = MakeFilesystem(dev_.get(), {.block_size = block_size, .ag_count = ag_count, .size_bytes = bytes});
    ASSERT_TRUE(sb.ok()) << sb.status().ToString();
    made_ = *sb;
    Mount();
  }
  void Mount() {
    MountOptions o;
    o.commit_interval_s = 0;  // nothing reaches the log unless forced
    o.lazy_commit_ms = 0;
    auto fs = Filesystem::MountDevice(dev_.get(), o);
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    fs_ = std::move(fs).value();
  }
  void Unmount() {
    EXPECT_TRUE(fs_->Unmount().ok());
    fs_.reset();
  }
  void ExpectFsckClean() {
    auto r = CheckImage(dev_.get(), {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::string problems;
    for (const auto& p : r->problems) problems += p.message + "\n";
    EXPECT_TRUE(r->problems.empty()) << problems;
  }
  GrowReport GrowTo(std::uint64_t bytes) {
    auto r = fs_->Grow(bytes);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : GrowReport{};
  }
  std::uint64_t bs() const { return made_.block_size; }
  std::uint64_t Bytes(std::uint64_t blocks) const { return blocks * bs(); }
  // Writes a file of `bytes` (fsynced) and returns its inode.
  std::uint64_t WriteFile(const std::string& name, std::size_t bytes, char c = 'x') {
    auto st = fs_->Mknod({}, fs_->root(), name, S_IFREG | 0644, 0);
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    if (!st.ok()) return 0;
    const std::string data(bytes, c);
    auto n = fs_->Write(st->st_ino, 0, data.data(), data.size());
    EXPECT_TRUE(n.ok() && *n == data.size()) << (n.ok() ? "short" : n.status().ToString());
    EXPECT_TRUE(fs_->Fsync(st->st_ino, false).ok());
    return st->st_ino;
  }

  std::unique_ptr<MemoryDevice> dev_ = std::make_unique<MemoryDevice>(64 * kMiB);
  format::Superblock made_;
  std::unique_ptr<Filesystem> fs_;
};

TEST_F(GrowTest, TheLastAgIsLengthenedFirstThenAgsAreAdded) {
  Make(24 * kMiB, 2);
  const std::uint64_t old_total = made_.total_blocks;
  ASSERT_LT(made_.AgLength(1), made_.ag_blocks);  // mkfs left the last AG a block short
  const GrowReport r = GrowTo(Bytes(old_total + made_.ag_blocks * 3 / 2));
  EXPECT_EQ(r.old_blocks, old_total);
  EXPECT_EQ(r.new_blocks, old_total + made_.ag_blocks * 3 / 2);
  EXPECT_EQ(r.old_ag_count, 2u);
  EXPECT_EQ(r.new_ag_count, 4u);  // AG 1 made whole, AG 2 whole, AG 3 the rest
  EXPECT_EQ(r.unused_blocks, 0u);
  EXPECT_EQ(r.steps, 1u);
  const format::Superblock& sb = fs_->superblock();
  EXPECT_EQ(sb.AgLength(1), sb.ag_blocks);
  EXPECT_EQ(sb.AgLength(2), sb.ag_blocks);
  EXPECT_LT(sb.AgLength(3), sb.ag_blocks);
}

TEST_F(GrowTest, GrowingWithinTheLastAgOnlyLengthensIt) {
  Make(24 * kMiB, 1);
  // A short AG first (just over the minimum), then lengthened.
  GrowTo(Bytes(made_.total_blocks + MinAgBlocks(made_) + 10));
  const GrowReport r = GrowTo(Bytes(fs_->superblock().total_blocks + 500));
  EXPECT_EQ(r.old_ag_count, 2u);
  EXPECT_EQ(r.new_ag_count, 2u);
  EXPECT_EQ(r.new_blocks, r.old_blocks + 500);
  EXPECT_EQ(fs_->superblock().AgLength(1), MinAgBlocks(made_) + 510);
}

TEST_F(GrowTest, AFullLastAgOnlyGetsNewAgsAfterIt) {
  Make(24 * kMiB, 1);
  ASSERT_EQ(made_.AgLength(0), made_.ag_blocks);
  const GrowReport r = GrowTo(Bytes(made_.total_blocks + 2 * made_.ag_blocks));
  EXPECT_EQ(r.new_ag_count, 3u);
  EXPECT_EQ(fs_->superblock().AgLength(2), made_.ag_blocks);
}

TEST_F(GrowTest, StatfsReportsTheNewSizeAndAllocationsLandInTheNewAgs) {
  Make(24 * kMiB, 1);
  auto before = fs_->StatFs();
  ASSERT_TRUE(before.ok());
  const std::uint64_t added = 2 * made_.ag_blocks;
  GrowTo(Bytes(made_.total_blocks + added));
  auto after = fs_->StatFs();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->f_blocks, before->f_blocks + added);
  EXPECT_GT(after->f_bfree, before->f_bfree + added - 2 * MinAgBlocks(made_));
  // More than the old filesystem could ever hold: it must use the new AGs.
  const std::size_t bytes = static_cast<std::size_t>(Bytes(before->f_bfree) + 8 * kMiB);
  const std::uint64_t ino = WriteFile("big", bytes);
  auto st = fs_->GetAttr(ino);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(static_cast<std::uint64_t>(st->st_size), bytes);
  auto later = fs_->StatFs();
  ASSERT_TRUE(later.ok());
  EXPECT_LT(later->f_bfree, after->f_bfree - bytes / bs() + 1);
}

TEST_F(GrowTest, ARemountKeepsTheGrownGeometryAndItsFiles) {
  Make(24 * kMiB, 2);
  GrowTo(40 * kMiB);
  WriteFile("f", 20 * kMiB, 'g');
  const GrowReport grown = fs_->Geometry();
  Unmount();
  ExpectFsckClean();
  Mount();
  const GrowReport again = fs_->Geometry();
  EXPECT_EQ(again.new_blocks, grown.new_blocks);
  EXPECT_EQ(again.new_ag_count, grown.new_ag_count);
  EXPECT_EQ(again.new_blocks, 40 * kMiB / bs());
  auto st = fs_->Lookup(fs_->root(), "f");
  ASSERT_TRUE(st.ok());
  std::string back(static_cast<std::size_t>(st->st_size), '\0');
  auto n = fs_->Read(st->st_ino, 0, back.size(), back.data());
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(back, std::string(20 * kMiB, 'g'));
}

TEST_F(GrowTest, ShrinkingIsRefusedWithEinvalAndChangesNothing) {
  Make(24 * kMiB, 2);
  auto r = fs_->Grow(16 * kMiB);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToErrno(), EINVAL);
  EXPECT_NE(r.status().message().find("cannot shrink"), std::string::npos) << r.status().message();
  EXPECT_EQ(fs_->Geometry().new_blocks, made_.total_blocks);
}

TEST_F(GrowTest, ASizeNotBlockAlignedIsRoundedDownToWholeBlocks) {
  Make(24 * kMiB, 1);
  GrowTo(Bytes(made_.total_blocks + MinAgBlocks(made_)));  // a short last AG to lengthen
  const std::uint64_t total = fs_->superblock().total_blocks;
  const GrowReport r = GrowTo(Bytes(total + 3) + 100);
  EXPECT_EQ(r.new_blocks, total + 3);
}

TEST_F(GrowTest, ARemainderTooSmallForAnAgIsLeftUnusedAndReported) {
  Make(24 * kMiB, 1);
  const std::uint64_t too_few = MinAgBlocks(made_) - 1;
  const GrowReport r = GrowTo(Bytes(made_.total_blocks + too_few));
  EXPECT_EQ(r.new_blocks, made_.total_blocks);
  EXPECT_EQ(r.new_ag_count, 1u);
  EXPECT_EQ(r.unused_blocks, too_few);
  EXPECT_EQ(r.steps, 0u);
}

TEST_F(GrowTest, TheDefaultSizeIsTheDevicesAndADeviceThatCannotGrowIsRefused) {
  Make(24 * kMiB, 2);
  const GrowReport r = GrowTo(0);  // the whole 64 MiB device
  EXPECT_EQ(r.new_blocks, dev_->size_bytes() / bs() - r.unused_blocks);
  auto past = fs_->Grow(dev_->size_bytes() * 2);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.status().ToErrno(), EOPNOTSUPP) << past.status().ToString();
}

TEST_F(GrowTest, AReadOnlyMountIsRefusedWithErofs) {
  Make(24 * kMiB, 2);
  Unmount();
  MountOptions o;
  o.read_only = true;
  auto fs = Filesystem::MountDevice(dev_.get(), o);
  ASSERT_TRUE(fs.ok());
  auto r = (*fs)->Grow(32 * kMiB);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToErrno(), EROFS);
  EXPECT_TRUE((*fs)->Unmount().ok());
}

TEST_F(GrowTest, ALogHoldingAGrowRecoversTheGrownGeometry) {
  Make(24 * kMiB, 2);
  GrowTo(40 * kMiB);
  WriteFile("f", 12 * kMiB);  // its fsync forces the grow too
  fs_.reset();  // a crash: the log is not closed
  Mount();
  EXPECT_EQ(fs_->Geometry().new_blocks, 40 * kMiB / bs());
  Unmount();
  ExpectFsckClean();
}

TEST_F(GrowTest, AGrowNotYetInTheLogIsLostWholeInACrash) {
  Make(24 * kMiB, 2);
  GrowTo(40 * kMiB);  // committed, not forced (no commit interval, no lazy push)
  fs_.reset();
  Mount();
  EXPECT_EQ(fs_->Geometry().new_blocks, made_.total_blocks);
}

TEST_F(GrowTest, ALongLengtheningOfTheLastAgGoesInStepsEachAWholeGeometry) {
  // 1 KiB blocks: a bitmap block covers 7808 blocks, so lengthening an AG
  // by more than kGrowfsBitmapBlocks of them takes more than one step.
  dev_ = std::make_unique<MemoryDevice>(160 * kMiB);
  Make(72 * kMiB, 1, 1024);
  GrowTo(Bytes(made_.total_blocks + MinAgBlocks(made_)));
  const GrowReport r = GrowTo(0);
  EXPECT_GT(made_.ag_blocks - MinAgBlocks(made_), journal::kGrowfsBitmapBlocks * 7808u);
  EXPECT_EQ(r.steps, 2u);
  EXPECT_EQ(fs_->superblock().AgLength(1), made_.ag_blocks);
  WriteFile("f", 100 * kMiB);
}

TEST_F(GrowTest, AGrowUnderConcurrentWritesLosesNothing) {
  Make(24 * kMiB, 2);
  std::atomic<bool> done{false};
  std::vector<std::thread> writers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; !done.load() || i < 4; ++i) {
        const std::string name = "w" + std::to_string(t) + "-" + std::to_string(i);
        auto st = fs_->Mknod({}, fs_->root(), name, S_IFREG | 0644, 0);
        if (!st.ok()) {
          failures.fetch_add(1);
          return;
        }
        const std::string data(256 * 1024, static_cast<char>('a' + t));
        auto n = fs_->Write(st->st_ino, 0, data.data(), data.size());
        if (!n.ok() || *n != data.size()) failures.fetch_add(1);
        if (i % 4 == 3) (void)fs_->Unlink(fs_->root(), name);
      }
    });
  }
  for (std::uint64_t kib = 25 * 1024; kib <= 60 * 1024; kib += 512) GrowTo(kib * 1024);
  done.store(true);
  for (auto& w : writers) w.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(fs_->Geometry().new_blocks, 60 * kMiB / bs());
}

TEST(GrowPlan, LimitsAndRemainders) {
  MemoryDevice dev(24 * kMiB);
  auto sb = MakeFilesystem(&dev, {.ag_count = 2});
  ASSERT_TRUE(sb.ok());
  auto same = PlanGrow(*sb, sb->total_blocks);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->total_blocks, sb->total_blocks);
  EXPECT_EQ(same->ag_count, 2u);
  auto shrink = PlanGrow(*sb, sb->total_blocks - 1);
  EXPECT_EQ(shrink.status().ToErrno(), EINVAL);
  // Far beyond the AG limit: kMaxAgCount AGs, the rest unused.
  auto huge = PlanGrow(*sb, std::uint64_t{1} << 46);
  ASSERT_TRUE(huge.ok());
  EXPECT_EQ(huge->ag_count, format::kMaxAgCount);
  EXPECT_EQ(huge->total_blocks + huge->unused_blocks, std::uint64_t{1} << 46);
}

}  // namespace
}  // namespace walfs::fs
