#include "journal/grant_head.h"

#include <algorithm>

#include "base/check.h"
#include "base/clock.h"
#include "base/stat_counter.h"
#include "journal/journal_events.h"
#include "journal/log_space.h"

namespace walfs::journal {

LatencySummary Summarize(const Histogram& h) {
  return LatencySummary{h.Count(), h.Mean(), h.Percentile(0.5), h.Percentile(0.99), h.Max()};
}

GrantHead::GrantHead(std::string_view name, LogSpace* log, HeadLockKind lock_kind)
    : log_(log), name_(name), index_(name == "write" ? 1 : 0), lock_(lock_kind) {}

GrantHead::~GrantHead() {
  HeadLockGuard guard(&lock_);
  // Nobody may still sleep on a head that goes away.
  WALFS_CHECK_MSG(waiters_.empty(), "grant head destroyed with waiters queued");
}

std::int64_t GrantHead::FreeBytes() const {
  return log_->FreeBytesGiven(grant_.load(std::memory_order_seq_cst));
}

// Claims `need` bytes if they are free at the instant of the CAS, so that
// concurrent claimers can never grant more than the log holds.
// Gives up as soon as anyone queues, so that a retrying claimer cannot keep
// slipping in front of waiters.
bool GrantHead::TryClaimFast(std::int64_t need) {
  std::int64_t g = grant_.load(std::memory_order_seq_cst);
  while (log_->FreeBytesGiven(g) >= need) {
    if (grant_.compare_exchange_weak(g, g + need, std::memory_order_seq_cst)) return true;
    if (queued_.load(std::memory_order_seq_cst) != 0) return false;
  }
  return false;
}

// As TryClaimFast, but leaves `reserved_ahead` bytes for the waiters queued
// in front of the claimer: a waiter that fits never overtakes one that does
// not (xlog_grant_head_wake stops at the first waiter that does not fit).
bool GrantHead::TryClaimLocked(std::int64_t need, std::int64_t reserved_ahead) {
  std::int64_t g = grant_.load(std::memory_order_seq_cst);
  while (log_->FreeBytesGiven(g) - reserved_ahead >= need) {
    if (grant_.compare_exchange_weak(g, g + need, std::memory_order_seq_cst)) return true;
  }
  return false;
}

std::int64_t GrantHead::NeedAheadOfLocked(const Ticket* tic) {
  std::int64_t ahead = 0;
  for (const Ticket& t : waiters_) {
    if (&t == tic) return ahead;
    ahead += t.need_;
  }
  WALFS_CHECK_MSG(false, "ticket is not queued on this grant head");
  return ahead;
}

Status GrantHead::Grant(Ticket* tic, std::int64_t need) {
  if (log_->IsShutdown()) return Status::Shutdown("log is shut down");

  // Fast path, no lock: nobody is queued and the space is free now.  Safe
  // because the CAS in TryClaimFast claims only space that is free at that
  // instant, and a thread that queues concurrently re-checks the space after
  // it is counted in queued_ (WaitLocked), so it cannot be stranded by us.
  // What the fast path may do is slip in front of a waiter that is queueing at
  // this very moment, the same window as XFS's list_empty_careful().
  if (queued_.load(std::memory_order_seq_cst) == 0 && TryClaimFast(need)) {
    Inc(&counters_.fast_path_hits);
    return Status::Ok();
  }

  WakeQueue wakeq;
  Status status;
  {
    HeadLockGuard guard(&lock_);
    Inc(&counters_.slow_path_entries);
    // Give the waiters ahead of us their chance first: wake those that fit.
    // Only if all of them fit and our own space remains do we take it.
    std::int64_t free = FreeBytes();
    const std::int64_t before = free;
    if (!WakeLocked(&free, &wakeq) || free < need ||
        !TryClaimLocked(need, before - free)) {
      status = WaitLocked(tic, need, &wakeq);
    }
  }
  IssueWakes(&wakeq);
  return status;
}

// Walks the queue in FIFO order, signalling each waiter that fits in *free
// and charging it against *free, until one does not fit.  Returns whether
// every waiter fits.  Caller holds the lock.
bool GrantHead::WakeLocked(std::int64_t* free, WakeQueue* wakeq) {
  if (waiters_.empty()) return true;
  const WakeMode mode = log_->wake_mode();
  Inc(&counters_.wake_passes);
  for (Ticket& t : waiters_) {
    if (*free < t.need_) return false;
    // A waiter we (or someone) woke will take its space when it runs: keep
    // it charged so that the waiters behind it are not woken on credit.
    *free -= t.need_;
    if (mode != WakeMode::kInline && (t.flags_ & kTicketWaking)) {
      Inc(&counters_.duplicate_wakes_avoided);
      continue;
    }
    if (mode != WakeMode::kInline) t.flags_ |= kTicketWaking;
    // In wakeq mode a token already on another wake queue (a wake from a
    // previous wait, not yet flushed) is served by that queue's flush: one
    // permit serves both, so this is not a signal of ours.
    if (mode == WakeMode::kWakeQueue && !wakeq->Add(t.waiter_)) {
      Inc(&counters_.duplicate_wakes_avoided);
      continue;
    }
    if (t.signals_ > 0) Inc(&counters_.duplicate_wakes);
    WALFS_TRACE(kTraceGrantWake, index_, t.tid(), t.need_, static_cast<unsigned>(mode));
    ++t.signals_;
    BumpMax(&counters_.max_signals_per_cycle, t.signals_);
    Inc(&counters_.wakes_issued);
    if (mode != WakeMode::kWakeQueue) SignalNow(t.waiter_);
  }
  return true;
}

// Queues `tic` and sleeps until its space is granted or the log shuts down.
// Drops and retakes the lock around each sleep.  The waiter dequeues itself.
Status GrantHead::WaitLocked(Ticket* tic, std::int64_t need, WakeQueue* wakeq) {
  tic->need_ = need;
  tic->signals_ = 0;
  tic->flags_ &= ~kTicketWaking;
  tic->waiter_ = &WaitToken::Current();
  tic->enqueued_at_ns_ = MonotonicNanos();
  waiters_.push_back(*tic);
  // Counted before the re-check below (seq_cst): a waker that frees space
  // after our check sees queued_ != 0 and takes the lock to wake us.
  BumpMax(&counters_.max_queue_depth, queued_.fetch_add(1, std::memory_order_seq_cst) + 1);

  bool woken = false;
  for (;;) {
    if (log_->IsShutdown()) {
      DequeueLocked(tic);
      return Status::Shutdown("log shut down while waiting for log space");
    }
    // Re-check on every pass, the first included: space may have come back
    // between the caller's check and our enqueue (no lost wakeup at the edge).
    if (TryClaimLocked(need, NeedAheadOfLocked(tic))) {
      const std::int64_t waited = MonotonicNanos() - tic->enqueued_at_ns_;
      if (woken) {
        Inc(&counters_.useful_wakes);
        WALFS_TRACE(kTraceGrantWakeup, index_, tic->tid(), 1, ModeField());
        WALFS_TRACE(kTraceGrantGranted, index_, tic->tid(), need, waited, ModeField());
      }
      grant_wait_ns_.Record(waited);
      DequeueLocked(tic);
      return Status::Ok();
    }
    if (woken) {
      Inc(&counters_.futile_wakes);
      WALFS_TRACE(kTraceGrantWakeup, index_, tic->tid(), 0, ModeField());
    }
    // We have run: the next wake pass may signal us again.
    tic->flags_ &= ~kTicketWaking;
    tic->signals_ = 0;
    Inc(&counters_.sleeps);
    WALFS_TRACE(kTraceGrantSleep, index_, tic->tid(), need, FreeBytes(), waiters_.size(), ModeField());

    lock_.Unlock();
    IssueWakes(wakeq);   // wakes our own wake pass collected, before we sleep
    log_->PushTail();    // ask the tail to move (xfs_ail_push_all)
    tic->waiter_->Wait();
    lock_.Lock();
    woken = true;
  }
}

void GrantHead::DequeueLocked(Ticket* tic) {
  waiters_.erase(waiters_.iterator_to(*tic));
  queued_.fetch_sub(1, std::memory_order_seq_cst);
  tic->flags_ &= ~kTicketWaking;
  tic->signals_ = 0;
  tic->waiter_ = nullptr;
}

unsigned GrantHead::ModeField() const { return static_cast<unsigned>(log_->wake_mode()); }

void GrantHead::SignalNow(WaitToken* token) {
  Inc(lock_.HeldByCurrentThread() ? &counters_.signals_under_lock
                                  : &counters_.signals_after_unlock);
  if (token->Signal()) Inc(&counters_.wake_syscalls);
}

void GrantHead::IssueWakes(WakeQueue* wakeq) {
  if (wakeq->empty()) return;
  const std::size_t n = wakeq->size();
  wake_batch_.Record(static_cast<std::int64_t>(n));
  WALFS_TRACE(kTraceWakeBatch, index_, n, ModeField());
  Inc(lock_.HeldByCurrentThread() ? &counters_.signals_under_lock
                                  : &counters_.signals_after_unlock,
      n);
  Inc(&counters_.wake_syscalls, wakeq->WakeAll());
}

// Callers change space (seq_cst RMW on grant_ or the tail space) before
// calling Wake().  A waiter counts itself in queued_ (seq_cst RMW) before it
// re-checks space.  By the total order of seq_cst operations, either we see
// queued_ != 0 and take the lock, or the waiter's re-check sees our space.
void GrantHead::Wake() {
  if (queued_.load(std::memory_order_seq_cst) == 0) return;
  WakeQueue wakeq;
  {
    HeadLockGuard guard(&lock_);
    std::int64_t free = FreeBytes();
    WakeLocked(&free, &wakeq);
  }
  IssueWakes(&wakeq);
}

void GrantHead::WakeAllForShutdown() {
  WakeQueue wakeq;
  {
    HeadLockGuard guard(&lock_);
    for (Ticket& t : waiters_) wakeq.Add(t.waiter_);
  }
  IssueWakes(&wakeq);
}

GrantHeadStats GrantHead::Stats() const {
  GrantHeadStats s;
  auto ld = [](const auto& a) { return a.load(std::memory_order_relaxed); };
  s.name = name_;
  s.grant_bytes = grant();
  s.free_bytes = FreeBytes();
  s.queued = queued_.load(std::memory_order_relaxed);
  s.fast_path_hits = ld(counters_.fast_path_hits);
  s.slow_path_entries = ld(counters_.slow_path_entries);
  s.sleeps = ld(counters_.sleeps);
  s.wake_passes = ld(counters_.wake_passes);
  s.wakes_issued = ld(counters_.wakes_issued);
  s.wake_syscalls = ld(counters_.wake_syscalls);
  s.duplicate_wakes = ld(counters_.duplicate_wakes);
  s.duplicate_wakes_avoided = ld(counters_.duplicate_wakes_avoided);
  s.useful_wakes = ld(counters_.useful_wakes);
  s.futile_wakes = ld(counters_.futile_wakes);
  s.signals_under_lock = ld(counters_.signals_under_lock);
  s.signals_after_unlock = ld(counters_.signals_after_unlock);
  s.max_signals_per_cycle = ld(counters_.max_signals_per_cycle);
  s.max_queue_depth = ld(counters_.max_queue_depth);
  s.lock_hold = Summarize(lock_.hold_ns());
  s.lock_wait = Summarize(lock_.wait_ns());
  s.grant_wait = Summarize(grant_wait_ns_);
  s.wake_batch = Summarize(wake_batch_);
  return s;
}

void GrantHead::ResetStats() {
  for (auto* c : {&counters_.fast_path_hits, &counters_.slow_path_entries, &counters_.sleeps,
                  &counters_.wake_passes, &counters_.wakes_issued, &counters_.wake_syscalls,
                  &counters_.duplicate_wakes, &counters_.duplicate_wakes_avoided,
                  &counters_.useful_wakes, &counters_.futile_wakes,
                  &counters_.signals_under_lock, &counters_.signals_after_unlock,
                  &counters_.max_signals_per_cycle})
    c->store(0, std::memory_order_relaxed);
  counters_.max_queue_depth.store(0, std::memory_order_relaxed);
  lock_.ResetTimes();
  grant_wait_ns_.Reset();
  wake_batch_.Reset();
}

}  // namespace walfs::journal
