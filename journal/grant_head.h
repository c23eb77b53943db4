// GrantHead: one of the log's two grant heads (reserve and write), after
// XFS's xlog_grant_head: a byte count of granted log space, a FIFO of
// tickets waiting for space, and the lock that orders them.
//
//   free = log size - tail space - grant          (clamped at 0)
//
// Grant(tic, need) takes `need` bytes for a ticket: lock-free when nobody
// waits and the space fits, otherwise under the head lock, where the caller
// first wakes queued waiters that fit and then either takes its space or
// queues behind them and sleeps.  FIFO without overtaking: a waiter is
// granted space only if everyone queued ahead of it still fits.
//
// How waiters are woken is the log's WakeMode (inline / waking / wakeq); see
// wake_mode.h and docs/reservation.md.  Every sleep, wake and skip is counted.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/intrusive/list.hpp>

#include "base/cpu.h"
#include "base/histogram.h"
#include "base/status.h"
#include "base/wake_queue.h"
#include "journal/head_lock.h"
#include "journal/ticket.h"

namespace walfs::journal {

class LogSpace;

// Mean and percentiles of one latency histogram, in nanoseconds.
struct LatencySummary {
  std::uint64_t count = 0;
  double mean_ns = 0;
  std::int64_t p50_ns = 0;
  std::int64_t p99_ns = 0;
  std::int64_t max_ns = 0;
};
LatencySummary Summarize(const Histogram& h);

// A point-in-time copy of a grant head's state and counters.
struct GrantHeadStats {
  std::string name;
  std::int64_t grant_bytes = 0;
  std::int64_t free_bytes = 0;
  std::int64_t queued = 0;
  std::uint64_t fast_path_hits = 0;      // granted without the lock
  std::uint64_t slow_path_entries = 0;   // took the lock to be granted
  std::uint64_t sleeps = 0;              // waits begun (one may return at once on a pending permit)
  std::uint64_t wake_passes = 0;         // walks of the queue by a waker
  std::uint64_t wakes_issued = 0;        // signals sent to waiters
  std::uint64_t wake_syscalls = 0;       // signals that needed a futex wake
  std::uint64_t duplicate_wakes = 0;     // signals to a waiter already signalled (inline)
  std::uint64_t duplicate_wakes_avoided = 0;  // WAKING waiters skipped (waking, wakeq)
  std::uint64_t useful_wakes = 0;        // woken waiter found its space
  std::uint64_t futile_wakes = 0;        // woken waiter found no space, slept again
  std::uint64_t signals_under_lock = 0;  // signals issued with the head lock held
  std::uint64_t signals_after_unlock = 0;
  std::uint64_t max_signals_per_cycle = 0;  // most signals one waiter got between runs
  std::int64_t max_queue_depth = 0;
  LatencySummary lock_hold;
  LatencySummary lock_wait;
  LatencySummary grant_wait;   // enqueue to grant
  LatencySummary wake_batch;   // signals issued per wake-queue flush (wakeq)
};

class GrantHead {
 public:
  GrantHead(std::string_view name, LogSpace* log, HeadLockKind lock_kind);
  GrantHead(const GrantHead&) = delete;
  GrantHead& operator=(const GrantHead&) = delete;
  ~GrantHead();

  // Waits (FIFO) until `need` bytes fit, then adds them to this head.
  // Returns Shutdown if the log is or becomes shut down.
  Status Grant(Ticket* tic, std::int64_t need);

  // Unconditional changes, for space a ticket already owns.
  void Add(std::int64_t bytes) { grant_.fetch_add(bytes, std::memory_order_seq_cst); }
  void Sub(std::int64_t bytes) { grant_.fetch_sub(bytes, std::memory_order_seq_cst); }

  // Wakes the queued waiters that fit now (xfs_log_space_wake for one head).
  void Wake();
  // Wakes every waiter; they return Shutdown.  Call after the log's shutdown
  // flag is set.
  void WakeAllForShutdown();

  std::int64_t grant() const { return grant_.load(std::memory_order_seq_cst); }
  std::int64_t FreeBytes() const;
  std::string_view name() const { return name_; }
  GrantHeadStats Stats() const;
  void ResetStats();

 private:
  using TicketList = boost::intrusive::list<Ticket, boost::intrusive::constant_time_size<true>>;

  bool TryClaimFast(std::int64_t need);
  bool TryClaimLocked(std::int64_t need, std::int64_t reserved_ahead) REQUIRES(lock_);
  std::int64_t NeedAheadOfLocked(const Ticket* tic) REQUIRES(lock_);
  bool WakeLocked(std::int64_t* free, WakeQueue* wakeq) REQUIRES(lock_);
  Status WaitLocked(Ticket* tic, std::int64_t need, WakeQueue* wakeq) REQUIRES(lock_);
  void DequeueLocked(Ticket* tic) REQUIRES(lock_);
  void SignalNow(WaitToken* token);
  void IssueWakes(WakeQueue* wakeq);
  // The wake mode as the `mode` field of this head's trace events.
  unsigned ModeField() const;

  LogSpace* const log_;
  const std::string name_;
  const int index_;  // 0 reserve, 1 write: the `head` field of trace events

  // Lock order: a thread holds at most one head lock, and never across a
  // sleep, a push of the tail or a call out of the journal.
  alignas(kCacheLineSize) HeadLock lock_;
  TicketList waiters_ GUARDED_BY(lock_);

  // Written by every reservation; alone on its line so that fast-path CASes
  // do not invalidate the lock or the queue count.
  alignas(kCacheLineSize) std::atomic<std::int64_t> grant_{0};

  // waiters_.size(), readable without the lock.  Written (seq_cst) under the
  // lock before a waiter re-checks space, read (seq_cst) by wakers after they
  // change space: one of the two always sees the other (see Wake()).
  alignas(kCacheLineSize) std::atomic<std::int64_t> queued_{0};

  // Counters: relaxed atomics, on their own lines, bumped mostly on slow paths.
  struct alignas(kCacheLineSize) Counters {
    std::atomic<std::uint64_t> fast_path_hits{0};
    std::atomic<std::uint64_t> slow_path_entries{0};
    std::atomic<std::uint64_t> sleeps{0};
    std::atomic<std::uint64_t> wake_passes{0};
    std::atomic<std::uint64_t> wakes_issued{0};
    std::atomic<std::uint64_t> wake_syscalls{0};
    std::atomic<std::uint64_t> duplicate_wakes{0};
    std::atomic<std::uint64_t> duplicate_wakes_avoided{0};
    std::atomic<std::uint64_t> useful_wakes{0};
    std::atomic<std::uint64_t> futile_wakes{0};
    std::atomic<std::uint64_t> signals_under_lock{0};
    std::atomic<std::uint64_t> signals_after_unlock{0};
    std::atomic<std::uint64_t> max_signals_per_cycle{0};
    std::atomic<std::int64_t> max_queue_depth{0};
  };
  Counters counters_;
  Histogram grant_wait_ns_;
  Histogram wake_batch_;
};

}  // namespace walfs::journal
