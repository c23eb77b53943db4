// Specs of mkfs: the geometry it chooses and refuses, and that the image it
// writes decodes, adds up (free counts match the bitmaps, the inode map
// matches the AG headers) and holds an empty log the journal opens.
#include "fs/mkfs.h"

#include <sys/stat.h>

#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "fs/format/ag_format.h"
#include "fs/format/inode_format.h"
#include "journal/log.h"

namespace walfs::fs {
namespace {

using namespace format;  // NOLINT(build/namespaces): the format's names read best bare here

std::vector<std::byte> ReadBlock(BlockDevice* dev, const Superblock& sb, std::uint64_t blkno) {
  std::vector<std::byte> b(sb.block_size);
  EXPECT_TRUE(dev->Read(blkno * sb.block_size, b.data(), b.size()).ok());
  return b;
}

// Decodes everything mkfs wrote and checks that it adds up.
void ExpectCleanImage(BlockDevice* dev) {
  auto sb_block = std::vector<std::byte>(kSuperSize);
  ASSERT_TRUE(dev->Read(0, sb_block.data(), sb_block.size()).ok());
  auto sb = DecodeSuperblock(sb_block, dev->size_bytes());
  ASSERT_TRUE(sb.ok()) << sb.status().ToString();
  std::uint64_t free_total = 0, icount = 0, ifree = 0;
  for (std::uint32_t agno = 0; agno < sb->ag_count; ++agno) {
    auto h = DecodeAgHeader(ReadBlock(dev, *sb, sb->AgStart(agno)), *sb, agno);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    std::uint64_t used = 0;
    const std::uint64_t bits = BitsPerBitmapBlock(sb->block_size);
    // uninit_ag: the blocks past the header's counts were never written
    // (a memory device reads them as zeros) and read as an empty AG's.
    const std::uint32_t bitmap_on_disk = BitmapBlocksOnDisk(*sb, *h);
    const std::uint32_t imap_on_disk = ImapBlocksOnDisk(*sb, *h);
    for (std::uint32_t i = 0; i < sb->bitmap_blocks; ++i) {
      auto b = ReadBlock(dev, *sb, sb->AgStart(agno) + AgBitmapStart() + i);
      if (i < bitmap_on_disk) {
        ASSERT_TRUE(VerifyBitmapBlock(b, *sb, agno, i).ok());
      } else {
        ASSERT_TRUE(std::all_of(b.begin(), b.end(), [](std::byte x) { return x == std::byte{0}; }))
            << "AG " << agno << " bitmap block " << i << " is past the count written, but written";
        FillBitmapBlock(*sb, agno, i, h->length, b);
      }
      for (std::uint64_t bit = 0; bit < bits; ++bit) {
        const std::uint64_t agblock = i * bits + bit;
        if (agblock < h->length && BitmapTest(b, bit)) ++used;
        if (agblock >= h->length) {
          ASSERT_TRUE(BitmapTest(b, bit)) << "blocks past the AG's end must never be free";
        }
      }
    }
    EXPECT_EQ(used + h->free_blocks, h->length) << "AG " << agno;
    std::uint32_t chunks = 0;
    for (std::uint32_t i = 0; i < sb->imap_blocks; ++i) {
      auto b = ReadBlock(dev, *sb, sb->AgStart(agno) + AgImapStart(*sb) + i);
      if (i >= imap_on_disk) {
        ASSERT_TRUE(std::all_of(b.begin(), b.end(), [](std::byte x) { return x == std::byte{0}; }))
            << "AG " << agno << " inode map block " << i << " is past the count written, but written";
        continue;
      }
      ASSERT_TRUE(VerifyImapBlock(b, *sb, agno, i).ok());
      for (std::uint32_t s = 0; s < RecordsPerImapBlock(sb->block_size); ++s)
        if (GetImapRecord(b, s).start != 0) ++chunks;
    }
    EXPECT_EQ(chunks, h->chunks);
    free_total += h->free_blocks;
    icount += h->icount;
    ifree += h->ifree;
  }
  EXPECT_EQ(free_total, sb->free_blocks);
  EXPECT_EQ(icount, sb->icount);
  EXPECT_EQ(ifree, sb->ifree);
  // The root directory: empty, inline, its own parent.
  const std::uint64_t blk = sb->root_ino / sb->inodes_per_block();
  auto b = ReadBlock(dev, *sb, blk);
  const std::size_t slot = sb->root_ino % sb->inodes_per_block();
  auto root = DecodeInode(std::span<const std::byte>(b).subspan(slot * kInodeSize, kInodeSize),
                          sb->root_ino);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(root->mode, S_IFDIR | 0755);
  EXPECT_EQ(root->nlink, 2u);
  std::uint64_t parent = 0;
  std::vector<DirEntry> entries;
  ASSERT_TRUE(DecodeLocalDir(std::string_view(root->literal).substr(0, root->size), &parent,
                             &entries).ok());
  EXPECT_EQ(parent, sb->root_ino);
  EXPECT_TRUE(entries.empty());
  // The log: empty, and the journal opens and closes it.
  journal::LogOptions lo;
  lo.device = dev;
  lo.log_offset = sb->log_offset();
  lo.log_sectors = sb->log_sectors();
  lo.geometry = ReservationGeometryFor(sb->block_size);
  auto log = journal::Log::Open(lo);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_TRUE((*log)->recovery().position.empty);
  EXPECT_TRUE((*log)->Close().ok());
}

TEST(Mkfs, AFreshImageDecodesAndAddsUp) {
  MemoryDevice dev(256ull << 20);
  auto sb = MakeFilesystem(&dev, {.label = "fresh"});
  ASSERT_TRUE(sb.ok()) << sb.status().ToString();
  EXPECT_EQ(sb->ag_count, 4u);
  ExpectCleanImage(&dev);
}

TEST(Mkfs, EveryBlockSizeMakesAGoodImage) {
  for (std::uint32_t bs : {1024u, 2048u, 8192u, 32768u}) {
    MemoryDevice dev(96ull << 20);
    auto sb = MakeFilesystem(&dev, {.block_size = bs});
    ASSERT_TRUE(sb.ok()) << bs << ": " << sb.status().ToString();
    ExpectCleanImage(&dev);
  }
}

TEST(Mkfs, FullInitWritesEveryMapBlockAndMeansTheSameImage) {
  for (std::uint32_t bs : {1024u, 4096u}) {
    MemoryDevice dev(96ull << 20);
    auto sb = MakeFilesystem(&dev, {.block_size = bs, .uninit_ag = false});
    ASSERT_TRUE(sb.ok()) << bs << ": " << sb.status().ToString();
    EXPECT_FALSE(sb->uninit_ag());
    ExpectCleanImage(&dev);  // every bitmap and inode map block verifies
  }
}

// uninit_ag: mkfs writes the AG headers, the bitmap blocks that cover the
// AGs' own metadata and AG 0's root chunk, and one inode map block -- not
// the hundreds of MiB of empty maps a large image has.
TEST(Mkfs, ALargeImageCostsOnlyWhatIsNotEmpty) {
  MemoryDevice dev(8ull << 30);  // sparse: untouched pages cost nothing
  auto sb = MakeFilesystem(&dev, {.ag_count = 2});
  ASSERT_TRUE(sb.ok()) << sb.status().ToString();
  EXPECT_TRUE(sb->uninit_ag());
  ASSERT_GT(sb->imap_blocks, 100u);
  const BlockDeviceStats st = dev.stats();
  // The log is zeroed by Zero(), not written; the rest is a handful of
  // blocks: the superblock, per AG a header and the bitmap over its
  // metadata, AG 0's root chunk and its inode map block.
  EXPECT_LT(st.bytes_written, 32u * sb->block_size) << st.bytes_written;
  ExpectCleanImage(&dev);
}

TEST(Mkfs, ManyAllocationGroups) {
  MemoryDevice dev(128ull << 20);
  auto sb = MakeFilesystem(&dev, {.ag_count = 16});
  ASSERT_TRUE(sb.ok()) << sb.status().ToString();
  EXPECT_EQ(sb->ag_count, 16u);
  ExpectCleanImage(&dev);
}

TEST(Mkfs, TheLogIsSizedForConcurrencyAsXfsDoes) {
  const journal::ReservationTable table(ReservationGeometryFor(4096));
  auto sb = PlanFilesystem(1ull << 30, {.log_concurrency = 16});
  ASSERT_TRUE(sb.ok()) << sb.status().ToString();
  const std::uint64_t want = static_cast<std::uint64_t>(table.LargestBytes()) * 3 * 16 / 2;
  EXPECT_EQ(sb->log_blocks, (want + 4095) / 4096);
  // One concurrent transaction would be below the minimum: the minimum wins.
  auto one = PlanFilesystem(1ull << 30, {.log_concurrency = 1});
  ASSERT_TRUE(one.ok());
  EXPECT_GE(std::uint64_t{one->log_blocks} * 4096, MinLogBytes(4096));
}

TEST(Mkfs, RefusesWhatCannotWork) {
  auto expect_refused = [](std::uint64_t bytes, MkfsOptions o, std::string_view why) {
    auto sb = PlanFilesystem(bytes, o);
    ASSERT_FALSE(sb.ok()) << why;
    EXPECT_EQ(sb.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(sb.status().message().find(why), std::string_view::npos) << sb.status().ToString();
  };
  expect_refused(1ull << 30, {.log_bytes = 64 * 1024}, "too small");
  expect_refused(1ull << 30, {.log_bytes = 8 << 20, .log_concurrency = 4}, "not both");
  expect_refused(1ull << 30, {.block_size = 3000}, "power of two");
  expect_refused(1ull << 30, {.block_size = 512}, "power of two");
  expect_refused(512 * 1024, {}, "too small");
  expect_refused(1ull << 30, {.block_size = 65536}, "power of two");
  expect_refused(16ull << 20, {.ag_count = 4000}, "too small");
  // Asked for, an AG count is made exactly: not 997 AGs for -a 1000.
  expect_refused(1ull << 30, {.ag_count = 1000}, "would leave the last 3 empty (258047 data blocks); ask for at most 997");
  expect_refused(1ull << 30, {.label = std::string(65, 'x')}, "label");
}

TEST(Mkfs, AGivenUuidAndTimeAreKept) {
  MemoryDevice dev(64ull << 20);
  const Uuid u{9, 8, 7, 6, 5, 4, 3, 2, 1};
  auto sb = MakeFilesystem(&dev, {.uuid = u, .now_s = 1234567890});
  ASSERT_TRUE(sb.ok());
  std::vector<std::byte> b(kSuperSize);
  ASSERT_TRUE(dev.Read(0, b.data(), b.size()).ok());
  auto d = DecodeSuperblock(b);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->uuid, u);
  EXPECT_EQ(d->created_s, 1234567890);
}

}  // namespace
}  // namespace walfs::fs
