// Specs for fsck -y's rebuilds after one damaged block (issue 24; fs/fsck.h,
// fs/fsck_ag_repair.h, fs/fsck_btree_repair.h, fs/super_copy.h): a crashed
// base image with exactly one superblock, AG header, bitmap, inode-map
// block or B+tree leaf damaged is
// repaired so that a second check finds nothing, the image mounts, walks
// and changes without meeting damage, and every file outside the damage
// reads as it was (CheckDurable).
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "base/messages.h"
#include "fs/filesystem.h"
#include "fs/format/block_header.h"
#include "fs/format/btree_format.h"
#include "fs/fsck.h"
#include "tests/hostile/hostile_image.h"
#include "tests/hostile/hostile_log_steps.h"
#include "tests/hostile/hostile_round.h"

namespace walfs::hostile {
namespace {

using fs::format::DecodeBtreeNodeHeader;

// The log-damage flavour: crashed, and CheckDurable knows what it holds.
const BaseImage& Base() {
  static const BaseImage* base = [] {
    Messages::Get().SetSink(Messages::Sink::kNone);
    auto built = BuildBaseImage(Flavour::kLogDamage);
    EXPECT_TRUE(built.ok()) << built.status().ToString();
    return new BaseImage(std::move(built).value());
  }();
  return *base;
}

std::span<std::byte> BlockOf(std::vector<std::byte>& image, const MetaBlock& b) {
  return std::span<std::byte>(image).subspan(b.offset, b.length);
}

// The base image after its log is replayed: damage to a block the log
// rewrites would be gone before the check saw it.
const std::vector<std::byte>& Replayed() {
  static const std::vector<std::byte>* replayed = [] {
    MemoryDevice dev(Base().image);
    EXPECT_TRUE(fs::CheckImage(&dev, {.replay = true}).ok());
    return new std::vector<std::byte>(dev.Contents());
  }();
  return *replayed;
}

bool UntouchedByReplay(const MetaBlock& b) {
  return std::equal(Base().image.begin() + b.offset, Base().image.begin() + b.offset + b.length,
                    Replayed().begin() + b.offset);
}

// The first block of `kind` (of `owner`'s tree, a leaf, when owner != 0)
// that the log does not rewrite.
const MetaBlock& Untouched(BlockKind kind, std::uint64_t owner = 0) {
  const auto& blocks = Base().blocks[static_cast<int>(kind)];
  auto it = std::find_if(blocks.begin(), blocks.end(), [&](const MetaBlock& b) {
    if (!UntouchedByReplay(b)) return false;
    if (owner == 0) return true;
    const auto h = DecodeBtreeNodeHeader(std::span<const std::byte>(Base().image).subspan(b.offset, b.length));
    return h.level == 0 && h.owner == owner;
  });
  EXPECT_NE(it, blocks.end());
  return *it;
}

struct Outcome {
  fs::FsckReport repair, second;
  bool mounted = false;
  std::string mount_error;
  std::vector<std::string> lost;  // CheckDurable after the repair
  RoundResult walk;
  bool unmount_ok = false;
};

Outcome RepairAndMount(std::vector<std::byte> image) {
  Outcome o;
  MemoryDevice dev(std::move(image));
  auto repair = fs::CheckImage(&dev, {.replay = true, .repair = true, .clear_and_reconnect = true});
  EXPECT_TRUE(repair.ok()) << repair.status().ToString();
  if (repair.ok()) o.repair = *repair;
  auto second = fs::CheckImage(&dev, {.replay = false});
  EXPECT_TRUE(second.ok()) << second.status().ToString();
  if (second.ok()) o.second = *second;
  auto fs = fs::Filesystem::MountDevice(&dev, {.image = {}, .buffer_cache = 1024});
  if (!fs.ok()) {
    o.mount_error = fs.status().ToString();
    return o;
  }
  o.mounted = true;
  o.lost = CheckDurable(fs->get(), Base());
  ExerciseMounted(fs->get(), &o.walk);
  o.unmount_ok = (*fs)->Unmount().ok();
  return o;
}

std::string Problems(const fs::FsckReport& r) {
  std::string s;
  for (const fs::FsckProblem& p : r.problems) s += (p.repaired ? "  [repaired] " : "  ") + p.message + "\n";
  return s;
}

bool AnyRepairedSays(const fs::FsckReport& r, std::string_view what) {
  return std::any_of(r.problems.begin(), r.problems.end(),
                     [&](const fs::FsckProblem& p) { return p.repaired && p.message.find(what) != std::string::npos; });
}

// A second check is clean, the image mounts, walks, changes and unmounts.
void ExpectSettled(const Outcome& o) {
  EXPECT_EQ(o.repair.unrepaired(), 0u) << Problems(o.repair);
  EXPECT_TRUE(o.second.problems.empty()) << Problems(o.second);
  EXPECT_TRUE(o.mounted) << o.mount_error;
  EXPECT_EQ(o.walk.damage_errors, 0u) << o.walk.first_error;
  EXPECT_TRUE(o.unmount_ok);
}

// Every durable thing lost is the damaged file's (`path`, and what is in it).
void ExpectLostOnlyFrom(const Outcome& o, std::string_view path) {
  for (const std::string& l : o.lost) EXPECT_EQ(l.rfind(path, 0), 0u) << l;
}

TEST(FsckRebuild, AnAgHeaderWhoseCrcFailsIsRebuiltAndEveryFileIsKept) {
  std::vector<std::byte> image = Base().image;
  const MetaBlock& ag = Untouched(BlockKind::kAgHeader);
  BlockOf(image, ag)[300] ^= std::byte{0x5a};  // past the fields: the CRC alone fails
  const Outcome o = RepairAndMount(std::move(image));
  ExpectSettled(o);
  EXPECT_TRUE(AnyRepairedSays(o.repair, "rebuilt from the superblock's geometry")) << Problems(o.repair);
  EXPECT_TRUE(o.lost.empty()) << o.lost.front();
}

TEST(FsckRebuild, AnAgHeaderWithAWrongFieldIsRebuiltAndEveryFileIsKept) {
  {
    const MetaBlock& ag = Untouched(BlockKind::kAgHeader);
    std::vector<std::byte> image = Base().image;
    BlockOf(image, ag)[52] ^= std::byte{0x01};  // its length, resealed: the CRC passes, the field does not
    fs::format::SealBlock(BlockOf(image, ag));
    const Outcome o = RepairAndMount(std::move(image));
    ExpectSettled(o);
    EXPECT_TRUE(AnyRepairedSays(o.repair, "rebuilt from the superblock's geometry")) << Problems(o.repair);
    EXPECT_TRUE(o.lost.empty()) << o.lost.front();
  }
}

TEST(FsckRebuild, ASuperblockThatFailsItsChecksIsRebuiltFromTheAgHeadersAndEveryFileIsKept) {
  // The crashed image: its log is replayed over the rebuilt superblock.
  for (const std::size_t at : {std::size_t{2}, std::size_t{49}, std::size_t{81}, std::size_t{200}}) {
    std::vector<std::byte> image = Base().image;
    image[at] ^= std::byte{0x5a};
    const Outcome o = RepairAndMount(std::move(image));
    ExpectSettled(o);
    EXPECT_TRUE(AnyRepairedSays(o.repair, "superblock rebuilt from AG 0's copy")) << "byte " << at << "\n"
                                                                                  << Problems(o.repair);
    EXPECT_TRUE(o.lost.empty()) << "byte " << at << ": " << o.lost.front();
  }
}

TEST(FsckRebuild, ABitmapBlockWhoseCrcFailsIsRewrittenFromTheBlocksInUse) {
  std::vector<std::byte> image = Base().image;
  const MetaBlock& bm = Untouched(BlockKind::kBitmap);
  BlockOf(image, bm)[fs::format::kBlockHeaderSize + 40] ^= std::byte{0xff};  // eight blocks' bits
  const Outcome o = RepairAndMount(std::move(image));
  ExpectSettled(o);
  EXPECT_TRUE(AnyRepairedSays(o.repair, "header and CRC rewritten")) << Problems(o.repair);
  EXPECT_TRUE(o.lost.empty()) << o.lost.front();
}

TEST(FsckRebuild, AnInodeMapBlockWithAGarbledSlotKeepsEveryChunk) {
  std::vector<std::byte> image = Base().image;
  // Every map block is logged, but replay writes only the logged ranges:
  // an unused slot keeps the damage (under a CRC made current).
  const MetaBlock& im = Base().blocks[static_cast<int>(BlockKind::kImap)].front();
  BlockOf(image, im)[im.length - 3] ^= std::byte{0x40};  // the last slot, unused: "unused but not zero"
  const Outcome o = RepairAndMount(std::move(image));
  ExpectSettled(o);
  EXPECT_TRUE(AnyRepairedSays(o.repair, "rebuilt from its records that check out")) << Problems(o.repair);
  EXPECT_TRUE(o.lost.empty()) << o.lost.front();
}

TEST(FsckRebuild, AnExtentLeafWhoseCrcAloneFailsKeepsEveryExtent) {
  std::vector<std::byte> image = Base().image;
  const MetaBlock& leaf = Untouched(BlockKind::kExtentNode, Base().extent_file_ino);
  BlockOf(image, leaf)[8] ^= std::byte{0x10};  // its LSN stamp: sound but for the CRC
  const Outcome o = RepairAndMount(std::move(image));
  ExpectSettled(o);
  EXPECT_TRUE(AnyRepairedSays(o.repair, "extent tree rebuilt")) << Problems(o.repair);
  EXPECT_TRUE(o.lost.empty()) << o.lost.front();
}

TEST(FsckRebuild, AnExtentLeafThatDoesNotVerifyIsDroppedAndTheRestOfTheFileKept) {
  std::vector<std::byte> image = Base().image;
  const MetaBlock& leaf = Untouched(BlockKind::kExtentNode, Base().extent_file_ino);
  BlockOf(image, leaf)[fs::format::kBtreeNrecsOffset + 1] = std::byte{0x7f};  // nrecs past the block
  fs::format::SealBlock(BlockOf(image, leaf));
  const Outcome o = RepairAndMount(std::move(image));
  ExpectSettled(o);
  EXPECT_TRUE(AnyRepairedSays(o.repair, "extent tree rebuilt")) << Problems(o.repair);
  ExpectLostOnlyFrom(o, "/extents");
  EXPECT_FALSE(o.lost.empty());  // the leaf's extents read zeros now
  // One leaf's extents dropped, the others' kept.
  EXPECT_TRUE(AnyRepairedSays(o.repair, "(144 extents, 151 blocks kept")) << Problems(o.repair);
}

TEST(FsckRebuild, AnXattrLeafThatDoesNotVerifyIsDroppedAndTheOtherXattrsKept) {
  std::vector<std::byte> image = Base().image;
  const MetaBlock& leaf = Untouched(BlockKind::kXattrNode, Base().xattr_file_ino);
  BlockOf(image, leaf)[fs::format::kBtreeNrecsOffset + 1] = std::byte{0x7f};
  fs::format::SealBlock(BlockOf(image, leaf));
  const Outcome o = RepairAndMount(std::move(image));
  ExpectSettled(o);
  EXPECT_TRUE(AnyRepairedSays(o.repair, "xattr tree rebuilt")) << Problems(o.repair);
  ExpectLostOnlyFrom(o, "/xattrs");
}

TEST(FsckRebuild, ADirectoryLeafThatDoesNotVerifyIsDroppedAndTheOtherNamesKept) {
  std::vector<std::byte> image = Base().image;
  const MetaBlock& leaf = Untouched(BlockKind::kDirNode, Base().big_dir_ino);
  BlockOf(image, leaf)[fs::format::kBtreeNrecsOffset + 1] = std::byte{0x7f};
  fs::format::SealBlock(BlockOf(image, leaf));
  const Outcome o = RepairAndMount(std::move(image));
  ExpectSettled(o);
  EXPECT_TRUE(AnyRepairedSays(o.repair, "directory index rebuilt")) << Problems(o.repair);
  ExpectLostOnlyFrom(o, "big/");
  // One leaf's names are gone (their files are in /lost+found), not all 389.
  EXPECT_FALSE(o.lost.empty());
  EXPECT_LT(o.lost.size(), 60u) << "big/ was emptied rather than one leaf dropped";
  EXPECT_TRUE(AnyRepairedSays(o.repair, "reconnected as /lost+found/")) << Problems(o.repair);
}

}  // namespace
}  // namespace walfs::hostile
