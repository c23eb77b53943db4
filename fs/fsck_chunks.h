// fsck: inode chunks the inode map on disk does not list.
//
// The inode map is the allocator's index of the chunks and of which of
// their inodes are free; the inodes themselves say the same thing (a chunk
// is written whole, every inode naming its own number under a CRC, when it
// is made; an inode's mode says whether it is in use).  The map block is
// relogged by every create and free, so the AIL writes it back less often
// than the inode chunks and directory blocks it describes: after a crash
// whose log is then lost (fsck -L), or read without it (-o norecovery), the
// written-back metadata can name files in chunks the map on disk has never
// heard of.  Chunks are never freed, so such a map is short of chunks, never
// long.  The checker finds the missing chunks from what names them
// (directory entries, unlinked lists) and adds them to the map, with the
// free mask their inodes say (fs/fsck.h, docs/disk_format.md "When the map
// and the inodes disagree").
//
//   std::optional<ChunkAt> at = ChunkHolding(sb, ino);
//   Result<std::optional<ImapRecord>> rec = ReadUnlistedChunk(dev, sb, *at, ino);
//   if (rec.ok() && *rec) WALFS_ASSIGN_OR_RETURN(bool added, AddImapRecord(dev, sb, at->agno, imap_blocks, **rec));
#pragma once

#include <cstdint>
#include <optional>

#include "base/block_device.h"
#include "base/status.h"
#include "fs/format/ag_format.h"
#include "fs/format/superblock_format.h"

namespace walfs::fs {

struct ChunkAt {
  std::uint32_t agno = 0;
  std::uint32_t start = 0;  // agblock of the chunk's first block (ImapRecord::start)
  std::uint64_t first_block = 0;
};

// The chunk that would hold inode `ino`, where the allocator could have put
// one (past the AG's own metadata, aligned, inside the AG); nullopt if
// nowhere a chunk can be.
std::optional<ChunkAt> ChunkHolding(const format::Superblock& sb, std::uint64_t ino);

// Reads the chunk at `at`, which the map does not list, as evidence that it
// exists: it does if inode `named` (which something names) decodes -- its
// magic, CRC and own number at its place, which nothing but a chunk
// written there holds.  Then its map record, the free mask from the inodes
// (one that does not decode counts as free: fsck -y clears it); nullopt
// when the chunk is not there (never written back: what named it is
// dangling).
Result<std::optional<format::ImapRecord>> ReadUnlistedChunk(BlockDevice* device, const format::Superblock& sb,
                                                            const ChunkAt& at, std::uint64_t named);

// Puts `rec` in the first unused slot of AG `agno`'s inode map, among its
// first `*imap_blocks` blocks (those on disk) that verify.  When none has
// room and the AG's map has blocks not yet written (uninit_ag: an AG whose
// first chunks the map on disk never heard of), the next one is written,
// empty but for `rec`, and `*imap_blocks` counts it (the AG header's
// imap_init must then say so: fsck's counter phase writes it).  False if
// the map is full.  The block is written (sealed); the caller flushes.
Result<bool> AddImapRecord(BlockDevice* device, const format::Superblock& sb, std::uint32_t agno,
                           std::uint32_t* imap_blocks, const format::ImapRecord& rec);

}  // namespace walfs::fs
