#include "fs/format/ag_format.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "base/check.h"
#include "base/coding.h"

namespace walfs::fs::format {

namespace {
void InitBlock(std::uint32_t magic, std::uint64_t blkno, std::uint64_t owner, const Superblock& sb,
               std::span<std::byte> block) {
  WALFS_CHECK(block.size() == sb.block_size);
  std::memset(block.data(), 0, block.size());
  EncodeBlockHeader(BlockHeader{magic, 0, blkno, owner, sb.metadata_uuid()}, block);
}
}  // namespace

void EncodeAgHeader(const AgHeader& h, const Superblock& sb, std::span<std::byte> block) {
  InitBlock(kAgHeaderMagic, sb.AgStart(h.agno), h.agno, sb, block);
  char* p = AsChars(block);
  EncodeFixed32(p + 48, h.agno);
  EncodeFixed32(p + 52, h.length);
  EncodeFixed32(p + 56, h.free_blocks);
  EncodeFixed32(p + 60, h.icount);
  EncodeFixed32(p + 64, h.ifree);
  EncodeFixed32(p + 68, h.chunks);
  EncodeFixed64(p + 72, h.unlinked_head);
  EncodeFixed32(p + kAgBitmapInitOffset, h.bitmap_init);
  EncodeFixed32(p + kAgImapInitOffset, h.imap_init);
  if (sb.super_copies()) EncodeSuperblock(SuperblockCopyOf(sb), block.subspan(kAgSuperCopyOffset, kSuperSize));
  SealBlock(block);
}

Result<Superblock> DecodeAgSuperCopy(std::span<const std::byte> block, std::uint64_t device_bytes) {
  if (block.size() < kAgSuperCopyOffset + kSuperSize)
    return Status::Corruption(fmt::format("AG header block of {} bytes holds no superblock copy", block.size()));
  return DecodeSuperblock(block.subspan(kAgSuperCopyOffset, kSuperSize), device_bytes);
}

AgHeader PeekAgHeader(std::span<const std::byte> block) {
  const char* p = AsChars(block);
  AgHeader h;
  h.agno = DecodeFixed32(p + 48);
  h.length = DecodeFixed32(p + 52);
  h.free_blocks = DecodeFixed32(p + 56);
  h.icount = DecodeFixed32(p + 60);
  h.ifree = DecodeFixed32(p + 64);
  h.chunks = DecodeFixed32(p + 68);
  h.unlinked_head = DecodeFixed64(p + 72);
  h.bitmap_init = DecodeFixed32(p + kAgBitmapInitOffset);
  h.imap_init = DecodeFixed32(p + kAgImapInitOffset);
  return h;
}

Result<AgHeader> DecodeAgHeader(std::span<const std::byte> block, const Superblock& sb,
                                std::uint32_t agno) {
  const std::uint64_t blkno = sb.AgStart(agno);
  WALFS_RETURN_IF_ERROR(VerifyBlock(block, kAgHeaderMagic, blkno, sb.metadata_uuid(),
                                    fmt::format("AG {} header", agno)));
  const AgHeader h = PeekAgHeader(block);
  auto bad = [&](std::string_view why) {
    return Status::Corruption(fmt::format("AG {} header at block {}: {}", agno, blkno, why));
  };
  if (h.agno != agno) return bad(fmt::format("says it is AG {}", h.agno));
  if (h.length != sb.AgLength(agno))
    return bad(fmt::format("length {} is not {}", h.length, sb.AgLength(agno)));
  if (h.free_blocks > h.length - AgFirstFree(sb))
    return bad(fmt::format("{} free blocks in {} usable", h.free_blocks, h.length - AgFirstFree(sb)));
  if (h.ifree > h.icount) return bad(fmt::format("{} free inodes of {}", h.ifree, h.icount));
  if (std::uint64_t{h.chunks} * sb.inodes_per_chunk != h.icount)
    return bad(fmt::format("{} inodes in {} chunks", h.icount, h.chunks));
  if (h.chunks > std::uint64_t{sb.imap_blocks} * RecordsPerImapBlock(sb.block_size))
    return bad(fmt::format("{} chunks do not fit its inode map", h.chunks));
  if (sb.uninit_ag()) {
    if (h.bitmap_init > sb.bitmap_blocks || h.bitmap_init < MetadataBitmapBlocks(sb))
      return bad(fmt::format("{} bitmap blocks written of {} (at least {} must be)", h.bitmap_init,
                             sb.bitmap_blocks, MetadataBitmapBlocks(sb)));
    if (h.imap_init > sb.imap_blocks)
      return bad(fmt::format("{} inode map blocks written of {}", h.imap_init, sb.imap_blocks));
    if (h.chunks > std::uint64_t{h.imap_init} * RecordsPerImapBlock(sb.block_size))
      return bad(fmt::format("{} chunks do not fit the {} inode map blocks written", h.chunks, h.imap_init));
  } else if (h.bitmap_init != 0 || h.imap_init != 0) {
    return bad(fmt::format("counts {} bitmap and {} inode map blocks written, without the uninit_ag feature",
                           h.bitmap_init, h.imap_init));
  }
  return h;
}

void InitBitmapBlock(const Superblock& sb, std::uint32_t agno, std::uint32_t index,
                     std::span<std::byte> block) {
  InitBlock(kAgBitmapMagic, sb.AgStart(agno) + AgBitmapStart() + index, agno, sb, block);
  SealBlock(block);
}

void FillBitmapBlock(const Superblock& sb, std::uint32_t agno, std::uint32_t index,
                     std::uint32_t length, std::span<std::byte> block) {
  InitBlock(kAgBitmapMagic, sb.AgStart(agno) + AgBitmapStart() + index, agno, sb, block);
  const std::uint64_t bits = BitsPerBitmapBlock(sb.block_size);
  const std::uint64_t first = std::uint64_t{index} * bits, end = first + bits;
  const std::uint64_t meta_end = std::min<std::uint64_t>(AgFirstFree(sb), end);
  for (std::uint64_t b = first; b < meta_end; ++b) BitmapSet(block, b - first, true);
  for (std::uint64_t b = std::max<std::uint64_t>(first, length); b < end; ++b) BitmapSet(block, b - first, true);
  SealBlock(block);
}

Status VerifyBitmapBlock(std::span<const std::byte> block, const Superblock& sb,
                         std::uint32_t agno, std::uint32_t index) {
  return VerifyBlock(block, kAgBitmapMagic, sb.AgStart(agno) + AgBitmapStart() + index, sb.metadata_uuid(),
                     fmt::format("AG {} bitmap block {}", agno, index));
}

bool BitmapTest(std::span<const std::byte> block, std::uint64_t bit) {
  const auto byte = std::to_integer<std::uint8_t>(block[BitmapByteOffset(bit)]);
  return (byte >> (bit % 8)) & 1u;
}

std::uint64_t BitmapFind(std::span<const std::byte> block, std::uint64_t from, std::uint64_t to,
                         bool used) {
  WALFS_CHECK(to <= (block.size() - kBlockHeaderSize) * 8);
  while (from < to) {
    if (from % 64 == 0 && to - from >= 64) {
      // Bit i of the map is bit i % 8 of byte i / 8: a little-endian word
      // holds 64 consecutive bits in order.
      std::uint64_t word = DecodeFixed64(AsChars(block) + BitmapByteOffset(from));
      if (!used) word = ~word;
      if (word != 0) return from + static_cast<std::uint64_t>(std::countr_zero(word));
      from += 64;
      continue;
    }
    if (BitmapTest(block, from) == used) return from;
    ++from;
  }
  return to;
}

void BitmapSet(std::span<std::byte> block, std::uint64_t bit, bool used) {
  std::byte& b = block[BitmapByteOffset(bit)];
  const auto mask = std::byte{static_cast<std::uint8_t>(1u << (bit % 8))};
  b = used ? (b | mask) : (b & ~mask);
}

void InitImapBlock(const Superblock& sb, std::uint32_t agno, std::uint32_t index,
                   std::span<std::byte> block) {
  InitBlock(kAgImapMagic, sb.AgStart(agno) + AgImapStart(sb) + index, agno, sb, block);
  SealBlock(block);
}

Status VerifyImapBlock(std::span<const std::byte> block, const Superblock& sb, std::uint32_t agno,
                       std::uint32_t index) {
  WALFS_RETURN_IF_ERROR(VerifyBlock(block, kAgImapMagic, sb.AgStart(agno) + AgImapStart(sb) + index,
                                    sb.metadata_uuid(), fmt::format("AG {} inode map block {}", agno, index)));
  const std::uint32_t n = RecordsPerImapBlock(sb.block_size);
  for (std::uint32_t i = 0; i < n; ++i) {
    const ImapRecord r = GetImapRecord(block, i);
    if (r.start == 0) {
      if (r.free_count != 0 || r.free_mask != 0)
        return Status::Corruption(fmt::format("AG {} inode map block {} slot {}: unused but not zero",
                                              agno, index, i));
      continue;
    }
    if (r.start < AgFirstFree(sb) || r.start + sb.blocks_per_chunk() > sb.AgLength(agno) ||
        r.start % sb.blocks_per_chunk() != 0)
      return Status::Corruption(fmt::format(
          "AG {} inode map block {} slot {}: chunk at agblock {} is misplaced", agno, index, i,
          r.start));
    if (static_cast<std::uint32_t>(__builtin_popcountll(r.free_mask)) != r.free_count ||
        r.free_count > sb.inodes_per_chunk)
      return Status::Corruption(fmt::format(
          "AG {} inode map block {} slot {}: free count {} does not match mask {:#x}", agno, index,
          i, r.free_count, r.free_mask));
  }
  return Status::Ok();
}

ImapRecord GetImapRecord(std::span<const std::byte> block, std::uint32_t slot) {
  const char* p = AsChars(block) + ImapRecordOffset(slot);
  return ImapRecord{DecodeFixed32(p), DecodeFixed32(p + 4), DecodeFixed64(p + 8)};
}

void PutImapRecord(std::span<std::byte> block, std::uint32_t slot, const ImapRecord& r) {
  char* p = AsChars(block) + ImapRecordOffset(slot);
  EncodeFixed32(p, r.start);
  EncodeFixed32(p + 4, r.free_count);
  EncodeFixed64(p + 8, r.free_mask);
}

}  // namespace walfs::fs::format
