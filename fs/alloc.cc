#include "fs/alloc.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <limits>

#include <fmt/format.h>

#include "base/check.h"
#include "base/coding.h"
#include "fs/ag_blocks.h"
#include "fs/alloc_bitmap.h"
#include "fs/format/ag_format.h"

namespace walfs::fs {

using format::AgHeader;
using format::BlockType;
using format::Extent;

namespace {
constexpr std::uint64_t kPendingSeq = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint32_t kAgHeaderFreeOffset = 56;  // ag_format.h: free_blocks u32

}  // namespace

Result<BufRef> Allocator::HoldAgHeader(FsTransaction* tx, std::uint32_t agno, AgHeader* header,
                                       bool* held_before) NO_THREAD_SAFETY_ANALYSIS {
  WALFS_ASSIGN_OR_RETURN(BufRef agh, cache_->Read(sb_->AgStart(agno), BlockType::kAgHeader));
  if (held_before) *held_before = tx->Holds(agh);
  if (!tx->HoldAgHeader(agh, agno))
    return Status::WouldBlock(fmt::format("AG {} is busy and lower than an AG this transaction holds", agno));
  // The header verified when it was read (its counts against the geometry);
  // decode the counters it holds now.
  const char* p = reinterpret_cast<const char*>(agh->data().data());
  header->agno = agno;
  header->length = sb_->AgLength(agno);
  header->free_blocks = DecodeFixed32(p + kAgHeaderFreeOffset);
  if (header->free_blocks > header->length)
    return cache_->Damaged("AG header free count", 0, agh->blkno(),
                           Status::Corruption(fmt::format("AG {} header: {} free blocks in {}", agno,
                                                          header->free_blocks, header->length)));
  return agh;
}

void Allocator::LogAgFree(FsTransaction* tx, const BufRef& agh, std::uint32_t free_blocks)
    NO_THREAD_SAFETY_ANALYSIS {
  EncodeFixed32(reinterpret_cast<char*>(agh->data().data()) + kAgHeaderFreeOffset, free_blocks);
  tx->LogRange(agh, kAgHeaderFreeOffset, kAgHeaderFreeOffset + 3);
}

Allocator::BusyRun Allocator::FirstBusy(std::uint32_t agno, std::uint32_t agblock,
                                        std::uint32_t count) {
  const std::uint64_t committed = log_->cil().committed_seq();
  MutexLock l(&mu_);
  auto ag = busy_.find(agno);
  if (ag == busy_.end()) return {};
  auto& runs = ag->second;
  auto it = runs.upper_bound(agblock);
  if (it != runs.begin()) --it;
  while (it != runs.end() && it->first < agblock + count) {
    const bool durable = it->second.seq <= committed;
    if (durable && !it->second.discard) {  // on disk now: forget it
      it = runs.erase(it);
      continue;
    }
    const std::uint32_t end = it->first + it->second.count;
    if (end > agblock)
      return {durable                          ? BusyKind::kDiscarding
              : it->second.seq == kPendingSeq ? BusyKind::kPending
                                              : BusyKind::kCommittable,
              std::max(it->first, agblock), end};
    ++it;
  }
  return {};
}

Status Allocator::SetBits(FsTransaction* tx, std::uint32_t agno, const BufRef& agh, std::uint32_t agblock,
                          std::uint32_t count, bool used) NO_THREAD_SAFETY_ANALYSIS {
  const std::uint64_t bits = format::BitsPerBitmapBlock(sb_->block_size);
  const std::uint64_t first_bit = agblock, end_bit = std::uint64_t{agblock} + count;
  for (std::uint64_t b = first_bit; b < end_bit;) {
    const std::uint32_t index = static_cast<std::uint32_t>(b / bits);
    const std::uint64_t block_end = std::min(end_bit, (std::uint64_t{index} + 1) * bits);
    WALFS_ASSIGN_OR_RETURN(BufRef bm, ReadBitmapBlock(cache_, *sb_, agno, index, agh));
    tx->Hold(bm);
    for (std::uint64_t i = b; i < block_end; ++i) {
      if (format::BitmapTest(bm->data(), i % bits) == used)
        return cache_->Damaged("AG bitmap bit", 0, bm->blkno(),
                               Status::Corruption(fmt::format("AG {} bitmap: block {} is already {}", agno, i,
                                                              used ? "in use" : "free")));
    }
    // Checked before anything changes: a block made real here is logged
    // whole, with the bits it has now.
    WALFS_RETURN_IF_ERROR(PrepareBitmapChange(tx, cache_, *sb_, agno, index, agh));
    for (std::uint64_t i = b; i < block_end; ++i) format::BitmapSet(bm->data(), i % bits, used);
    tx->LogRange(bm, format::BitmapByteOffset(b % bits), format::BitmapByteOffset((block_end - 1) % bits));
    b = block_end;
  }
  return Status::Ok();
}

Status Allocator::CheckBits(std::uint32_t agno, const BufRef& agh, std::uint32_t agblock, std::uint32_t count,
                            bool used) NO_THREAD_SAFETY_ANALYSIS {
  const std::uint64_t bits = format::BitsPerBitmapBlock(sb_->block_size);
  const std::uint64_t end = std::uint64_t{agblock} + count;
  for (std::uint64_t b = agblock; b < end;) {
    const std::uint64_t index = b / bits, base = index * bits;
    const std::uint64_t stop = std::min(end, base + bits);
    WALFS_ASSIGN_OR_RETURN(BufRef bm, ReadBitmapBlock(cache_, *sb_, agno, static_cast<std::uint32_t>(index), agh));
    // A word of the map at a time: the first bit that is not `used`.
    const std::uint64_t odd = base + format::BitmapFind(bm->data(), b - base, stop - base, !used);
    if (odd < stop)
      return cache_->Damaged("AG bitmap bit", 0, bm->blkno(),
                             Status::Corruption(fmt::format("AG {} bitmap: block {} is already {}", agno, odd,
                                                            used ? "free" : "in use")));
    b = stop;
  }
  return Status::Ok();
}

Result<Extent> Allocator::AllocInAg(FsTransaction* tx, std::uint32_t agno,
                                    const AllocRequest& r, std::uint32_t goal_agblock,
                                    bool* saw_busy) {
  AgHeader h;
  bool held_before = false;
  WALFS_ASSIGN_OR_RETURN(BufRef agh, HoldAgHeader(tx, agno, &h, &held_before));
  // Nothing changed here: let others in -- unless the caller held the AG
  // before (the inode allocator holds it, and its inode map block under
  // it, while it asks for a chunk: letting go of the header alone would
  // let another transaction take it and then wait for the map block).
  auto let_go = [&] {
    if (!held_before) tx->Release(agh);
  };
  if (h.free_blocks < r.min) {
    let_go();
    return Status::NoSpace(fmt::format("AG {} is full", agno));
  }
  // The search covers the bitmap blocks on disk and the one after them
  // (uninit_ag: the rest are still unwritten, and every block they cover
  // is free): a run found there makes that one block real
  // (fs/ag_blocks.h), and the AG fills from its start.  Without the
  // feature, or once all are written, that is the whole bitmap.
  const std::uint64_t bits = format::BitsPerBitmapBlock(sb_->block_size);
  const std::uint32_t searched =
      std::min(sb_->bitmap_blocks, BitmapBlocksOnDisk(*sb_, agh) + 1);
  BitmapView view{*sb_, {}};
  for (std::uint32_t i = 0; i < searched; ++i) {
    WALFS_ASSIGN_OR_RETURN(BufRef bm, ReadBitmapBlock(cache_, *sb_, agno, i, agh));
    view.blocks.push_back(std::move(bm));
  }
  const std::uint32_t len =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(h.length, std::uint64_t{searched} * bits));
  const std::uint32_t first = format::AgFirstFree(*sb_);
  const std::uint32_t align = std::max<std::uint32_t>(1, r.align);
  auto aligned = [&](std::uint32_t b) { return (b + align - 1) / align * align; };
  // Two sweeps: from the goal to the end, then from the start to the goal.
  const std::uint32_t start = std::clamp(goal_agblock, first, len);
  for (int sweep = 0; sweep < 2; ++sweep) {
    std::uint32_t b = aligned(sweep == 0 ? start : first);
    const std::uint32_t end = sweep == 0 ? len : std::min(len, start + r.min);
    while (b < end && b + r.min <= len) {
      // The next free block from b (a word of the bitmap at a time).
      if (const auto f = static_cast<std::uint32_t>(view.Find(b, end, /*used=*/false)); f != b) {
        b = aligned(f);
        continue;
      }
      // A free run from b: how long (up to `want`)?
      std::uint32_t n = static_cast<std::uint32_t>(
          view.Find(b, std::min<std::uint64_t>(len, std::uint64_t{b} + r.want), /*used=*/true) - b);
      if (n < r.min) {
        b = aligned(b + n);
        continue;
      }
      if (const BusyRun busy = FirstBusy(agno, b, n); busy.kind != BusyKind::kNone) {
        // Use the part before the first busy block if it is long enough;
        // otherwise go on past the busy run (not block by block: a freed
        // file is one busy run per extent, thousands of blocks long).
        {
          MutexLock l(&mu_);
          ++stats_.busy_skips;
        }
        // Only space a log force can free counts (not this transaction's own).
        if (busy.kind == BusyKind::kCommittable || busy.kind == BusyKind::kDiscarding) *saw_busy = true;
        if (busy.start - b < r.min) {
          b = aligned(busy.end);
          continue;
        }
        n = busy.start - b;
      }
      WALFS_RETURN_IF_ERROR(SetBits(tx, agno, agh, b, n, true));
      LogAgFree(tx, agh, h.free_blocks - n);
      free_total_.fetch_sub(n, std::memory_order_relaxed);
      return Extent{0, sb_->AgStart(agno) + b, n, false};
    }
  }
  let_go();
  return Status::NoSpace(fmt::format("AG {} has no free run of {} blocks", agno, r.min));
}

Result<Extent> Allocator::Alloc(FsTransaction* tx, const AllocRequest& r) {
  WALFS_CHECK(r.min >= 1 && r.want >= r.min && r.want <= format::kMaxExtentLength);
  std::uint32_t goal_ag = 0, goal_agblock = 0;
  if (r.goal >= sb_->data_start() && r.goal < sb_->total_blocks) {
    goal_ag = static_cast<std::uint32_t>((r.goal - sb_->data_start()) / sb_->ag_blocks);
    goal_agblock = static_cast<std::uint32_t>(r.goal - sb_->AgStart(goal_ag));
  }
  constexpr int kAttempts = 4;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    bool saw_busy = false, skipped = false;
    // Ascending AG order from the goal's AG; AGs below one the transaction
    // holds are only try-locked (FsTransaction::HoldAgHeader).
    // The AG count read once: a grow may raise it meanwhile (the new AGs
    // are then tried from the next attempt on).
    const std::uint32_t ag_count = sb_->ag_count;
    const std::uint32_t ags = r.goal_ag_only ? 1 : ag_count;
    for (std::uint32_t i = 0; i < ags; ++i) {
      const std::uint32_t agno = (goal_ag + i) % ag_count;
      Result<Extent> e = AllocInAg(tx, agno, r, agno == goal_ag ? goal_agblock : 0, &saw_busy);
      if (e.ok()) {
        MutexLock l(&mu_);
        ++stats_.allocs;
        stats_.blocks_allocated += e->length;
        return e;
      }
      if (e.status().code() == StatusCode::kWouldBlock) {
        skipped = true;
        continue;
      }
      if (!e.status().IsNoSpace()) return e.status();
    }
    if (attempt + 1 == kAttempts) break;
    if (saw_busy) {
      // Freed-but-not-yet-durable space: make it durable and look again.
      {
        MutexLock l(&mu_);
        ++stats_.busy_forces;
      }
      WALFS_RETURN_IF_ERROR(log_->Force());
      // With online discard, space on disk is busy until discarded.
      WaitForDiscards();
    } else if (skipped) {
      // An AG we may not wait for was busy: give its holder a moment.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } else {
      break;
    }
  }
  return Status::NoSpace(fmt::format("no free run of {} blocks", r.min));
}

Status Allocator::LoadFreeTotal() NO_THREAD_SAFETY_ANALYSIS {
  std::int64_t total = 0;
  for (std::uint32_t agno = 0; agno < sb_->ag_count; ++agno) {
    WALFS_ASSIGN_OR_RETURN(BufRef agh, cache_->Read(sb_->AgStart(agno), BlockType::kAgHeader));
    agh->Lock();
    const AgHeader h = format::PeekAgHeader(agh->data());  // verified when read
    agh->Unlock();
    total += h.free_blocks;
  }
  free_total_.store(total, std::memory_order_relaxed);
  return Status::Ok();
}

Status Allocator::Free(FsTransaction* tx, std::uint64_t block, std::uint32_t count) {
  if (block < sb_->data_start() || block + count > sb_->total_blocks || count == 0)
    return cache_->Damaged("extent outside the data area", 0, block,
                           Status::Corruption(fmt::format("freeing blocks {}+{}, outside the data area", block,
                                                          count)));
  const auto agno = static_cast<std::uint32_t>((block - sb_->data_start()) / sb_->ag_blocks);
  const auto agblock = static_cast<std::uint32_t>(block - sb_->AgStart(agno));
  if (agblock < format::AgFirstFree(*sb_) || agblock + count > sb_->AgLength(agno))
    return cache_->Damaged("extent over AG metadata", 0, block,
                           Status::Corruption(fmt::format("freeing blocks {}+{}: AG {} metadata or past its end",
                                                          block, count, agno)));
  AgHeader h;
  Result<BufRef> held = HoldAgHeader(tx, agno, &h);
  if (!held.ok() && held.status().code() == StatusCode::kWouldBlock) {
    // Out of AG order and contended: free it in a step of its own.
    tx->Defer([this, block, count](FsTransaction* t) { return Free(t, block, count); });
    return Status::Ok();
  }
  WALFS_RETURN_IF_ERROR(held.status());
  BufRef agh = std::move(held).value();
  // A double free is found before anything changes (the caller then fails
  // the filesystem: its metadata disagrees with itself).
  WALFS_RETURN_IF_ERROR(CheckBits(agno, agh, agblock, count, /*used=*/true));
  WALFS_RETURN_IF_ERROR(SetBits(tx, agno, agh, agblock, count, false));
  LogAgFree(tx, agh, h.free_blocks + count);
  free_total_.fetch_add(count, std::memory_order_relaxed);
  // Busy until the checkpoint holding this free is on disk.  Nobody else
  // sees the bits clear before this transaction lets go of the AG header.
  {
    MutexLock l(&mu_);
    busy_[agno][agblock] = Busy{count, kPendingSeq, static_cast<bool>(online_discard_)};
    ++stats_.frees;
    stats_.blocks_freed += count;
  }
  tx->OnCommit([this, agno, agblock](std::uint64_t seq) {
    MutexLock l(&mu_);
    auto ag = busy_.find(agno);
    if (ag == busy_.end()) return;
    auto it = ag->second.find(agblock);
    if (it == ag->second.end()) return;
    it->second.seq = seq;
    if (it->second.discard) {
      discard_queue_.push_back({agno, agblock, it->second.count, seq});
      if (seq <= durable_seq_) discard_cv_.SignalAll();
    }
  });
  return Status::Ok();
}

AllocStats Allocator::Stats() const {
  MutexLock l(&mu_);
  return stats_;
}

}  // namespace walfs::fs
