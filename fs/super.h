// The superblock at mount and unmount: a mounted filesystem is marked not
// clean (so that after a crash fsck and the next mount know the lazy
// counters are stale), and a clean unmount -- after the log is closed and
// everything written back -- stores counters summed from the AG headers and
// marks it clean again.
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

}  // namespace walfs::fs
