// Making a filesystem: the geometry (how big the log and the allocation
// groups are) and the initial image -- superblock, a zeroed log, AG headers,
// free-space bitmaps, inode maps and the root directory's inode chunk.
// mkfs.walfs is a thin command line over this; tests call it directly.
//
//   WALFS_ASSIGN_OR_RETURN(Superblock sb, MakeFilesystem(dev, {.label = "data"}));
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/block_device.h"
#include "base/status.h"
#include "fs/format/superblock_format.h"
#include "journal/log.h"
#include "journal/reservation.h"

namespace walfs::fs {

struct MkfsOptions {
  std::uint32_t block_size = 4096;
  std::uint32_t ag_count = 0;          // 0: chosen from the size
  std::uint64_t log_bytes = 0;         // 0: chosen from the size (or log_concurrency)
  std::uint32_t log_concurrency = 0;   // size the log for N concurrent transactions
  std::string label{};
  std::optional<format::Uuid> uuid{};  // default: a new random UUID
  std::int64_t now_s = 0;              // creation time; 0: the clock
  std::uint32_t root_uid = 0, root_gid = 0;
  // The filesystem's size; 0: the whole device (less leaves room to grow:
  // tests of walfs-growfs on a memory device).
  std::uint64_t size_bytes = 0;
  // AG bitmap and inode-map blocks written as they are first used (the
  // uninit_ag feature; fs/ag_blocks.h): mkfs writes a few MiB of a 1 TiB
  // image instead of hundreds.  false: every block written now.
  bool uninit_ag = true;
};

// The reservation geometry of a filesystem with this block size (the same
// table the mount uses, so mkfs and mount agree on the minimum log).
journal::ReservationGeometry ReservationGeometryFor(std::uint32_t block_size);
// The log options every opener of `sb`'s log on `device` starts from (the
// mount adds its own: wake mode, log buffers, the timed push): where the log
// is, its reservation geometry, and how replay seals and trusts blocks.
journal::LogOptions LogOptionsFor(BlockDevice* device, const format::Superblock& sb);
// The smallest log, in bytes, a filesystem with this block size accepts:
// 3 x the largest reservation (XFS's rule) plus the sliver the log never
// grants, and room for the default in-core log buffers.
std::uint64_t MinLogBytes(std::uint32_t block_size);

// A new random UUID (libuuid's uuid_generate), for mkfs and walfs-admin -U.
format::Uuid NewUuid();

// Chooses the geometry for a device of `device_bytes`.  InvalidArgument with
// a reason for a device too small, a log below the minimum or larger than
// the device allows, a bad block size or AG count.
Result<format::Superblock> PlanFilesystem(std::uint64_t device_bytes, const MkfsOptions& options);

// The fewest blocks an AG may have: its header, bitmap and inode map and
// one inode chunk (mkfs refuses a smaller last AG; growfs leaves a smaller
// remainder unused).
std::uint32_t MinAgBlocks(const format::Superblock& sb);
// Writes AG agno of `sb` as mkfs leaves an AG without the root chunk --
// its bitmap (its own metadata in use, bits past its end set), an empty
// inode map, and its header -- without flushing.  Returns its free blocks.
// walfs-growfs writes the AGs it adds this way, beyond the old end.
Result<std::uint32_t> WriteEmptyAg(BlockDevice* device, const format::Superblock& sb, std::uint32_t agno);

// Plans and writes the filesystem, then flushes.  Returns its superblock.
Result<format::Superblock> MakeFilesystem(BlockDevice* device, const MkfsOptions& options);

}  // namespace walfs::fs
