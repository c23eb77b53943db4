// An allocation group (docs/disk_format.md, "Allocation groups").  Each AG
// is a run of blocks with its own header, free-space bitmap and inode map,
// so allocations in different AGs do not contend:
//
//   agblock 0                    AG header ("AGHD")
//   agblock 1 .. B               free-space bitmap blocks ("AGBM"), 1 bit a block, set = in use
//   agblock B+1 .. B+M           inode map blocks ("AGIM"): inode chunk records
//   the rest                     data and inode chunks
//
// AG header, after the 48-byte block header:
//   48 agno u32   52 length u32   56 free_blocks u32   60 icount u32
//   64 ifree u32  68 chunks u32   72 unlinked_head u64 (first inode on the AG's unlinked list, 0: none)
//   80 bitmap_init u32  84 imap_init u32 (with the uninit_ag feature: the
//      bitmap and inode-map blocks on disk, [0, n) of each; 0 without it)
//
// Blocks written as they are first used (uninit_ag): a bitmap block at or
// past bitmap_init has never been written, and reads as FillBitmapBlock
// makes it -- the AG's own metadata and whatever lies past its end in use,
// the rest free; an inode-map block at or past imap_init reads as empty.
// The first transaction to change such a block logs it whole and raises
// the count in the same transaction (fs/ag_blocks.h).
//
// With the super_copies feature, bytes [512, 1024) of the header block
// hold SuperblockCopyOf(the superblock) encoded as the superblock is, its
// own CRC included (kAgSuperCopyOffset): fsck.walfs rebuilds a damaged
// primary from it (fs/super_copy.h).  The mount neither reads nor checks
// it; the header's CRC covers it like every other byte.
//
// Inode map record (16 bytes): start agblock u32, free count u32, free mask
// u64 (bit i set: inode i of the chunk is free).  A record with start 0 is
// unused (agblock 0 is the AG header, never a chunk).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "fs/format/block_header.h"
#include "fs/format/superblock_format.h"

namespace walfs::fs::format {

inline constexpr std::uint32_t kAgHeaderMagic = 0x44484741;  // "AGHD"
inline constexpr std::uint32_t kAgBitmapMagic = 0x4d424741;  // "AGBM"
inline constexpr std::uint32_t kAgImapMagic = 0x4d494741;    // "AGIM"
inline constexpr std::size_t kImapRecordSize = 16;

struct AgHeader {
  std::uint32_t agno = 0;
  std::uint32_t length = 0;
  std::uint32_t free_blocks = 0;
  std::uint32_t icount = 0;
  std::uint32_t ifree = 0;
  std::uint32_t chunks = 0;
  std::uint64_t unlinked_head = 0;
  std::uint32_t bitmap_init = 0;  // uninit_ag: bitmap blocks on disk
  std::uint32_t imap_init = 0;    // uninit_ag: inode-map blocks on disk
};
// The fields that change in place outside the codec (growfs, the
// uninit_ag bitmap fill, tests that read the free count).
inline constexpr std::uint32_t kAgLengthOffset = 52;
inline constexpr std::uint32_t kAgFreeBlocksOffset = 56;
inline constexpr std::uint32_t kAgBitmapInitOffset = 80;
inline constexpr std::uint32_t kAgImapInitOffset = 84;
inline constexpr std::uint32_t kAgSuperCopyOffset = 512;
static_assert(kAgSuperCopyOffset + kSuperSize <= kMinBlockSize, "the copy fits the smallest block");

// The bitmap and inode-map blocks of an AG that are on disk: all of them
// without the uninit_ag feature.
inline std::uint32_t BitmapBlocksOnDisk(const Superblock& sb, const AgHeader& h) {
  return sb.uninit_ag() ? h.bitmap_init : sb.bitmap_blocks;
}
inline std::uint32_t ImapBlocksOnDisk(const Superblock& sb, const AgHeader& h) {
  return sb.uninit_ag() ? h.imap_init : sb.imap_blocks;
}

struct ImapRecord {
  std::uint32_t start = 0;  // agblock of the chunk's first block; 0 = unused slot
  std::uint32_t free_count = 0;
  std::uint64_t free_mask = 0;
};

// Where an AG's metadata lives (agblocks).
constexpr std::uint32_t AgBitmapStart() { return 1; }
inline std::uint32_t AgImapStart(const Superblock& sb) { return 1 + sb.bitmap_blocks; }
inline std::uint32_t AgFirstFree(const Superblock& sb) { return 1 + sb.bitmap_blocks + sb.imap_blocks; }
inline std::uint64_t BitsPerBitmapBlock(std::uint32_t block_size) {
  return std::uint64_t{block_size - kBlockHeaderSize} * 8;
}
// The bitmap blocks that cover the AG's own metadata (agblocks [0,
// AgFirstFree)): always on disk, uninit_ag or not, so that a search for free
// space starts in a block that is.
inline std::uint32_t MetadataBitmapBlocks(const Superblock& sb) {
  const std::uint64_t bits = BitsPerBitmapBlock(sb.block_size);
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(sb.bitmap_blocks, (AgFirstFree(sb) + bits - 1) / bits));
}
inline std::uint32_t RecordsPerImapBlock(std::uint32_t block_size) {
  return static_cast<std::uint32_t>((block_size - kBlockHeaderSize) / kImapRecordSize);
}

// Each Encode* writes a whole block (header included) and seals it.
void EncodeAgHeader(const AgHeader& h, const Superblock& sb, std::span<std::byte> block);
Result<AgHeader> DecodeAgHeader(std::span<const std::byte> block, const Superblock& sb,
                                std::uint32_t agno);
// The superblock copy of an AG header block (checked by DecodeSuperblock
// against `device_bytes`, 0: not): only the block's own CRC says whether
// the rest of the header is sound.
Result<Superblock> DecodeAgSuperCopy(std::span<const std::byte> block, std::uint64_t device_bytes = 0);
// The counters of a header already verified when it was read (a cached
// buffer: its CRC is only current after writeback), unchecked.
AgHeader PeekAgHeader(std::span<const std::byte> block);

// Bitmap blocks: bits [0, BitsPerBitmapBlock) cover agblocks
// [index * bits, (index + 1) * bits).
void InitBitmapBlock(const Superblock& sb, std::uint32_t agno, std::uint32_t index,
                     std::span<std::byte> block);
// Bitmap block `index` of an empty AG of `length` blocks: its header, and
// the bits of the AG's own metadata and of blocks past its end set.
void FillBitmapBlock(const Superblock& sb, std::uint32_t agno, std::uint32_t index,
                     std::uint32_t length, std::span<std::byte> block);
Status VerifyBitmapBlock(std::span<const std::byte> block, const Superblock& sb,
                         std::uint32_t agno, std::uint32_t index);
bool BitmapTest(std::span<const std::byte> block, std::uint64_t bit);
void BitmapSet(std::span<std::byte> block, std::uint64_t bit, bool used);
// The first bit in [from, to) whose value is `used`, or `to` when there is
// none; whole 64-bit words at a time, so the allocator's scans cost a word
// per 64 blocks instead of a test per block.
std::uint64_t BitmapFind(std::span<const std::byte> block, std::uint64_t from, std::uint64_t to,
                         bool used);
// Byte offset of a bit's byte in a bitmap block (for LogRange).
inline std::uint32_t BitmapByteOffset(std::uint64_t bit) {
  return static_cast<std::uint32_t>(kBlockHeaderSize + bit / 8);
}

void InitImapBlock(const Superblock& sb, std::uint32_t agno, std::uint32_t index,
                   std::span<std::byte> block);
Status VerifyImapBlock(std::span<const std::byte> block, const Superblock& sb, std::uint32_t agno,
                       std::uint32_t index);
ImapRecord GetImapRecord(std::span<const std::byte> block, std::uint32_t slot);
void PutImapRecord(std::span<std::byte> block, std::uint32_t slot, const ImapRecord& r);
inline std::uint32_t ImapRecordOffset(std::uint32_t slot) {
  return static_cast<std::uint32_t>(kBlockHeaderSize + slot * kImapRecordSize);
}

}  // namespace walfs::fs::format
