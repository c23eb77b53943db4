#include "fs/ialloc.h"

#include <fmt/format.h>

#include "base/check.h"
#include "base/coding.h"
#include "fs/ag_blocks.h"
#include "fs/format/ag_format.h"
#include "fs/format/block_types.h"

namespace walfs::fs {

using format::BlockType;
using format::ImapRecord;
using format::InodeCore;

namespace {
// AG header fields (ag_format.h).
constexpr std::uint32_t kIcountOffset = 60, kIfreeOffset = 64, kChunksOffset = 68;
}  // namespace

void InodeAllocator::AddToAgCounts(FsTransaction* tx, const BufRef& agh, int icount, int ifree,
                                   int chunks) {
  char* p = HeldChars(agh);
  EncodeFixed32(p + kIcountOffset, static_cast<std::uint32_t>(
                                       static_cast<int>(DecodeFixed32(p + kIcountOffset)) + icount));
  EncodeFixed32(p + kIfreeOffset, static_cast<std::uint32_t>(
                                      static_cast<int>(DecodeFixed32(p + kIfreeOffset)) + ifree));
  EncodeFixed32(p + kChunksOffset, static_cast<std::uint32_t>(
                                       static_cast<int>(DecodeFixed32(p + kChunksOffset)) + chunks));
  tx->LogRange(agh, kIcountOffset, kChunksOffset + 3);
}

Result<InodeAllocator::MapSlot> InodeAllocator::FindRecord(FsTransaction* tx, std::uint32_t agno,
                                                           const BufRef& agh, Find what,
                                                           std::uint32_t chunk_start) {
  const std::uint32_t on_disk = ImapBlocksOnDisk(*sb_, agh);
  const std::uint32_t searched = what == Find::kEmpty ? std::min(sb_->imap_blocks, on_disk + 1) : on_disk;
  for (std::uint32_t i = 0; i < searched; ++i) {
    WALFS_ASSIGN_OR_RETURN(BufRef imap, ReadImapBlock(cache_, *sb_, agno, i, agh));
    // The AG header lock (held) serializes every change to the map.
    for (std::uint32_t slot = 0; slot < format::RecordsPerImapBlock(sb_->block_size); ++slot) {
      ImapRecord rec = format::GetImapRecord(
          std::span<const std::byte>(reinterpret_cast<const std::byte*>(HeldChars(imap)), sb_->block_size), slot);
      const bool match = what == Find::kChunk   ? rec.start == chunk_start
                         : what == Find::kEmpty ? rec.start == 0
                                                : (rec.start != 0 && rec.free_count > 0);
      if (!match) continue;
      tx->Hold(imap);
      return MapSlot{imap, i, slot, rec};
    }
  }
  switch (what) {
    case Find::kChunk:
      return cache_->Damaged(
          "inode map record missing", 0, agh->blkno(),
          Status::Corruption(fmt::format("AG {}: no inode map record for the chunk at {}", agno, chunk_start)));
    case Find::kEmpty:
      return Status::NoSpace(fmt::format("AG {}: its inode map is full", agno));
    case Find::kFree:
      break;
  }
  return Status::NotFound(fmt::format("AG {}: no free inode", agno));
}

Status InodeAllocator::PutRecord(FsTransaction* tx, std::uint32_t agno, const BufRef& agh, const MapSlot& s) {
  WALFS_RETURN_IF_ERROR(PrepareImapChange(tx, cache_, *sb_, agno, s.index, agh));
  format::PutImapRecord(
      std::span<std::byte>(reinterpret_cast<std::byte*>(HeldChars(s.block)), sb_->block_size), s.slot,
      s.rec);
  const std::uint32_t off = format::ImapRecordOffset(s.slot);
  tx->LogRange(s.block, off, off + static_cast<std::uint32_t>(format::kImapRecordSize) - 1);
  return Status::Ok();
}

Result<InodeAllocator::MapSlot> InodeAllocator::NewChunk(FsTransaction* tx, std::uint32_t agno,
                                                         const BufRef& agh) {
  // The map slot first: a full map must not leave an orphan chunk behind.
  WALFS_ASSIGN_OR_RETURN(MapSlot slot, FindRecord(tx, agno, agh, Find::kEmpty, 0));
  const std::uint32_t bpc = sb_->blocks_per_chunk();
  Result<format::Extent> got = alloc_->Alloc(tx, {.goal = sb_->AgStart(agno), .min = bpc, .want = bpc,
                                                  .align = bpc, .goal_ag_only = true});
  if (!got.ok()) {
    tx->Release(slot.block);  // not logged: another AG may be tried, in order
    return got.status();
  }
  const format::Extent e = *got;
  const auto start = static_cast<std::uint32_t>(e.disk_block - sb_->AgStart(agno));
  // Its 64 inodes, all free, written whole.
  for (std::uint32_t b = 0; b < bpc; ++b) {
    WALFS_ASSIGN_OR_RETURN(BufRef blk, cache_->Get(e.disk_block + b, BlockType::kInodes));
    tx->Hold(blk);
    for (std::uint32_t s = 0; s < sb_->inodes_per_block(); ++s) {
      const std::uint64_t ino = (e.disk_block + b) * sb_->inodes_per_block() + s;
      format::EncodeInode(format::FreeInode(ino, 0),
                          std::span<std::byte>(reinterpret_cast<std::byte*>(HeldChars(blk)) +
                                                   std::size_t{s} * format::kInodeSize,
                                               format::kInodeSize));
    }
    tx->LogRange(blk, 0, sb_->block_size - 1);
  }
  slot.rec = ImapRecord{start, sb_->inodes_per_chunk, ~std::uint64_t{0}};
  WALFS_RETURN_IF_ERROR(PutRecord(tx, agno, agh, slot));
  AddToAgCounts(tx, agh, static_cast<int>(sb_->inodes_per_chunk),
                static_cast<int>(sb_->inodes_per_chunk), 1);
  return slot;
}

Result<InodeCore> InodeAllocator::ReadCore(FsTransaction* tx, std::uint64_t ino)
    NO_THREAD_SAFETY_ANALYSIS {
  WALFS_ASSIGN_OR_RETURN(BufRef blk, cache_->Read(BlockOf(ino), BlockType::kInodes));
  // A block this transaction holds (a chunk it just made) is read as is;
  // any other only for as long as it takes to decode the inode.
  const bool held = tx != nullptr && tx->Holds(blk);
  if (!held) blk->Lock();
  Result<InodeCore> core = format::DecodeInode(
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(HeldChars(blk)) + OffsetOf(ino),
                                 format::kInodeSize),
      ino);
  if (!held) blk->Unlock();
  if (!core.ok() && core.status().IsCorruption())
    cache_->ReportDamage("inode decode", ino, BlockOf(ino), core.status());
  return core;
}

Status InodeAllocator::WriteInode(FsTransaction* tx, const InodeCore& core) {
  WALFS_ASSIGN_OR_RETURN(BufRef blk, cache_->Read(BlockOf(core.ino), BlockType::kInodes));
  tx->Hold(blk);
  format::EncodeInode(core, std::span<std::byte>(reinterpret_cast<std::byte*>(HeldChars(blk)) +
                                                     OffsetOf(core.ino),
                                                 format::kInodeSize));
  tx->LogRange(blk, OffsetOf(core.ino), OffsetOf(core.ino) + format::kInodeSize - 1);
  return Status::Ok();
}

Status InodeAllocator::LogInode(FsTransaction* tx, std::uint64_t ino, const InodeCore* core,
                                std::optional<std::uint64_t> next_unlinked) NO_THREAD_SAFETY_ANALYSIS {
  constexpr std::uint32_t kNextOffset = 96;  // inode_format.h
  WALFS_ASSIGN_OR_RETURN(BufRef blk, cache_->Read(BlockOf(ino), BlockType::kInodes));
  tx->Hold(blk);
  std::span<std::byte> block(reinterpret_cast<std::byte*>(HeldChars(blk)), sb_->block_size);
  char* raw = HeldChars(blk) + OffsetOf(ino);
  const std::uint64_t next = next_unlinked ? *next_unlinked : DecodeFixed64(raw + kNextOffset);
  if (core != nullptr) {
    WALFS_CHECK(core->ino == ino);
    InodeCore c = *core;
    c.next_unlinked = next;
    format::EncodeInode(c, block.subspan(OffsetOf(ino), format::kInodeSize));
    tx->LogRange(blk, OffsetOf(ino), OffsetOf(ino) + format::kInodeSize - 1);
  } else {
    EncodeFixed64(raw + kNextOffset, next);
    // Its CRC current again for readers of the buffer (writeback and
    // replay recompute every inode's anyway).
    format::SealInodeBlock(block);
    tx->LogRange(blk, OffsetOf(ino) + kNextOffset, OffsetOf(ino) + kNextOffset + 7);
  }
  return Status::Ok();
}

Result<std::uint64_t> InodeAllocator::PickInAg(FsTransaction* tx, std::uint32_t agno,
                                               InodeCore* init) {
  WALFS_ASSIGN_OR_RETURN(BufRef agh, cache_->Read(sb_->AgStart(agno), BlockType::kAgHeader));
  const bool held_before = tx->Holds(agh);
  if (!tx->HoldAgHeader(agh, agno))
    return Status::WouldBlock(fmt::format("AG {} is busy and lower than an AG this transaction holds", agno));
  // The AG header counts the AG's free inodes (held: nothing changes them
  // under us): with none, searching the whole map for one -- every imap
  // block read and every record decoded, once per 64 creates -- only finds
  // that out.  A count that disagrees with the map is fsck's business; here
  // it can only cost a chunk.
  Result<MapSlot> found = DecodeFixed32(HeldChars(agh) + kIfreeOffset) == 0
                              ? Result<MapSlot>(Status::NotFound(fmt::format("AG {}: no free inode", agno)))
                              : FindRecord(tx, agno, agh, Find::kFree, 0);
  MapSlot s;
  if (found.ok()) {
    s = std::move(found).value();
  } else {
    if (found.status().code() != StatusCode::kNotFound) return found.status();
    Result<MapSlot> fresh = NewChunk(tx, agno, agh);
    if (!fresh.ok()) {
      // Untouched unless logged; a header the transaction held before stays held.
      if (fresh.status().IsNoSpace() && !held_before) tx->Release(agh);
      return fresh.status();
    }
    s = std::move(fresh).value();
  }
  if (s.rec.free_mask == 0)
    return cache_->Damaged("inode map record", 0, agh->blkno(),
                           Status::Corruption(fmt::format("AG {} inode map: a record counts {} free inodes but "
                                                          "marks none",
                                                          agno, s.rec.free_count)));
  // The lowest free inode of the chunk; checked before anything changes.
  const int index = __builtin_ctzll(s.rec.free_mask);
  const std::uint64_t first_block = sb_->AgStart(agno) + s.rec.start;
  const std::uint64_t ino = first_block * sb_->inodes_per_block() + static_cast<std::uint64_t>(index);
  WALFS_ASSIGN_OR_RETURN(InodeCore old, ReadCore(tx, ino));
  if (!old.free())
    return cache_->Damaged("inode map says free", ino, BlockOf(ino),
                           Status::Corruption(fmt::format("inode {} is free in the inode map but in use", ino)));
  s.rec.free_mask &= ~(std::uint64_t{1} << index);
  s.rec.free_count -= 1;
  WALFS_RETURN_IF_ERROR(PutRecord(tx, agno, agh, s));
  AddToAgCounts(tx, agh, 0, -1, 0);
  init->ino = ino;
  init->generation = old.generation + 1;  // a reused number is a different file
  return ino;
}

Result<std::uint64_t> InodeAllocator::Pick(FsTransaction* tx, std::uint32_t preferred_ag,
                                           InodeCore* init) {
  WALFS_CHECK(!init->free());
  // Ascending AG order from the preferred AG; the AGs before it only
  // without waiting (the block allocator's rule).
  const std::uint32_t ag_count = sb_->ag_count;  // read once: a grow may raise it
  for (std::uint32_t i = 0; i < ag_count; ++i) {
    const std::uint32_t agno = (preferred_ag % ag_count + i) % ag_count;
    Result<std::uint64_t> ino = PickInAg(tx, agno, init);
    if (ino.ok()) return ino;
    if (!ino.status().IsNoSpace() && ino.status().code() != StatusCode::kWouldBlock) return ino;
  }
  return Status::NoSpace("no free inode and no room for a new inode chunk");
}

Result<std::uint64_t> InodeAllocator::Alloc(FsTransaction* tx, std::uint32_t preferred_ag,
                                            InodeCore init) {
  WALFS_ASSIGN_OR_RETURN(std::uint64_t ino, Pick(tx, preferred_ag, &init));
  WALFS_RETURN_IF_ERROR(WriteInode(tx, init));
  return ino;
}

Status InodeAllocator::Unpick(FsTransaction* tx, std::uint64_t ino) {
  const std::uint64_t block = BlockOf(ino);
  if (block < sb_->data_start() || block >= sb_->total_blocks)
    return cache_->Damaged("inode number out of range", ino, 0,
                           Status::Corruption(fmt::format("freeing inode {}: outside the filesystem", ino)));
  const std::uint32_t agno = AgOf(ino);
  const auto agblock = static_cast<std::uint32_t>(block - sb_->AgStart(agno));
  const std::uint32_t chunk_start = agblock / sb_->blocks_per_chunk() * sb_->blocks_per_chunk();
  if (agblock < format::AgFirstFree(*sb_) || agblock >= sb_->AgLength(agno) || chunk_start == 0)
    return cache_->Damaged(
        "inode number out of range", ino, block,
        Status::Corruption(fmt::format("freeing inode {}: block {} holds no inode chunk", ino, block)));
  WALFS_ASSIGN_OR_RETURN(BufRef agh, cache_->Read(sb_->AgStart(agno), BlockType::kAgHeader));
  if (!tx->HoldAgHeader(agh, agno))
    return Status::WouldBlock(fmt::format("freeing inode {}: AG {} is busy and lower than an AG "
                                          "this transaction holds",
                                          ino, agno));
  WALFS_ASSIGN_OR_RETURN(MapSlot s, FindRecord(tx, agno, agh, Find::kChunk, chunk_start));
  const std::uint64_t first_ino = (sb_->AgStart(agno) + chunk_start) * sb_->inodes_per_block();
  const std::uint32_t index = static_cast<std::uint32_t>(ino - first_ino);
  if ((s.rec.free_mask >> index) & 1u)
    return cache_->Damaged("inode freed twice", ino, block,
                           Status::Corruption(fmt::format("freeing inode {}: it is already free", ino)));
  s.rec.free_mask |= std::uint64_t{1} << index;
  s.rec.free_count += 1;
  WALFS_RETURN_IF_ERROR(PutRecord(tx, agno, agh, s));
  AddToAgCounts(tx, agh, 0, +1, 0);
  return Status::Ok();
}

Status InodeAllocator::Free(FsTransaction* tx, std::uint64_t ino) {
  WALFS_RETURN_IF_ERROR(Unpick(tx, ino));
  WALFS_ASSIGN_OR_RETURN(InodeCore old, ReadCore(tx, ino));
  return WriteInode(tx, format::FreeInode(ino, old.generation));
}

}  // namespace walfs::fs
