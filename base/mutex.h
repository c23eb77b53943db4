// Mutex: std::mutex with clang thread-safety annotations (LevelDB's
// port::Mutex, Abseil's Mutex).  Write the lock order on each declaration:
//
//   // Lock order: Log::mu_ before GrantHead::lock_.
//   Mutex mu_;
//   int64_t counter_ GUARDED_BY(mu_);
//
//   void Foo() EXCLUDES(mu_) { MutexLock l(&mu_); ++counter_; }
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "base/check.h"
#include "base/thread_annotations.h"

namespace walfs {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Documents (and tells the analysis) that the caller holds the lock.
  void AssertHeld() ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable used with one Mutex, which every Wait() names (as
// Abseil's CondVar does, so that the analysis can check the caller holds
// it).  Waits may wake spuriously: every wait is a loop that re-checks its
// condition (STYLE.md rule 12).
//
//   MutexLock l(&mu_);
//   while (queue_.empty()) cv_.Wait(&mu_);
class CondVar {
 public:
  CondVar() = default;
  explicit CondVar(Mutex* mu) : mu_(mu) {}
  void Wait(Mutex* mu) REQUIRES(mu) {
    // Always the same mutex: a condition variable is bound to one.
    WALFS_CHECK_MSG(mu_ == nullptr || mu_ == mu, "CondVar waited on with another mutex");
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // As Wait(), giving up after timeout_ns; false on timeout.
  bool WaitFor(Mutex* mu, std::int64_t timeout_ns) REQUIRES(mu) {
    WALFS_CHECK_MSG(mu_ == nullptr || mu_ == mu, "CondVar waited on with another mutex");
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool signalled =
        cv_.wait_for(lock, std::chrono::nanoseconds(timeout_ns)) == std::cv_status::no_timeout;
    lock.release();
    return signalled;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  Mutex* const mu_ = nullptr;  // for the check above, when given
  std::condition_variable cv_;
};

}  // namespace walfs
