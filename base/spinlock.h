// SpinLock: test-and-test-and-set with a CPU pause, for critical sections of
// a few dozen instructions.
//
// Unlike the kernel's spinlock it cannot disable preemption: if the holder is
// descheduled, everyone behind it spins for the rest of a time slice.  Use it
// only where the holder never blocks or makes syscalls, or where that cost is
// what a benchmark means to show (journal `headlock=spin`).
#pragma once

#include <atomic>

#include "base/cpu.h"
#include "base/thread_annotations.h"

namespace walfs {

class CAPABILITY("mutex") SpinLock {
 public:
  SpinLock() = default;
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  void Lock() ACQUIRE() {
    for (;;) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      // Spin on a plain load so the line stays shared until it is released.
      while (locked_.load(std::memory_order_relaxed)) CpuRelax();
    }
  }
  bool TryLock() TRY_ACQUIRE(true) {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void Unlock() RELEASE() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace walfs
