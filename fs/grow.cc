#include "fs/grow.h"

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

#include "fs/mkfs.h"

namespace walfs::fs {

Result<GrowPlan> PlanGrow(const format::Superblock& sb, std::uint64_t new_blocks) {
  const std::uint64_t old_total = sb.total_blocks;
  const std::uint32_t old_count = sb.ag_count;
  if (new_blocks < old_total)
    return Status::FromErrno(
        EINVAL, fmt::format("walfs cannot shrink: {} blocks is less than the filesystem's {} ({} bytes)",
                            new_blocks, old_total, old_total * sb.block_size));
  // Extent records hold 48-bit block numbers (DecodeSuperblock's limit).
  const std::uint64_t usable = std::min<std::uint64_t>(new_blocks, std::uint64_t{1} << 47);
  GrowPlan plan{old_total, old_count, 0};
  // The last AG up to ag_blocks.
  const std::uint64_t last_end = sb.AgStart(old_count - 1) + sb.ag_blocks;
  plan.total_blocks = std::min(usable, last_end);
  // Then whole AGs, the last one possibly shorter but not below the minimum.
  const std::uint64_t min_ag = MinAgBlocks(sb);
  while (plan.ag_count < format::kMaxAgCount && plan.total_blocks < usable) {
    const std::uint64_t len = std::min<std::uint64_t>(sb.ag_blocks, usable - plan.total_blocks);
    if (len < min_ag) break;
    plan.total_blocks += len;
    ++plan.ag_count;
  }
  plan.total_blocks = std::max(plan.total_blocks, old_total);
  plan.unused_blocks = new_blocks - plan.total_blocks;
  return plan;
}

}  // namespace walfs::fs
