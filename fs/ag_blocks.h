// An AG's bitmap and inode-map blocks as a mounted filesystem reads and
// changes them, written to disk only as they are first used when the image
// has the uninit_ag feature (docs/disk_format.md, "Blocks written as they
// are first used"; ext4's uninit_bg does the same for its block groups).
//
//   WALFS_ASSIGN_OR_RETURN(BufRef bm, ReadBitmapBlock(cache, sb, agno, i, agh));
//   WALFS_RETURN_IF_ERROR(PrepareBitmapChange(tx, cache, sb, agno, i, agh));
//   ... change bm's bits, tx->LogRange(bm, ...) ...
//
// Every call takes the AG header's buffer, which the caller must hold (in
// its transaction, or locked): the header's counts of blocks on disk only
// change under it, so a block below the count is read from disk (and
// verified), and one at or above it is made up in the cache as an empty
// AG's would be, never read.  A block made up and left unchanged stays
// clean: evicted, it is made up again the same way.
//
// Before the first change of a block that is not on disk, Prepare*Change
// logs it whole -- and every block between the count and it -- and raises
// the header's count, in the caller's transaction: recovery then rebuilds
// the block from the log alone, whatever the disk held there, and a crash
// before that transaction is on disk leaves the block unwritten and the
// count as it was.  The allocators keep their searches within one block of
// the count, so a change makes at most one block real.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "fs/buf_cache.h"
#include "fs/format/superblock_format.h"
#include "fs/fs_trans.h"

namespace walfs::fs {

// The bitmap (inode-map) blocks of the AG on disk, from its header's buffer.
std::uint32_t BitmapBlocksOnDisk(const format::Superblock& sb, const BufRef& agh);
std::uint32_t ImapBlocksOnDisk(const format::Superblock& sb, const BufRef& agh);

Result<BufRef> ReadBitmapBlock(BufCache* cache, const format::Superblock& sb, std::uint32_t agno,
                               std::uint32_t index, const BufRef& agh);
Result<BufRef> ReadImapBlock(BufCache* cache, const format::Superblock& sb, std::uint32_t agno,
                             std::uint32_t index, const BufRef& agh);

// Makes blocks [on disk, index] real in `tx` (a no-op for a block on disk).
Status PrepareBitmapChange(FsTransaction* tx, BufCache* cache, const format::Superblock& sb,
                           std::uint32_t agno, std::uint32_t index, const BufRef& agh);
Status PrepareImapChange(FsTransaction* tx, BufCache* cache, const format::Superblock& sb,
                         std::uint32_t agno, std::uint32_t index, const BufRef& agh);

}  // namespace walfs::fs
