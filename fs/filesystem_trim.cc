// Filesystem::Trim: FITRIM (fstrim) over the mounted filesystem (docs/fs.md,
// "Discard").
#include <cerrno>

#include <fmt/format.h>

#include "fs/filesystem.h"
#include "fs/fs_op.h"

namespace walfs::fs {

Result<std::uint64_t> Filesystem::Trim(std::uint64_t start, std::uint64_t len, std::uint64_t minlen) {
  // Read-only covers norecovery, where the bitmaps in memory are not what
  // the log would recover to: nothing may be discarded by them (XFS refuses
  // FITRIM there too).
  WALFS_RETURN_IF_ERROR(CheckWritable());
  if (!device_->SupportsDiscard())
    return Errno(EOPNOTSUPP, fmt::format("{} cannot discard", device_->kind()));
  const std::uint64_t bs = sb_.block_size;
  const std::uint64_t total_blocks = sb_.total_blocks;  // read once: a grow may raise it
  const std::uint64_t total = total_blocks * bs;
  // The checks ext4 and XFS make of a struct fstrim_range.
  if (start >= total)
    return Errno(EINVAL, fmt::format("trim from byte {}: the filesystem ends at byte {}", start, total));
  if (len < bs) return Errno(EINVAL, fmt::format("trim of {} bytes: less than a block ({})", len, bs));
  if (minlen > std::uint64_t{sb_.ag_blocks} * bs)
    return Errno(EINVAL, fmt::format("trim minlen {}: longer than an allocation group ({} bytes)", minlen,
                                     std::uint64_t{sb_.ag_blocks} * bs));
  const TrimRequest request{
      .first = start / bs,
      .end = len >= total - start ? total_blocks : (start + len) / bs,
      .min = static_cast<std::uint32_t>(std::max<std::uint64_t>(1, (minlen + bs - 1) / bs)),
  };
  // Everything freed before this call becomes durable, so no longer busy,
  // and is trimmed; what is freed from here on stays busy and is skipped.
  WALFS_RETURN_IF_ERROR(log_->Force(0));
  WALFS_ASSIGN_OR_RETURN(const std::uint64_t blocks,
                         alloc_->Trim(request, [this, bs](std::uint64_t block, std::uint64_t count) {
                           return device_->Discard(block * bs, count * bs);
                         }));
  counters_.trims.fetch_add(1, std::memory_order_relaxed);
  counters_.trimmed_bytes.fetch_add(blocks * bs, std::memory_order_relaxed);
  return blocks * bs;
}

}  // namespace walfs::fs
