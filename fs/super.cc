#include "fs/super.h"

#include <vector>

#include <fmt/format.h>

#include "fs/format/ag_format.h"
#include "journal/log.h"
#include "journal/log_head.h"

namespace walfs::fs {

namespace {
// The superblock's lazy counters, summed from the AG headers on disk.
Status SumAgCounters(BlockDevice* device, format::Superblock* sb) {
  std::uint64_t free_blocks = 0, icount = 0, ifree = 0;
  std::vector<std::byte> b(sb->block_size);
  for (std::uint32_t agno = 0; agno < sb->ag_count; ++agno) {
    WALFS_RETURN_IF_ERROR(device->Read(sb->AgStart(agno) * sb->block_size, b.data(), b.size()));
    WALFS_ASSIGN_OR_RETURN(format::AgHeader h, format::DecodeAgHeader(b, *sb, agno));
    free_blocks += h.free_blocks;
    icount += h.icount;
    ifree += h.ifree;
  }
  sb->free_blocks = free_blocks;
  sb->icount = icount;
  sb->ifree = ifree;
  return Status::Ok();
}
}  // namespace

Status MarkMounted(BlockDevice* device, format::Superblock* sb, std::int64_t now_s) {
  if (!sb->clean()) WALFS_RETURN_IF_ERROR(SumAgCounters(device, sb));
  // Everything written after this (log records, writeback) is covered by
  // the flush: the flag is down before the first change.
  sb->flags &= ~format::kSuperClean;
  sb->mounted_s = now_s;
  return WriteSuperblock(device, *sb);
}

Status MarkUnmountedClean(BlockDevice* device, format::Superblock* sb) {
  WALFS_RETURN_IF_ERROR(SumAgCounters(device, sb));
  sb->flags |= format::kSuperClean;
  return WriteSuperblock(device, *sb);
}

Result<format::Superblock> ReadSuperblock(BlockDevice* device) {
  if (device->size_bytes() < format::kSuperSize)
    return Status::Corruption(fmt::format("not a walfs image: {} bytes, too small for a superblock",
                                          device->size_bytes()));
  std::vector<std::byte> b(format::kSuperSize);
  WALFS_RETURN_IF_ERROR(device->Read(0, b.data(), b.size()));
  return format::DecodeSuperblock(b, device->size_bytes());
}

Status WriteSuperblock(BlockDevice* device, const format::Superblock& sb) {
  std::vector<std::byte> b(sb.block_size);
  format::EncodeSuperblock(sb, b);
  WALFS_RETURN_IF_ERROR(device->Write(0, b.data(), b.size()));
  return device->Flush();
}

Result<bool> LogNeedsRecovery(BlockDevice* device, const format::Superblock& sb) {
  const journal::LogRegion region{device, sb.log_offset(), sb.log_sectors()};
  WALFS_ASSIGN_OR_RETURN(journal::LogPosition p,
                         journal::FindLogPosition(region, journal::RecoveryWindowSectors(sb.log_sectors())));
  return !p.empty && !p.clean;
}

}  // namespace walfs::fs
