// Specs of the superblock's copies in the AG headers (fs/super_copy.h;
// docs/disk_format.md, "Superblock copies"): mkfs writes one in every AG
// header; a primary damaged anywhere in its 512 bytes, or wiped, is
// rebuilt by fsck -y from them (and -n checks the rest with their
// geometry); after a grow the copies of the new AGs give the grown size;
// a copy that disagrees with a sound primary is rewritten; walfs-admin's
// label and UUID changes reach the copies; a mount of a damaged image says
// to run fsck -y; an image without the feature says no copy exists.
#include <sys/stat.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "fs/filesystem.h"
#include "fs/format/ag_format.h"
#include "fs/format/block_header.h"
#include "fs/fsck.h"
#include "fs/mkfs.h"
#include "fs/super.h"
#include "fs/super_copy.h"
#include "tests/sizes.h"

namespace walfs::fs {
namespace {

using walfs::testing::kMiB;

std::string Problems(const FsckReport& r) {
  std::string s;
  for (const FsckProblem& p : r.problems) s += (p.repaired ? "[repaired] " : "") + p.message + "\n";
  return s;
}

class SuperCopyTest : public ::testing::Test {
 protected:
  // A filesystem of `bytes` at the start of a device of `device_bytes`
  // (room to grow), with a few files in it.
  void Make(std::uint64_t bytes = 32 * kMiB, std::uint32_t block_size = 4096, std::uint64_t device_bytes = 0) {
    dev_ = std::make_unique<MemoryDevice>(device_bytes ? device_bytes : bytes);
    auto sb = MakeFilesystem(dev_.get(), {.block_size = block_size, .ag_count = 4, .size_bytes = bytes});
    ASSERT_TRUE(sb.ok()) << sb.status().ToString();
    made_ = *sb;
    auto fs = Filesystem::MountDevice(dev_.get(), {});
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    for (int i = 0; i < 5; ++i) {
      auto st = (*fs)->Mknod({}, (*fs)->root(), "f" + std::to_string(i), S_IFREG | 0644, 0);
      ASSERT_TRUE(st.ok()) << st.status().ToString();
      const std::string data(5000, static_cast<char>('a' + i));
      ASSERT_TRUE((*fs)->Write(st->st_ino, 0, data.data(), data.size()).ok());
    }
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  std::vector<std::byte> Block(std::uint64_t blkno) {
    std::vector<std::byte> b(made_.block_size);
    EXPECT_TRUE(dev_->Read(blkno * made_.block_size, b.data(), b.size()).ok());
    return b;
  }
  void PutBlock(std::uint64_t blkno, const std::vector<std::byte>& b) {
    ASSERT_TRUE(dev_->Write(blkno * made_.block_size, b.data(), b.size()).ok());
  }
  void FlipSuperByte(std::size_t at, std::uint8_t x) {
    std::vector<std::byte> b = Block(0);
    b[at] ^= std::byte{x};
    PutBlock(0, b);
  }
  Result<FsckReport> Check(bool repair) {
    return CheckImage(dev_.get(), {.replay = repair, .repair = repair, .clear_and_reconnect = repair});
  }
  void ExpectClean() {
    auto r = Check(false);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->problems.empty()) << Problems(*r);
    EXPECT_EQ(r->ExitCode(), 0);
  }
  void ExpectMountsWithFiles() {
    auto fs = Filesystem::MountDevice(dev_.get(), {});
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    for (int i = 0; i < 5; ++i) {
      auto st = (*fs)->Lookup((*fs)->root(), "f" + std::to_string(i));
      ASSERT_TRUE(st.ok()) << "f" << i << ": " << st.status().ToString();
      EXPECT_EQ(st->st_size, 5000);
    }
    EXPECT_TRUE((*fs)->Unmount().ok());
  }

  std::unique_ptr<MemoryDevice> dev_;
  format::Superblock made_;
};

TEST_F(SuperCopyTest, MkfsWritesTheSuperblockIntoEveryAgHeader) {
  Make();
  EXPECT_TRUE(made_.super_copies());
  for (std::uint32_t agno = 0; agno < made_.ag_count; ++agno) {
    auto copy = format::DecodeAgSuperCopy(Block(made_.AgStart(agno)), dev_->size_bytes());
    ASSERT_TRUE(copy.ok()) << "AG " << agno << ": " << copy.status().ToString();
    EXPECT_EQ(format::SuperblockCopyMismatch(*copy, made_), "") << "AG " << agno;
    EXPECT_EQ(copy->total_blocks, made_.total_blocks);
    EXPECT_EQ(copy->ag_count, made_.ag_count);
    EXPECT_FALSE(copy->clean()) << "a copy says nothing of the mount state";
    EXPECT_EQ(copy->free_blocks, 0u);
  }
  ExpectClean();
}

// Every field of the primary, one byte each: magic, CRC, version, features,
// flags, uuid, block size, sizes, log, root, counters, label, error record
// and the reserved tail.
class SuperCopyFlip : public SuperCopyTest, public ::testing::WithParamInterface<std::size_t> {};

TEST_P(SuperCopyFlip, FsckRebuildsAPrimaryDamagedAtAnyByteFromTheCopies) {
  Make();
  FlipSuperByte(GetParam(), 0x5a);
  ASSERT_FALSE(ReadSuperblock(dev_.get()).ok()) << "the flip must make the primary fail its checks";

  auto dry = Check(false);
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_EQ(dry->ExitCode(), 4) << Problems(*dry);
  ASSERT_EQ(dry->problems.size(), 1u) << "-n checks the rest with the copies' geometry and finds nothing else:\n"
                                      << Problems(*dry);
  EXPECT_NE(dry->problems[0].message.find("fsck.walfs -y rebuilds the superblock"), std::string::npos)
      << dry->problems[0].message;
  EXPECT_FALSE(ReadSuperblock(dev_.get()).ok()) << "-n wrote the superblock";

  auto fixed = Check(true);
  ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
  EXPECT_EQ(fixed->ExitCode(), 1) << Problems(*fixed);
  EXPECT_NE(Problems(*fixed).find("superblock rebuilt from AG 0's copy"), std::string::npos) << Problems(*fixed);
  auto sb = ReadSuperblock(dev_.get());
  ASSERT_TRUE(sb.ok()) << sb.status().ToString();
  EXPECT_EQ(format::SuperblockCopyMismatch(*sb, made_), "");
  EXPECT_EQ(sb->total_blocks, made_.total_blocks);
  EXPECT_TRUE(sb->clean()) << "the repair counts the counters and marks it clean";
  ExpectClean();
  ExpectMountsWithFiles();
}

INSTANTIATE_TEST_SUITE_P(Bytes, SuperCopyFlip,
                         ::testing::Values(0, 3, 5, 9, 13, 17, 24, 29, 40, 49, 52, 58, 65, 70, 73, 81, 85, 90, 97,
                                           101, 106, 114, 122, 130, 140, 150, 210, 230, 300, 400, 511));

TEST_F(SuperCopyTest, AWipedPrimaryIsFoundByScanningAndRebuilt) {
  Make(24 * kMiB, 1024);
  PutBlock(0, std::vector<std::byte>(made_.block_size));
  auto fixed = Check(true);
  ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
  EXPECT_EQ(fixed->ExitCode(), 1) << Problems(*fixed);
  ExpectClean();
  ExpectMountsWithFiles();
}

TEST_F(SuperCopyTest, AfterAGrowTheRebuiltPrimaryHasTheGrownSize) {
  Make(16 * kMiB, 4096, 40 * kMiB);
  {
    auto fs = Filesystem::MountDevice(dev_.get(), {});
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    ASSERT_TRUE((*fs)->Grow(40 * kMiB).ok());
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  auto grown = ReadSuperblock(dev_.get());
  ASSERT_TRUE(grown.ok());
  ASSERT_GT(grown->ag_count, made_.ag_count);
  ExpectClean();  // the old AGs' copies say the old size, and are right to

  FlipSuperByte(60, 0x01);  // total_blocks
  auto fixed = Check(true);
  ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
  auto sb = ReadSuperblock(dev_.get());
  ASSERT_TRUE(sb.ok()) << sb.status().ToString();
  EXPECT_EQ(sb->total_blocks, grown->total_blocks);
  EXPECT_EQ(sb->ag_count, grown->ag_count);
  ExpectClean();
  ExpectMountsWithFiles();
}

TEST_F(SuperCopyTest, ACopyThatDisagreesWithASoundPrimaryIsRewritten) {
  Make();
  // AG 2's copy says another label, and its header is resealed, as a
  // write by some other program would leave it.
  const std::uint64_t at = made_.AgStart(2);
  std::vector<std::byte> b = Block(at);
  format::Superblock other = format::SuperblockCopyOf(made_);
  other.label = "not this one";
  format::EncodeSuperblock(other, std::span<std::byte>(b).subspan(format::kAgSuperCopyOffset, format::kSuperSize));
  format::SealBlock(b);
  PutBlock(at, b);

  auto dry = Check(false);
  ASSERT_TRUE(dry.ok());
  EXPECT_EQ(dry->ExitCode(), 4);
  EXPECT_NE(Problems(*dry).find("AG 2 header's copy of the superblock: its label is not the superblock's"),
            std::string::npos)
      << Problems(*dry);
  auto fixed = Check(true);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->ExitCode(), 1) << Problems(*fixed);
  ExpectClean();
}

TEST_F(SuperCopyTest, ALabelChangeReachesTheCopies) {
  Make();
  auto sb = ReadSuperblock(dev_.get());
  ASSERT_TRUE(sb.ok());
  sb->label = "renamed";
  ASSERT_TRUE(WriteSuperblock(dev_.get(), *sb).ok());
  auto stale = Check(false);
  ASSERT_TRUE(stale.ok());
  EXPECT_EQ(stale->problems.size(), made_.ag_count) << "the primary alone changed:\n" << Problems(*stale);

  ASSERT_TRUE(WriteSuperblockCopies(dev_.get(), *sb).ok());
  ExpectClean();
  FlipSuperByte(150, 0x20);
  ASSERT_TRUE(Check(true).ok());
  auto rebuilt = ReadSuperblock(dev_.get());
  ASSERT_TRUE(rebuilt.ok());
  EXPECT_EQ(rebuilt->label, "renamed");
}

TEST_F(SuperCopyTest, AMountOfADamagedPrimarySaysToRunFsck) {
  Make();
  FlipSuperByte(49, 0x10);
  MountOptions o;
  o.image = "/images/a.img";
  auto fs = Filesystem::MountDevice(dev_.get(), o);
  ASSERT_FALSE(fs.ok());
  EXPECT_TRUE(fs.status().IsCorruption());
  EXPECT_NE(fs.status().message().find("the AG headers hold copies of it: fsck.walfs -y /images/a.img rebuilds it"),
            std::string::npos)
      << fs.status().message();
}

TEST_F(SuperCopyTest, WithoutCopiesADamagedPrimaryIsNamedAndLeftAlone) {
  Make();
  // Every AG header as a walfs before the feature wrote it.
  for (std::uint32_t agno = 0; agno < made_.ag_count; ++agno) {
    std::vector<std::byte> b = Block(made_.AgStart(agno));
    std::memset(b.data() + format::kAgSuperCopyOffset, 0, format::kSuperSize);
    format::SealBlock(b);
    PutBlock(made_.AgStart(agno), b);
  }
  FlipSuperByte(49, 0x10);
  auto r = Check(true);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption());
  EXPECT_NE(r.status().message().find("no AG header holds a copy of the superblock"), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(ReadSuperblock(dev_.get()).ok()) << "nothing written";
}

TEST_F(SuperCopyTest, ABlockZeroThatIsNotWalfsIsNotScannedForCopies) {
  Make();
  // The copies are all there; only block 0 says this is not a walfs image
  // (its magic four bytes off), so nothing is read beyond it.
  PutBlock(0, std::vector<std::byte>(made_.block_size, std::byte{0x77}));
  auto c = FindSuperblockCopy(dev_.get(), /*scan=*/true);
  EXPECT_FALSE(c.ok());
  auto r = Check(true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a walfs image"), std::string::npos) << r.status().message();
  // Wiped instead, it is scanned: the same image is found.
  PutBlock(0, std::vector<std::byte>(made_.block_size));
  c = FindSuperblockCopy(dev_.get(), /*scan=*/true);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->witnesses, made_.ag_count);
  EXPECT_EQ(format::SuperblockCopyMismatch(c->sb, made_), "");
}

}  // namespace
}  // namespace walfs::fs
