// AdaptiveMutex: spins briefly, then sleeps on a futex (Drepper, "Futexes
// Are Tricky", mutex #3, with a bounded spin in front).
//
// In userspace this is the closest thing to the kernel's spinlock-with-
// preemption-disabled: a short critical section is taken without a syscall,
// and if the holder is preempted its successors sleep instead of burning the
// CPU the holder needs to finish.
#pragma once

#include <atomic>
#include <cstdint>

#include "base/thread_annotations.h"

namespace walfs {

class CAPABILITY("mutex") AdaptiveMutex {
 public:
  AdaptiveMutex() = default;
  AdaptiveMutex(const AdaptiveMutex&) = delete;
  AdaptiveMutex& operator=(const AdaptiveMutex&) = delete;

  void Lock() ACQUIRE() {
    std::uint32_t expected = kUnlocked;
    if (state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                       std::memory_order_relaxed))
      return;
    LockSlow();
  }
  bool TryLock() TRY_ACQUIRE(true) {
    std::uint32_t expected = kUnlocked;
    return state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }
  void Unlock() RELEASE() {
    if (state_.exchange(kUnlocked, std::memory_order_release) == kContended) WakeOne();
  }

 private:
  static constexpr std::uint32_t kUnlocked = 0;
  static constexpr std::uint32_t kLocked = 1;      // held, nobody sleeps
  static constexpr std::uint32_t kContended = 2;   // held, sleepers may exist

  void LockSlow();
  void WakeOne();

  std::atomic<std::uint32_t> state_{kUnlocked};
};

}  // namespace walfs
