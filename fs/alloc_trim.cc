// Allocator::Trim: FITRIM's walk over the free-space bitmaps (docs/fs.md,
// "Discard").
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "fs/ag_blocks.h"
#include "fs/alloc.h"
#include "fs/alloc_bitmap.h"
#include "fs/format/ag_format.h"

namespace walfs::fs {

namespace {
// Free runs discarded per hold of an AG header: the header is then let go,
// so that allocations in the AG wait for at most this many discards.
constexpr int kTrimRunsPerHold = 64;
}  // namespace

Result<std::uint64_t> Allocator::Trim(const TrimRequest& r, const DiscardFn& discard) {
  const std::uint64_t end = std::min<std::uint64_t>(r.end, sb_->total_blocks);
  std::uint64_t blocks = 0;
  for (std::uint32_t agno = 0; agno < sb_->ag_count; ++agno) {
    const std::uint64_t ag_start = sb_->AgStart(agno);
    const std::uint64_t ag_end = ag_start + sb_->AgLength(agno);
    if (ag_end <= r.first || ag_start >= end) continue;
    const auto from = static_cast<std::uint32_t>(std::max(r.first, ag_start) - ag_start);
    const auto to = static_cast<std::uint32_t>(std::min(end, ag_end) - ag_start);
    WALFS_RETURN_IF_ERROR(TrimAg(agno, from, to, std::max<std::uint32_t>(1, r.min), discard, &blocks));
  }
  return blocks;
}

Status Allocator::TrimAg(std::uint32_t agno, std::uint32_t from, std::uint32_t to, std::uint32_t min,
                         const DiscardFn& discard, std::uint64_t* blocks) NO_THREAD_SAFETY_ANALYSIS {
  std::uint32_t b = std::max(from, format::AgFirstFree(*sb_));
  while (b < to) {
    WALFS_ASSIGN_OR_RETURN(BufRef agh, cache_->Read(sb_->AgStart(agno), format::BlockType::kAgHeader));
    // Held as a transaction's HoldAgHeader holds it: every allocation and
    // free in this AG changes the bitmap only under this lock, and a free
    // registers its run busy before letting go of it.  So while we hold it,
    // a run free in the bitmap and not busy was freed by a checkpoint that
    // is on disk (or was never allocated since mkfs), and no one can
    // allocate it before its discard has returned.  Only this one AG
    // header is held, and nothing else is waited for under it.
    agh->Lock();
    // The bitmap's blocks read under the lock: whether a block is on disk
    // yet (uninit_ag) only changes under it.  One not on disk is an empty
    // AG's, all free (fs/ag_blocks.h).
    BitmapView bitmap{*sb_, {}};
    Status status;
    for (std::uint32_t i = 0; status.ok() && i < sb_->bitmap_blocks; ++i) {
      Result<BufRef> bm = ReadBitmapBlock(cache_, *sb_, agno, i, agh);
      if (bm.ok()) bitmap.blocks.push_back(std::move(bm).value());
      else status = bm.status();
    }
    if (!status.ok()) {
      agh->Unlock();
      return status;
    }
    for (int runs = 0; status.ok() && b < to && runs < kTrimRunsPerHold;) {
      const auto free = static_cast<std::uint32_t>(bitmap.Find(b, to, /*used=*/false));
      if (free >= to) {
        b = to;
        break;
      }
      const auto used = static_cast<std::uint32_t>(bitmap.Find(free, to, /*used=*/true));
      // [free, used) is free in the bitmap; discard its parts that are not busy.
      for (std::uint32_t s = free; s < used;) {
        const BusyRun busy = FirstBusy(agno, s, used - s);
        const std::uint32_t stop = busy.kind == BusyKind::kNone ? used : busy.start;
        if (stop > s && stop - s >= min) {
          status = discard(sb_->AgStart(agno) + s, stop - s);
          if (!status.ok()) break;
          *blocks += stop - s;
          ++runs;
          MutexLock l(&mu_);
          ++stats_.trim_runs;
          stats_.trim_blocks += stop - s;
        }
        if (busy.kind == BusyKind::kNone) break;
        {
          MutexLock l(&mu_);
          ++stats_.trim_busy_skips;
        }
        s = std::min(busy.end, used);
      }
      b = used;
    }
    agh->Unlock();
    WALFS_RETURN_IF_ERROR(status);
  }
  return Status::Ok();
}

}  // namespace walfs::fs
