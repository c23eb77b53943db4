// HeadLock: the lock of one grant head, its algorithm chosen when the log is
// set up (`headlock=spin|mutex`), with the owner and the hold/wait times
// recorded for the counters.
//
// Why a choice: the kernel's spinlock disables preemption, a userspace one
// cannot.  Under oversubscription a preempted holder of a spinlock leaves its
// successors spinning for a whole time slice; with a futex wake inside the
// critical section (wake=inline) that happens constantly.  `mutex` (the
// default) spins briefly and then sleeps.  See docs/reservation.md.
#pragma once

#include <atomic>
#include <cstdint>

#include "base/adaptive_mutex.h"
#include "base/clock.h"
#include "base/histogram.h"
#include "base/spinlock.h"
#include "base/thread_annotations.h"
#include "journal/wake_mode.h"

namespace walfs::journal {

class CAPABILITY("mutex") HeadLock {
 public:
  explicit HeadLock(HeadLockKind kind) : kind_(kind) {}
  HeadLock(const HeadLock&) = delete;
  HeadLock& operator=(const HeadLock&) = delete;

  // The analysis cannot see through the run-time choice of lock; the
  // annotations on the declarations are what callers are checked against.
  void Lock() ACQUIRE() NO_THREAD_SAFETY_ANALYSIS {
    const std::int64_t t0 = MonotonicNanos();
    if (kind_ == HeadLockKind::kSpin)
      spin_.Lock();
    else
      mutex_.Lock();
    acquired_at_ = MonotonicNanos();
    waited_ns_ = acquired_at_ - t0;
    owner_.store(ThreadId(), std::memory_order_relaxed);
  }

  // The histograms are updated after the lock is dropped, so that recording
  // the statistics does not lengthen the critical section they measure.
  void Unlock() RELEASE() NO_THREAD_SAFETY_ANALYSIS {
    owner_.store(0, std::memory_order_relaxed);
    const std::int64_t held = MonotonicNanos() - acquired_at_;
    const std::int64_t waited = waited_ns_;
    if (kind_ == HeadLockKind::kSpin)
      spin_.Unlock();
    else
      mutex_.Unlock();
    hold_ns_.Record(held);
    wait_ns_.Record(waited);
  }

  // True when the calling thread holds the lock.  Used to count (and let
  // tests check) where signals are issued from.
  bool HeldByCurrentThread() const {
    return owner_.load(std::memory_order_relaxed) == ThreadId();
  }

  HeadLockKind kind() const { return kind_; }
  const Histogram& hold_ns() const { return hold_ns_; }
  const Histogram& wait_ns() const { return wait_ns_; }
  void ResetTimes() {
    hold_ns_.Reset();
    wait_ns_.Reset();
  }

 private:
  // A per-thread address: unique among live threads, never 0.
  static std::uintptr_t ThreadId() {
    static thread_local char marker;
    return reinterpret_cast<std::uintptr_t>(&marker);
  }

  const HeadLockKind kind_;
  SpinLock spin_;
  AdaptiveMutex mutex_;
  std::int64_t acquired_at_ = 0;  // written and read only by the holder
  std::int64_t waited_ns_ = 0;    // likewise
  std::atomic<std::uintptr_t> owner_{0};
  Histogram hold_ns_;
  Histogram wait_ns_;
};

class SCOPED_CAPABILITY HeadLockGuard {
 public:
  explicit HeadLockGuard(HeadLock* lock) ACQUIRE(lock) : lock_(lock) { lock_->Lock(); }
  ~HeadLockGuard() RELEASE() { lock_->Unlock(); }
  HeadLockGuard(const HeadLockGuard&) = delete;
  HeadLockGuard& operator=(const HeadLockGuard&) = delete;

 private:
  HeadLock* const lock_;
};

}  // namespace walfs::journal
