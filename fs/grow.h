// Growing a filesystem (walfs-growfs, as xfs_growfs): where the new end goes.
// The last AG is lengthened up to ag_blocks first, then whole AGs are added;
// the last new AG may be shorter, but never shorter than MinAgBlocks (what
// mkfs asks of an AG): a remainder too small for one is left unused.
// Nothing is renumbered: AGs keep their starts, inode numbers are absolute.
//
//   WALFS_ASSIGN_OR_RETURN(GrowPlan plan, PlanGrow(sb, device_bytes / sb.block_size));
//   // plan.total_blocks, plan.ag_count: the geometry to log (fs/filesystem_grow.cc)
#pragma once

#include <cstdint>

#include "base/status.h"
#include "fs/format/superblock_format.h"

namespace walfs::fs {

struct GrowPlan {
  std::uint64_t total_blocks = 0;   // the new total (== the old: nothing to add)
  std::uint32_t ag_count = 0;       // the new AG count
  std::uint64_t unused_blocks = 0;  // of those asked for, left past the new end
};

// The geometry `sb` grows to when `new_blocks` blocks are available.
// InvalidArgument (EINVAL) when new_blocks is below total_blocks: walfs
// does not shrink.  Beyond 2^47 blocks or kMaxAgCount AGs the rest is
// unused.
Result<GrowPlan> PlanGrow(const format::Superblock& sb, std::uint64_t new_blocks);

}  // namespace walfs::fs
