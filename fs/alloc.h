// Allocator: blocks from the AGs' free-space bitmaps, inside transactions.
//
//   WALFS_ASSIGN_OR_RETURN(format::Extent e, alloc.Alloc(&tx, {.goal = near, .min = 1, .want = 16}));
//   WALFS_RETURN_IF_ERROR(alloc.Free(&tx, e.disk_block, e.length));
//
// Allocation takes the AG header buffer first (it serializes every change to
// that AG's bitmap, so the bitmap can be scanned without its own locks), then
// the bitmap blocks it changes.  It prefers the goal's AG and the first free
// run at or after the goal, then the other AGs in order; an AG lower than
// one the transaction already holds is only try-locked, so no two
// transactions ever wait for each other's AGs in opposite orders.  An AG
// that yields nothing is released again unless the transaction changed it
// or held it before the call.  The AG header's
// free count is logged with every change; the superblock's counters are lazy
// (summed from the AG headers at a clean unmount; fsck rewrites them after
// a replay).
//
// Busy extents (XFS's xfs_extent_busy): blocks freed by a transaction are
// not reused until the checkpoint that freed them is on disk -- otherwise a
// crash could replay the old owner's metadata over, or expose, the new
// owner's data.  When only busy space is left, allocation forces the log
// and tries again.
//
// Trim (FITRIM, alloc_trim.cc) discards free runs that are not busy, each
// AG under its header's lock: what is free in memory and not busy is free
// in the state the on-disk log recovers to (docs/fs.md, "Discard").  Online
// discard (-o discard, alloc_discard.cc) discards each freed run once its
// freeing checkpoint is on disk, keeping it busy until the discard is done.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "fs/buf_cache.h"
#include "fs/format/ag_format.h"
#include "fs/format/inode_format.h"
#include "fs/format/superblock_format.h"
#include "fs/fs_trans.h"
#include "journal/log.h"

namespace walfs::fs {

struct AllocRequest {
  std::uint64_t goal = 0;   // a block near which to allocate (0: anywhere)
  std::uint32_t min = 1;    // fail unless at least this many contiguous blocks
  std::uint32_t want = 1;   // as many as this if a run that long is free
  std::uint32_t align = 1;  // the first block's AG-relative number is a multiple of this
  bool goal_ag_only = false;  // do not look beyond the goal's AG
};

struct AllocStats {
  std::uint64_t allocs = 0, frees = 0, blocks_allocated = 0, blocks_freed = 0;
  std::uint64_t busy_skips = 0;   // runs passed over because they were busy
  std::uint64_t busy_forces = 0;  // log forces to free busy space
  std::uint64_t trim_runs = 0;    // free runs discarded by Trim
  std::uint64_t trim_blocks = 0;  // and their blocks
  std::uint64_t trim_busy_skips = 0;  // busy runs Trim left alone
  std::uint64_t online_discards = 0;        // freed runs discarded by -o discard
  std::uint64_t online_discard_blocks = 0;  // and their blocks
  std::uint64_t online_discard_errors = 0;  // discards the device failed (the run is only not given back)
};

struct TrimRequest {
  std::uint64_t first = 0;     // filesystem blocks [first, end)
  std::uint64_t end = 0;
  std::uint32_t min = 1;       // only free runs at least this long
};
// Gives blocks [block, block + count) back to the device (Discard).
using DiscardFn = std::function<Status(std::uint64_t block, std::uint64_t count)>;

class Allocator {
 public:
  Allocator(BufCache* cache, journal::Log* log, const format::Superblock* sb)
      : cache_(cache), log_(log), sb_(sb) {}
  ~Allocator();  // StopOnlineDiscard()
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // One contiguous run (its disk_block and length; file_block is 0).
  // NoSpace when no AG has a free, non-busy run of `min` blocks.
  Result<format::Extent> Alloc(FsTransaction* tx, const AllocRequest& request);
  // Frees [block, block + count) (one AG).  Freeing a free block is
  // Corruption (a double free: the filesystem shuts down).  When the AG is
  // lower than one the transaction already holds and another transaction
  // has it, the free is deferred to a step of its own at commit
  // (FsTransaction::Defer), so no two transactions wait for each other's
  // AGs.  A metadata block being freed must be cancelled
  // (BufLogItem::MarkCancelled) by the caller, so that no stale copy of it
  // is written back over the next owner.
  Status Free(FsTransaction* tx, std::uint64_t block, std::uint32_t count);

  // Discards, through `discard`, every free run in the request's range
  // that is not busy and at least `min` blocks long, and returns the blocks
  // discarded.  Each AG's header is locked while its runs are found and
  // discarded (a batch at a time, then let go so allocations can proceed),
  // so no run can be allocated, or freed into, while it is being
  // discarded.  Busy runs -- freed by a checkpoint not yet on disk, or by a
  // transaction not yet committed -- are left alone: a crash could still
  // bring back the file that owned them.  Trim does not force the log;
  // Filesystem::Trim does so first, so that everything freed before the
  // call is no longer busy.
  Result<std::uint64_t> Trim(const TrimRequest& request, const DiscardFn& discard);

  // Online discard (-o discard; XFS's xlog_discard_busy): from now on every
  // run freed is discarded through `discard` by a thread of its own once the
  // checkpoint that freed it is on disk (the CIL's committed hook says
  // when), and it stays busy -- unallocatable -- until that discard has
  // returned.  An allocation that finds only such runs waits for the
  // discards in flight instead of failing.  Call before the first Free.
  void StartOnlineDiscard(DiscardFn discard) EXCLUDES(mu_);
  // Discards every queued run whose free is on disk by now, then stops the
  // thread and unhooks from the CIL.  Runs whose free is not on disk stay
  // busy, undiscarded (only the next trim gives them back).  Idempotent.
  void StopOnlineDiscard() EXCLUDES(mu_);

  AllocStats Stats() const;
  // Free blocks over all AGs, kept current by Alloc and Free once loaded
  // from the AG headers (at mount).
  Status LoadFreeTotal();
  std::int64_t FreeTotal() const { return free_total_.load(std::memory_order_relaxed); }
  // A grow added n free blocks (a longer last AG, new AGs).
  void AddFreeBlocks(std::int64_t n) { free_total_.fetch_add(n, std::memory_order_relaxed); }

 private:
  struct Busy {
    std::uint32_t count;
    std::uint64_t seq;  // the checkpoint sequence that frees it
    // Online discard: busy until discarded, not only until seq is on disk.
    bool discard = false;
  };
  // A run waiting for its online discard, in commit order.
  struct QueuedDiscard {
    std::uint32_t agno, agblock, count;
    std::uint64_t seq;
  };
  Result<format::Extent> AllocInAg(FsTransaction* tx, std::uint32_t agno,
                                   const AllocRequest& request, std::uint32_t goal_agblock,
                                   bool* saw_busy);
  // `held_before` (optional): whether the transaction held it already.
  Result<BufRef> HoldAgHeader(FsTransaction* tx, std::uint32_t agno, format::AgHeader* header,
                              bool* held_before = nullptr);
  void LogAgFree(FsTransaction* tx, const BufRef& agh, std::uint32_t free_blocks);
  // Both under the AG header `agh`, held.
  Status CheckBits(std::uint32_t agno, const BufRef& agh, std::uint32_t agblock, std::uint32_t count, bool used);
  Status SetBits(FsTransaction* tx, std::uint32_t agno, const BufRef& agh, std::uint32_t agblock,
                 std::uint32_t count, bool used);
  // The first busy run overlapping [agblock, +count) of AG agno: space
  // freed by a checkpoint that is not on disk yet (kCommittable: a log
  // force frees it), or by a transaction not yet committed (kPending);
  // [start, end) is its part from agblock on.  Prunes what is on disk.
  // kDiscarding: on disk, its online discard queued or under way (a force
  // does not free it; WaitForDiscards does).
  enum class BusyKind { kNone, kPending, kCommittable, kDiscarding };
  struct BusyRun {
    BusyKind kind = BusyKind::kNone;
    std::uint32_t start = 0, end = 0;
  };
  BusyRun FirstBusy(std::uint32_t agno, std::uint32_t agblock, std::uint32_t count);
  // Online discard's thread, and what an allocation that met only runs
  // being discarded waits for (the discards of every run on disk now).
  void DiscardMain() EXCLUDES(mu_);
  void WaitForDiscards() EXCLUDES(mu_);
  bool DurableQueuedLocked() const REQUIRES(mu_);
  // Trim's work in one AG over agblocks [from, to); adds to *blocks.
  Status TrimAg(std::uint32_t agno, std::uint32_t from, std::uint32_t to, std::uint32_t min,
                const DiscardFn& discard, std::uint64_t* blocks);

  BufCache* const cache_;
  journal::Log* const log_;
  const format::Superblock* const sb_;
  mutable Mutex mu_;
  // Per AG: agblock -> busy run.
  std::map<std::uint32_t, std::map<std::uint32_t, Busy>> busy_ GUARDED_BY(mu_);
  AllocStats stats_ GUARDED_BY(mu_);
  std::atomic<std::int64_t> free_total_{0};
  // Online discard.  Lock order: mu_ is taken inside the CIL's hook lock
  // (its committed hook), never the other way round.
  DiscardFn online_discard_ GUARDED_BY(mu_);  // empty: off
  std::vector<QueuedDiscard> discard_queue_ GUARDED_BY(mu_);
  std::uint64_t durable_seq_ GUARDED_BY(mu_) = 0;  // the newest checkpoint known on disk
  std::size_t discards_in_flight_ GUARDED_BY(mu_) = 0;
  bool discard_stop_ GUARDED_BY(mu_) = false;
  CondVar discard_cv_{&mu_};  // work queued, checkpoints on disk, discards done, stop
  std::thread discarder_;
};

}  // namespace walfs::fs
