// The superblock at mount and unmount: a mounted filesystem is marked not
// clean (so that after a crash fsck and the next mount know the lazy
// counters are stale), and a clean unmount -- after the log is closed and
// everything written back -- stores counters summed from the AG headers and
// marks it clean again.  And the superblock read and rewritten alone, for
// walfs-admin (label, UUID) on an unmounted image:
//
//   WALFS_ASSIGN_OR_RETURN(format::Superblock sb, ReadSuperblock(dev));
//   WALFS_ASSIGN_OR_RETURN(bool dirty, LogNeedsRecovery(dev, sb));
//   sb.label = "data";
//   WALFS_RETURN_IF_ERROR(WriteSuperblock(dev, sb));
#pragma once

#include "base/block_device.h"
#include "base/status.h"
#include "fs/format/superblock_format.h"

namespace walfs::fs {

// Clears the clean flag on disk (and in *sb), durably.  Call after the log
// is open (recovered): if the image was not clean, the lazy counters are
// stale, and are first recomputed from the (replayed) AG headers.
Status MarkMounted(BlockDevice* device, format::Superblock* sb, std::int64_t now_s);
// Sums the AG headers on disk into the lazy counters and sets the clean
// flag, durably.  Call only once the log is closed (everything on disk).
Status MarkUnmountedClean(BlockDevice* device, format::Superblock* sb);

// Block 0 decoded and checked against the device's size (DecodeSuperblock's
// Corruption or NotSupported when it is not a walfs superblock).
Result<format::Superblock> ReadSuperblock(BlockDevice* device);
// Encodes `sb` (CRC included) into block 0, durably.
Status WriteSuperblock(BlockDevice* device, const format::Superblock& sb);
// Whether a mount would have to recover the log (no clean-unmount record at
// its head): the metadata on disk is then behind the log.
Result<bool> LogNeedsRecovery(BlockDevice* device, const format::Superblock& sb);

}  // namespace walfs::fs
