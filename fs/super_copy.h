// The superblock's copies in the AG headers (format::kCompatSuperCopies;
// docs/disk_format.md, "Superblock copies"): finding one when the primary
// does not decode, and rewriting them all when the superblock's identity
// changes.  XFS keeps a secondary superblock at the start of every AG and
// ext4 backups in some block groups; walfs keeps its copy inside each AG
// header block, under that block's CRC, so a copy costs no block of its own.
//
//   Result<format::Superblock> sb = ReadSuperblock(dev);
//   if (!sb.ok()) {
//     Result<SuperblockCopy> c = FindSuperblockCopy(dev, /*scan=*/true);
//     if (c.ok()) ... c->sb is the geometry, c->agno whose copy gave it
//   }
//
// Which copy: every AG header that verifies (magic, CRC, its own block
// number and the copy's metadata UUID) and whose copy decodes is a
// witness.  The copies of the AGs a grow added hold the grown size, those
// written before it the smaller one; everything else in them is the same
// (SuperblockCopyMismatch), so the finder takes the identity from the
// first witness and the size from the witness that says the largest --
// which is the size of the newest AG that exists on disk.
#pragma once

#include <cstdint>

#include "base/block_device.h"
#include "base/status.h"
#include "fs/format/superblock_format.h"

namespace walfs::fs {

struct SuperblockCopy {
  format::Superblock sb;     // SuperblockCopyOf form: not clean, counters and error record zero
  std::uint32_t agno = 0;    // the AG whose copy gave the size
  std::uint32_t witnesses = 0;  // AG headers whose copies agree
};

// Looks for the copies.  First where the primary's own fields put AG 0 (a
// damaged primary usually still says where); then, with `scan`, at every
// 1 KiB boundary of the device -- but only when block 0 still looks like a
// walfs superblock (its magic at most one byte off, or the first 512 bytes
// all zero: wiped), so a file that is not a walfs image is never read whole.  NotFound with a reason when no AG
// header holds a copy that verifies (an image made before the feature, or
// every copy damaged).
Result<SuperblockCopy> FindSuperblockCopy(BlockDevice* device, bool scan);

// Rewrites the copy in every AG header from `sb` (walfs-admin's label and
// UUID changes, on an unmounted image with a clean log): each header is
// read, checked, given the new copy, resealed and written; then flushed.
// A header that does not verify is left alone (fsck rebuilds it).
Status WriteSuperblockCopies(BlockDevice* device, const format::Superblock& sb);

}  // namespace walfs::fs
