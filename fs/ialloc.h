// InodeAllocator: inodes from the AGs' inode maps, inside transactions
// (XFS's xfs_ialloc).  Inodes come in chunks of 64 allocated from an AG's
// free space on demand; the AG header's icount/ifree/chunks and the chunk's
// inode map record change with every allocation and free, all logged.
//
//   format::InodeCore init;  init.mode = S_IFREG | 0644;  ...
//   WALFS_ASSIGN_OR_RETURN(std::uint64_t ino, ialloc.Alloc(&tx, parent_ag, init));
//   WALFS_RETURN_IF_ERROR(ialloc.Free(&tx, ino));
//
// Locking: the AG header buffer first, in the block allocator's order
// (FsTransaction::HoldAgHeader), then the inode map block, then the inode's
// chunk block (a new chunk's blocks before its map block; all under the AG
// header).  A new chunk's blocks come from the block allocator in the same
// AG, chunk-aligned so the inode numbers they imply are valid, in the same
// transaction.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include "base/status.h"
#include "fs/alloc.h"
#include "fs/buf_cache.h"
#include "fs/format/inode_format.h"
#include "fs/format/superblock_format.h"
#include "fs/fs_trans.h"

namespace walfs::fs {

class InodeAllocator {
 public:
  InodeAllocator(BufCache* cache, Allocator* alloc, const format::Superblock* sb)
      : cache_(cache), alloc_(alloc), sb_(sb) {}

  // Allocates an inode, preferring AG `preferred_ag`, and writes `init` into
  // it (ino and generation are set here).  NoSpace when no AG has a free
  // inode or room for a new chunk.
  Result<std::uint64_t> Alloc(FsTransaction* tx, std::uint32_t preferred_ag,
                              format::InodeCore init);
  // Returns an inode to its chunk: the inode is rewritten free.  Freeing a
  // free inode is Corruption.
  Status Free(FsTransaction* tx, std::uint64_t ino);

  // The two halves of each, for a caller whose inodes live in memory and
  // reach their chunk blocks only when the transaction commits (the mounted
  // filesystem: chunk blocks are locked last, in ascending order, so two
  // transactions never wait for each other's).  Pick allocates in the map
  // and sets init->ino and init->generation; Unpick frees in the map.  The
  // caller writes the inode (WriteInode) before the commit.
  Result<std::uint64_t> Pick(FsTransaction* tx, std::uint32_t preferred_ag,
                             format::InodeCore* init);
  Status Unpick(FsTransaction* tx, std::uint64_t ino);
  // Holds the inode's chunk block and writes and logs the inode.
  Status WriteInode(FsTransaction* tx, const format::InodeCore& core);
  // The same for an in-core inode whose unlinked-list link belongs to the
  // chunk block, not to `core` (the mounted filesystem's rule, XFS's
  // xfs_iunlink_update_inode): the link keeps the block's value unless
  // `next_unlinked` is given.  With `core` null only the link changes.
  Status LogInode(FsTransaction* tx, std::uint64_t ino, const format::InodeCore* core,
                  std::optional<std::uint64_t> next_unlinked);
  // Reads an inode from its chunk block (locked only while it is decoded,
  // unless the transaction holds it; tx may be null).
  Result<format::InodeCore> ReadCore(FsTransaction* tx, std::uint64_t ino);

  // Where an inode lives.
  std::uint64_t BlockOf(std::uint64_t ino) const { return ino / sb_->inodes_per_block(); }
  std::uint32_t OffsetOf(std::uint64_t ino) const {
    return static_cast<std::uint32_t>(ino % sb_->inodes_per_block()) * format::kInodeSize;
  }
  std::uint32_t AgOf(std::uint64_t ino) const {
    return static_cast<std::uint32_t>((BlockOf(ino) - sb_->data_start()) / sb_->ag_blocks);
  }
  // The AG to prefer for a new directory: the next one in turn (XFS's
  // inode64 rotor, xfs_ialloc_next_ag).  A file goes where its directory
  // is, a directory goes to the next AG, so directory trees -- and the
  // processes working in them -- spread over the AGs instead of all
  // allocating under AG 0's header, the root's.
  std::uint32_t NextDirectoryAg() {
    return dir_rotor_.fetch_add(1, std::memory_order_relaxed) % sb_->ag_count;
  }

 private:
  struct MapSlot {
    BufRef block;         // the inode map block holding the record
    std::uint32_t index = 0;  // that block's index in the AG's map
    std::uint32_t slot = 0;
    format::ImapRecord rec;
  };
  Result<std::uint64_t> PickInAg(FsTransaction* tx, std::uint32_t agno, format::InodeCore* init);
  // Adds a chunk to AG agno (whose header `agh` the transaction holds).
  Result<MapSlot> NewChunk(FsTransaction* tx, std::uint32_t agno, const BufRef& agh);
  // A record with a free inode (NotFound if none), the record of the chunk
  // at `chunk_start` (Corruption if none), or an unused slot (NoSpace).
  enum class Find { kFree, kChunk, kEmpty };
  // Under the AG header `agh`, held.  Records live only in the map blocks
  // on disk; an unused slot may also be found in the block after them
  // (uninit_ag), which PutRecord then makes real (fs/ag_blocks.h).
  Result<MapSlot> FindRecord(FsTransaction* tx, std::uint32_t agno, const BufRef& agh, Find what,
                             std::uint32_t chunk_start);
  Status PutRecord(FsTransaction* tx, std::uint32_t agno, const BufRef& agh, const MapSlot& s);
  void AddToAgCounts(FsTransaction* tx, const BufRef& agh, int icount, int ifree, int chunks);

  BufCache* const cache_;
  Allocator* const alloc_;
  const format::Superblock* const sb_;
  // Only a placement hint: relaxed, and any value is a valid start (Pick
  // takes it modulo the AG count it reads).
  std::atomic<std::uint32_t> dir_rotor_{0};
};

}  // namespace walfs::fs
