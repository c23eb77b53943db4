// WALFS_IOC_GROWFS: the ioctl walfs-growfs sends to a walfs mount's root
// directory (as xfs_growfs sends XFS_IOC_FSGROWFSDATA), answered by the
// daemon's FUSE ioctl handler (mount/fuse_server.cc) with
// Filesystem::Grow or, with WALFS_GROWFS_QUERY, Filesystem::Geometry.
// A kernel ABI struct, not an on-disk one: fixed-width fields, the same
// layout for 32- and 64-bit callers (no FUSE_IOCTL_COMPAT work).  FUSE
// copies it in and out by the command's encoding (a restricted ioctl, on a
// directory because INIT granted FUSE_CAP_IOCTL_DIR).  Growing is for root
// only (EPERM otherwise); the query is for anyone.  No FUSE or fs headers.
#pragma once

#include <linux/ioctl.h>

#include <cstdint>

namespace walfs::mount {

inline constexpr std::uint32_t kGrowfsQuery = 1u << 0;  // report the geometry, change nothing (-n)

struct GrowfsArgs {
  std::uint64_t new_bytes;      // in: the size to grow to; 0: the device's (image file's) size
  std::uint32_t flags;          // in: kGrowfsQuery
  std::uint32_t block_size;     // out, and everything below
  std::uint64_t old_blocks;     // total blocks before
  std::uint64_t new_blocks;     // and after
  std::uint32_t old_ag_count;
  std::uint32_t new_ag_count;
  std::uint32_t ag_blocks;
  std::uint32_t log_blocks;
  std::uint64_t data_start;     // blocks before AG 0 (superblock and log)
  std::uint64_t unused_blocks;  // of the size asked for, too few for another AG
  std::uint64_t device_bytes;   // the device's size now
  std::uint32_t steps;          // growfs transactions committed
  std::uint32_t reserved;
};
static_assert(sizeof(GrowfsArgs) == 80);

inline constexpr unsigned long kIocGrowfs = _IOWR('W', 0x47, GrowfsArgs);  // NOLINT

}  // namespace walfs::mount
