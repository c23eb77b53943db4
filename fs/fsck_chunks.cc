#include "fs/fsck_chunks.h"

#include <vector>

#include "base/check.h"

#include "fs/format/block_header.h"
#include "fs/format/inode_format.h"

namespace walfs::fs {

using format::ImapRecord;
using format::Superblock;

std::optional<ChunkAt> ChunkHolding(const Superblock& sb, std::uint64_t ino) {
  const std::uint64_t block = ino / sb.inodes_per_block();
  if (block < sb.data_start() || block >= sb.total_blocks) return std::nullopt;
  const auto agno = static_cast<std::uint32_t>((block - sb.data_start()) / sb.ag_blocks);
  if (agno >= sb.ag_count) return std::nullopt;
  const std::uint64_t agblock = block - sb.AgStart(agno);
  const std::uint32_t bpc = sb.blocks_per_chunk();
  // As the allocator aligns them (InodeAllocator::NewChunk, Unpick).
  const auto start = static_cast<std::uint32_t>(agblock / bpc * bpc);
  if (start == 0 || start < format::AgFirstFree(sb) || std::uint64_t{start} + bpc > sb.AgLength(agno))
    return std::nullopt;
  return ChunkAt{agno, start, sb.AgStart(agno) + start};
}

Result<std::optional<ImapRecord>> ReadUnlistedChunk(BlockDevice* device, const Superblock& sb, const ChunkAt& at,
                                                    std::uint64_t named) {
  const std::uint32_t ipb = sb.inodes_per_block();
  const std::uint64_t first_ino = at.first_block * ipb;
  // The caller found `named` in this chunk (ChunkHolding).
  WALFS_CHECK(named >= first_ino && named < first_ino + sb.inodes_per_chunk);
  ImapRecord rec{at.start, 0, 0};
  bool named_reads = false;
  std::vector<std::byte> b(sb.block_size);
  for (std::uint32_t bi = 0; bi < sb.blocks_per_chunk(); ++bi) {
    WALFS_RETURN_IF_ERROR(device->Read((at.first_block + bi) * sb.block_size, b.data(), b.size()));
    for (std::uint32_t s = 0; s < ipb; ++s) {
      const std::uint32_t index = bi * ipb + s;
      const std::uint64_t ino = first_ino + index;
      Result<format::InodeCore> core =
          format::DecodeInode(std::span<const std::byte>(b).subspan(std::size_t{s} * format::kInodeSize,
                                                                    format::kInodeSize),
                              ino);
      if (ino == named) named_reads = core.ok();
      if (!core.ok() || core->free()) {
        rec.free_mask |= std::uint64_t{1} << index;
        ++rec.free_count;
      }
    }
  }
  if (!named_reads) return std::optional<ImapRecord>();
  return std::optional<ImapRecord>(rec);
}

Result<bool> AddImapRecord(BlockDevice* device, const Superblock& sb, std::uint32_t agno, std::uint32_t* imap_blocks,
                           const ImapRecord& rec) {
  std::vector<std::byte> b(sb.block_size);
  for (std::uint32_t i = 0; i < *imap_blocks; ++i) {
    const std::uint64_t blkno = sb.AgStart(agno) + format::AgImapStart(sb) + i;
    WALFS_RETURN_IF_ERROR(device->Read(blkno * sb.block_size, b.data(), b.size()));
    if (!format::VerifyImapBlock(b, sb, agno, i).ok()) continue;  // reported by the scan
    for (std::uint32_t slot = 0; slot < format::RecordsPerImapBlock(sb.block_size); ++slot) {
      if (format::GetImapRecord(b, slot).start != 0) continue;
      format::PutImapRecord(b, slot, rec);
      format::SealBlock(b);
      WALFS_RETURN_IF_ERROR(device->Write(blkno * sb.block_size, b.data(), b.size()));
      return true;
    }
  }
  // Every written block is full: the next one, made real as the allocator
  // makes it (fs/ag_blocks.h), if the AG has one left unwritten.
  if (!sb.uninit_ag() || *imap_blocks >= sb.imap_blocks) return false;
  const std::uint32_t index = *imap_blocks;
  format::InitImapBlock(sb, agno, index, b);
  format::PutImapRecord(b, 0, rec);
  format::SealBlock(b);
  const std::uint64_t blkno = sb.AgStart(agno) + format::AgImapStart(sb) + index;
  WALFS_RETURN_IF_ERROR(device->Write(blkno * sb.block_size, b.data(), b.size()));
  *imap_blocks = index + 1;
  return true;
}

}  // namespace walfs::fs
