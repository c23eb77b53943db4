// Filesystem::Grow: walfs-growfs on a mounted filesystem (docs/disk_format.md,
// "Growing"), XFS's xfs_growfs_data_private in walfs's terms.
//
// Crash safety comes from the order.  The new AGs' headers, bitmaps and
// inode maps are written and flushed past the old end, where the old
// geometry never looks, so a crash before the next step leaves blocks that
// nothing references.  Then one logged transaction (kGrowfs) changes the
// superblock's total_blocks, ag_count and free_blocks together with the old
// last AG's header (length, free count) and the bits past its old end in its
// bitmap: recovery replays all of it or none, so a crash recovers the old
// geometry or the new one.  The superblock is a logged buffer of its own
// type (BlockType::kSuper) with no LSN stamp, so recovery always replays it,
// and the mount reads the geometry after recovery.
#include <cerrno>

#include <fmt/format.h>

#include "base/check.h"
#include "base/coding.h"
#include "base/messages.h"
#include "fs/ag_blocks.h"
#include "fs/filesystem.h"
#include "fs/format/ag_format.h"
#include "fs/format/block_types.h"
#include "fs/grow.h"
#include "fs/mkfs.h"

namespace walfs::fs {

GrowReport Filesystem::Geometry() const {
  GrowReport r;
  r.block_size = sb_.block_size;
  r.ag_blocks = sb_.ag_blocks;
  r.data_start = sb_.data_start();
  r.log_blocks = sb_.log_blocks;
  r.old_ag_count = r.new_ag_count = sb_.ag_count;  // ag_count first: total_blocks is then at least its
  r.old_blocks = r.new_blocks = sb_.total_blocks;
  r.device_bytes = device_->size_bytes();
  return r;
}

Result<GrowReport> Filesystem::Grow(std::uint64_t new_bytes) {
  // Read-only covers norecovery: nothing may be logged there.
  WALFS_RETURN_IF_ERROR(CheckWritable());
  MutexLock l(&grow_mu_);
  GrowReport report = Geometry();
  const std::uint64_t bs = sb_.block_size;
  if (new_bytes == 0) {
    WALFS_ASSIGN_OR_RETURN(new_bytes, device_->ProbeSize());
  }
  WALFS_ASSIGN_OR_RETURN(const GrowPlan plan, PlanGrow(sb_, new_bytes / bs));
  report.unused_blocks = plan.unused_blocks;
  if (plan.total_blocks == report.old_blocks) return report;
  // An image file shorter than the size asked for is extended to it; a
  // block device must be that large already.
  WALFS_RETURN_IF_ERROR(device_->Grow(new_bytes));
  report.device_bytes = device_->size_bytes();

  format::Superblock next = sb_;
  next.total_blocks = plan.total_blocks;
  next.ag_count = plan.ag_count;
  // 1. The new AGs, beyond the old end, durable before anything refers to them.
  std::uint64_t added_free = 0;
  for (std::uint32_t agno = report.old_ag_count; agno < plan.ag_count; ++agno) {
    WALFS_ASSIGN_OR_RETURN(const std::uint32_t free, WriteEmptyAg(device_, next, agno));
    added_free += free;
  }
  if (plan.ag_count > report.old_ag_count) WALFS_RETURN_IF_ERROR(device_->Flush());

  // 2. The old last AG lengthened and the new geometry, logged.  A bitmap
  // change larger than one transaction may log goes in steps, each a whole
  // (shorter) geometry; the new AGs come with the last.
  const std::uint32_t last = report.old_ag_count - 1;
  const std::uint32_t final_len = next.AgLength(last);
  const std::uint64_t bits = format::BitsPerBitmapBlock(sb_.block_size);
  std::uint32_t len = sb_.AgLength(last);
  for (;;) {
    const std::uint64_t step_end = (len / bits + journal::kGrowfsBitmapBlocks) * bits;
    const bool final = step_end >= final_len;
    const auto to = static_cast<std::uint32_t>(final ? final_len : step_end);
    format::Superblock geo = sb_;
    if (final) {
      geo = next;
    } else {
      geo.total_blocks = sb_.AgStart(last) + to;
    }
    WALFS_RETURN_IF_ERROR(GrowStep(last, len, to, geo, final ? added_free : 0));
    ++report.steps;
    len = to;
    if (final) break;
  }
  report.new_blocks = sb_.total_blocks;
  report.new_ag_count = sb_.ag_count;
  Message(Severity::kInfo, "{}: grown from {} to {} blocks ({} to {} AGs){}",
          options_.image.empty() ? device_->Describe() : options_.image, report.old_blocks, report.new_blocks,
          report.old_ag_count, report.new_ag_count,
          report.unused_blocks ? fmt::format("; {} blocks at the end unused (too few for an AG)", report.unused_blocks)
                               : std::string());
  return report;
}

Status Filesystem::GrowStep(std::uint32_t last, std::uint32_t from, std::uint32_t to, const format::Superblock& geo,
                            std::uint64_t added_free) NO_THREAD_SAFETY_ANALYSIS {
  WALFS_CHECK(to >= from);
  WALFS_ASSIGN_OR_RETURN(FsTransaction tx, FsTransaction::Begin(log_.get(), journal::TransType::kGrowfs));
  const std::uint32_t delta = to - from;
  if (delta > 0) {
    // The AG header first (the allocators' order), then its bitmap blocks.
    WALFS_ASSIGN_OR_RETURN(BufRef agh, cache_->Read(sb_.AgStart(last), format::BlockType::kAgHeader));
    WALFS_CHECK(tx.HoldAgHeader(agh, last));  // the first AG this transaction holds: waited for
    char* h = HeldChars(agh);
    if (DecodeFixed32(h + format::kAgLengthOffset) != from)
      return Status::Corruption(fmt::format("AG {} header: length {}, not the {} blocks the geometry gives it", last,
                                            DecodeFixed32(h + format::kAgLengthOffset), from));
    EncodeFixed32(h + format::kAgLengthOffset, to);
    EncodeFixed32(h + format::kAgFreeBlocksOffset, DecodeFixed32(h + format::kAgFreeBlocksOffset) + delta);
    tx.LogRange(agh, format::kAgLengthOffset, format::kAgFreeBlocksOffset + 3);
    // The bits past the old end were set (never allocated): clear them.
    const std::uint64_t bits = format::BitsPerBitmapBlock(sb_.block_size);
    for (std::uint64_t b = from; b < to;) {
      const auto index = static_cast<std::uint32_t>(b / bits);
      const std::uint64_t stop = std::min<std::uint64_t>(to, (std::uint64_t{index} + 1) * bits);
      WALFS_ASSIGN_OR_RETURN(BufRef bm, ReadBitmapBlock(cache_.get(), sb_, last, index, agh));
      tx.Hold(bm);
      if (index >= BitmapBlocksOnDisk(sb_, agh)) {
        // Never written (uninit_ag): it is whatever an empty AG of the
        // header's length has, now the new length; nothing to log.
        format::FillBitmapBlock(sb_, last, index, to, bm->data());
        b = stop;
        continue;
      }
      for (std::uint64_t i = b; i < stop; ++i) {
        if (!format::BitmapTest(bm->data(), i % bits))
          return Status::Corruption(fmt::format("AG {} bitmap: block {} past the AG's end is free", last, i));
        format::BitmapSet(bm->data(), i % bits, false);
      }
      tx.LogRange(bm, format::BitmapByteOffset(b % bits), format::BitmapByteOffset((stop - 1) % bits));
      b = stop;
    }
  }
  // The superblock's geometry and lazy free count.
  WALFS_ASSIGN_OR_RETURN(BufRef sbuf, cache_->Read(0, format::BlockType::kSuper));
  tx.Hold(sbuf);
  char* s = HeldChars(sbuf);
  EncodeFixed64(s + format::kSuperTotalBlocksOffset, geo.total_blocks);
  EncodeFixed32(s + format::kSuperAgCountOffset, geo.ag_count);
  EncodeFixed64(s + format::kSuperFreeBlocksOffset,
                DecodeFixed64(s + format::kSuperFreeBlocksOffset) + delta + added_free);
  format::SealSuperblock(sbuf->data());  // current for readers of the buffer; writeback reseals
  tx.LogRange(sbuf, format::kSuperTotalBlocksOffset, format::kSuperAgCountOffset + 3);
  tx.LogRange(sbuf, format::kSuperFreeBlocksOffset, format::kSuperFreeBlocksOffset + 7);
  // Published once the change is in the CIL (a transaction that sees the
  // new AGs commits after it, into the same checkpoint or a later one) and
  // before the AG header is let go (whoever takes it next finds a length
  // and free count that agree with the geometry).  total_blocks first: a
  // reader that sees the new AG count sees the new total.
  const std::uint64_t new_total = geo.total_blocks;
  const std::uint32_t new_count = geo.ag_count;
  const std::uint64_t added = delta + added_free;
  tx.OnCommitLocked([this, new_total, new_count, added] {
    sb_.total_blocks = new_total;
    sb_.ag_count = new_count;
    alloc_->AddFreeBlocks(static_cast<std::int64_t>(added));
  });
  return tx.Commit().status();
}

}  // namespace walfs::fs
