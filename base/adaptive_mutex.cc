#include "base/adaptive_mutex.h"

#include "base/cpu.h"
#include "base/futex.h"

namespace walfs {

namespace {
// A few microseconds of spinning (PAUSE is ~25-140 cycles depending on the
// core): longer than a grant-head critical section, about one futex
// sleep/wake round trip.
constexpr int kSpinIterations = 100;
}  // namespace

void AdaptiveMutex::LockSlow() {
  for (int i = 0; i < kSpinIterations; ++i) {
    std::uint32_t s = state_.load(std::memory_order_relaxed);
    if (s == kUnlocked) {
      if (state_.compare_exchange_weak(s, kLocked, std::memory_order_acquire,
                                       std::memory_order_relaxed))
        return;
    } else if (s == kContended) {
      break;  // others already sleep: queue behind them rather than spin
    }
    CpuRelax();
  }
  // Mark the lock contended; whoever holds it will wake one sleeper.  We
  // cannot know whether other sleepers remain, so we keep kContended when we
  // take it (a spurious FUTEX_WAKE at worst).
  while (state_.exchange(kContended, std::memory_order_acquire) != kUnlocked)
    FutexWait(&state_, kContended);
}

void AdaptiveMutex::WakeOne() { FutexWake(&state_, 1); }

}  // namespace walfs
