// Specs of the uninit_ag feature (fs/ag_blocks.h): AG bitmap and inode-map
// blocks written as they are first used.  Allocations that reach past the
// blocks written make them real one at a time, through the log, and every
// crash state of such a change recovers to an image fsck finds clean.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "base/block_device_recording.h"
#include "crash/planner.h"
#include "fs/filesystem.h"
#include "fs/format/ag_format.h"
#include "fs/fsck.h"
#include "fs/mkfs.h"
#include "tests/fs/quiet_mount.h"
#include "tests/sanitizer_build.h"
#include "tests/sizes.h"

namespace walfs::fs {
namespace {

using format::AgHeader;
using format::Superblock;

using walfs::testing::kMiB;


// One AG of 1 KiB blocks: a bitmap block covers 7,808 blocks (7.6 MiB) and
// an inode-map block 61 chunks (3,904 inodes), so small loads cross both.
// The map blocks mkfs did not write hold junk, as an image file or disk
// used before would: nothing may read them before making them real.
Superblock Make(MemoryDevice* disk) {
  auto made = MakeFilesystem(disk, {.block_size = 1024, .ag_count = 1});
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_TRUE(made->uninit_ag());
  const Superblock& sb = *made;
  std::vector<std::byte> junk(sb.block_size, std::byte{0x5a});
  for (std::uint32_t i = format::MetadataBitmapBlocks(sb) + 1; i < sb.bitmap_blocks; ++i)
    EXPECT_TRUE(disk->Write((sb.AgStart(0) + format::AgBitmapStart() + i) * sb.block_size, junk.data(),
                            junk.size()).ok());
  for (std::uint32_t i = 1; i < sb.imap_blocks; ++i)
    EXPECT_TRUE(disk->Write((sb.AgStart(0) + format::AgImapStart(sb) + i) * sb.block_size, junk.data(),
                            junk.size()).ok());
  return *made;
}

bool Junk(BlockDevice* dev, const Superblock& sb, std::uint64_t blkno) {
  std::vector<std::byte> b(sb.block_size);
  EXPECT_TRUE(dev->Read(blkno * sb.block_size, b.data(), b.size()).ok());
  return std::all_of(b.begin(), b.end(), [](std::byte x) { return x == std::byte{0x5a}; });
}

AgHeader Header(BlockDevice* dev, const Superblock& sb) {
  std::vector<std::byte> b(sb.block_size);
  EXPECT_TRUE(dev->Read(sb.AgStart(0) * sb.block_size, b.data(), b.size()).ok());
  auto h = format::DecodeAgHeader(b, sb, 0);
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  return h.ok() ? *h : AgHeader{};
}

std::string Problems(BlockDevice* dev) {
  auto r = CheckImage(dev, {});
  if (!r.ok()) return r.status().ToString();
  std::string all;
  for (const auto& p : r->problems) all += p.message + "\n";
  return all;
}

std::uint64_t WriteFile(Filesystem* fs, std::string_view name, std::size_t bytes, char fill) {
  auto st = fs->Mknod({}, fs->root(), name, 0100644, 0);
  EXPECT_TRUE(st.ok()) << st.status().ToString();
  const std::string data(bytes, fill);
  auto n = fs->Write(st->st_ino, 0, data.data(), data.size());
  EXPECT_TRUE(n.ok() && *n == data.size()) << (n.ok() ? "short" : n.status().ToString());
  return st->st_ino;
}

TEST(UninitAg, AllocationsPastTheWrittenBitmapMakeItsBlocksRealAsTheyAreReached) {
  MemoryDevice disk(64 * kMiB);
  const Superblock sb = Make(&disk);
  const std::uint64_t bits = format::BitsPerBitmapBlock(sb.block_size);
  ASSERT_EQ(Header(&disk, sb).bitmap_init, 1u);
  ASSERT_GE(sb.bitmap_blocks, 6u);
  {
    auto fs = Filesystem::MountDevice(&disk, testing::QuietMount());
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    WriteFile(fs->get(), "big", 20 * kMiB, 'b');  // 20,480 blocks: into bitmap block 2
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  const AgHeader h = Header(&disk, sb);
  EXPECT_EQ(h.bitmap_init, 3u) << "exactly the blocks the allocations reached";
  for (std::uint32_t i = h.bitmap_init; i < sb.bitmap_blocks; ++i) {
    if (std::uint64_t{i} * bits >= h.length) break;
    EXPECT_TRUE(Junk(&disk, sb, sb.AgStart(0) + format::AgBitmapStart() + i)) << "bitmap block " << i;
  }
  EXPECT_EQ(Problems(&disk), "");
  {
    auto fs = Filesystem::MountDevice(&disk, testing::QuietMount());
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    auto st = (*fs)->Lookup((*fs)->root(), "big");
    ASSERT_TRUE(st.ok());
    std::string back(20 * kMiB, '\0');
    auto n = (*fs)->Read(st->st_ino, 0, back.size(), back.data());
    ASSERT_TRUE(n.ok() && *n == back.size());
    EXPECT_EQ(back, std::string(20 * kMiB, 'b'));
    // Freed again: the written blocks stay written, and add up.
    ASSERT_TRUE((*fs)->Unlink((*fs)->root(), "big").ok());
    // The rest of the AG, to its end, through the blocks not yet written.
    const std::uint64_t left = (*fs)->AvailableBytes();
    WriteFile(fs->get(), "rest", left / 2, 'r');
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  EXPECT_GT(Header(&disk, sb).bitmap_init, 3u);
  EXPECT_EQ(Problems(&disk), "");
}

TEST(UninitAg, InodesPastTheWrittenInodeMapMakeItsNextBlockReal) {
  MemoryDevice disk(64 * kMiB);
  const Superblock sb = Make(&disk);
  const std::uint32_t per_block = format::RecordsPerImapBlock(sb.block_size) * sb.inodes_per_chunk;
  ASSERT_EQ(Header(&disk, sb).imap_init, 1u);
  std::uint64_t last = 0;
  {
    auto fs = Filesystem::MountDevice(&disk, testing::QuietMount());
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    for (std::uint32_t i = 0; i < per_block + 10; ++i) {
      auto st = (*fs)->Mknod({}, (*fs)->root(), "f" + std::to_string(i), 0100644, 0);
      ASSERT_TRUE(st.ok()) << i << ": " << st.status().ToString();
      last = st->st_ino;
    }
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  EXPECT_EQ(Header(&disk, sb).imap_init, 2u);
  EXPECT_TRUE(Junk(&disk, sb, sb.AgStart(0) + format::AgImapStart(sb) + 2));
  EXPECT_EQ(Problems(&disk), "");
  {
    auto fs = Filesystem::MountDevice(&disk, testing::QuietMount());
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    auto st = (*fs)->Lookup((*fs)->root(), "f" + std::to_string(per_block + 9));
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    EXPECT_EQ(st->st_ino, last);
    for (std::uint32_t i = 0; i < per_block + 10; i += 2)
      ASSERT_TRUE((*fs)->Unlink((*fs)->root(), "f" + std::to_string(i)).ok()) << i;
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  EXPECT_EQ(Problems(&disk), "");
}

// The changes that make map blocks real, recorded write by write, and every
// crash state the planner makes of them (every prefix, torn writes, sampled
// reorderings) mounted and checked: whichever side of the change a crash
// leaves, the image recovers, fsck is clean, and the space and inodes past
// it are usable.
TEST(UninitAgCrash, EveryCrashStateOfMakingMapBlocksRealRecoversCleanly) {
  MemoryDevice disk(32 * kMiB);
  const Superblock sb = Make(&disk);
  const std::uint32_t per_block = format::RecordsPerImapBlock(sb.block_size) * sb.inodes_per_chunk;
  {
    // Not recorded: the first inode-map block and the first bitmap block
    // nearly full.
    auto fs = Filesystem::MountDevice(&disk, testing::QuietMount());
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    for (std::uint32_t i = 0; i + 100 < per_block; ++i)
      ASSERT_TRUE((*fs)->Mknod({}, (*fs)->root(), "p" + std::to_string(i), 0100644, 0).ok()) << i;
    WriteFile(fs->get(), "fill", 5 * kMiB, 'p');
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  const AgHeader before = Header(&disk, sb);
  ASSERT_EQ(before.bitmap_init, 1u);
  ASSERT_EQ(before.imap_init, 1u);
  auto rec = RecordingDevice::Create(&disk);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  {
    auto fs = Filesystem::MountDevice(rec->get(), testing::QuietMount());
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    for (int i = 0; i < 150; ++i)
      ASSERT_TRUE((*fs)->Mknod({}, (*fs)->root(), "n" + std::to_string(i), 0100644, 0).ok()) << i;
    WriteFile(fs->get(), "grown", kMiB, 'g');
    ASSERT_TRUE((*fs)->Sync().ok());
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  const AgHeader after = Header(&disk, sb);
  ASSERT_EQ(after.bitmap_init, 2u) << "the recorded write must reach the second bitmap block";
  ASSERT_EQ(after.imap_init, 2u) << "the recorded creates must reach the second inode-map block";
  // Every prefix in the plain build; under ASan every other one and under
  // TSan every fourth (and each that ends at a flush): each state is a
  // mount and a check, five and ten times dearer there.  Under TSan, then
  // every fourth of those states: what it watches, a mount's threads, is
  // the same in each.
  const auto prefix_stride = static_cast<std::size_t>(walfs::testing::ForBuild({.full = 1, .address = 2, .thread = 4}));
  const auto state_stride = static_cast<std::size_t>(walfs::testing::ForBuild({.full = 1, .address = 1, .thread = 4}));
  auto states = crash::PlanCrashStates(**rec, {.seed = 1, .samples = 20, .every_prefix = true,
                                               .prefix_stride = prefix_stride, .state_stride = state_stride});
  ASSERT_TRUE(states.ok()) << states.status().ToString();
  ASSERT_GT(states->size(), 10u);
  int made_real = 0;
  for (const crash::CrashState& s : *states) {
    auto img = crash::Materialize(**rec, s);
    ASSERT_TRUE(img.ok()) << img.status().ToString();
    auto fs = Filesystem::MountDevice(img->get(), testing::QuietMount());
    ASSERT_TRUE(fs.ok()) << s.description << ": " << fs.status().ToString();
    // Usable past the change, whichever side of it the crash left.
    for (int i = 0; i < 200; ++i)
      ASSERT_TRUE((*fs)->Mknod({}, (*fs)->root(), "after" + std::to_string(i), 0100644, 0).ok())
          << s.description << ": " << i;
    WriteFile(fs->get(), "after", 2 * kMiB, 'a');
    ASSERT_TRUE((*fs)->Unmount().ok()) << s.description;
    fs->reset();
    const AgHeader h = Header(img->get(), sb);
    if (h.bitmap_init >= 2 && h.imap_init >= 2) ++made_real;
    EXPECT_EQ(Problems(img->get()), "") << s.description;
  }
  EXPECT_EQ(made_real, static_cast<int>(states->size())) << "every state ends with both blocks real";
  std::printf("%zu crash states checked\n", states->size());
}

}  // namespace
}  // namespace walfs::fs
