// How much of a FUSE mount's data the kernel may hold dirty in its page
// cache: the mount's backing-device info (bdi) in /sys/class/bdi/MAJ:MIN/.
// FUSE turns strict_limit on and caps max_ratio at 1 % of the system's dirty
// limit; max_bytes (Linux 6.2) shows that cap in bytes.  The writeback guard
// (mount/writeback_guard.h) keeps that much free space for what the kernel
// has accepted and not yet written back.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace walfs::mount {

// The device number ("0:39") of the filesystem mounted on `mountpoint` (an
// absolute path, compared as written: nothing is resolved through the mount),
// from /proc/self/mountinfo (no request to the mount itself: the daemon may
// ask before it serves).  NotFound when nothing is mounted there.
Result<std::string> MountDeviceNumber(const std::string& mountpoint);

// /sys/class/bdi/DEV/max_bytes, and whether strict_limit is on (without
// it the bound is soft: NotSupported).
Result<std::uint64_t> BdiDirtyBound(const std::string& device_number);

}  // namespace walfs::mount
