#include "base/wait_token.h"

#include "base/clock.h"
#include "base/futex.h"

namespace walfs {

namespace {
// Holds the thread's reference; a WakeQueue may hold another past exit.
struct TokenHolder {
  WaitToken* token = new WaitToken;
  ~TokenHolder() { token->Unref(); }
};
thread_local TokenHolder tls_token;
}  // namespace

WaitToken& WaitToken::Current() { return *tls_token.token; }

// The state moves kEmpty -> kParked (Wait) -> kNotified (Signal) -> kEmpty
// (Wait consumes).  fetch_sub(1) turns kNotified into kEmpty (permit taken,
// no sleep) or kEmpty into kParked (going to sleep) in one step.
void WaitToken::Wait() {
  if (state_.fetch_sub(1, std::memory_order_acquire) == kNotified) return;
  for (;;) {
    FutexWait(&state_, kParked);
    std::uint32_t expected = kNotified;
    if (state_.compare_exchange_strong(expected, kEmpty, std::memory_order_acquire,
                                       std::memory_order_relaxed))
      return;
    // Woken without a permit (EINTR, a stale futex wake): sleep again.
  }
}

bool WaitToken::WaitFor(std::int64_t timeout_ns) {
  if (state_.fetch_sub(1, std::memory_order_acquire) == kNotified) return true;
  const std::int64_t deadline = MonotonicNanos() + timeout_ns;
  for (;;) {
    const std::int64_t left = deadline - MonotonicNanos();
    if (left > 0) FutexWait(&state_, kParked, left);
    std::uint32_t expected = kNotified;
    if (state_.compare_exchange_strong(expected, kEmpty, std::memory_order_acquire,
                                       std::memory_order_relaxed))
      return true;
    if (left <= 0) {
      // Timed out: leave kParked unless a Signal() raced in just now.
      expected = kParked;
      if (state_.compare_exchange_strong(expected, kEmpty, std::memory_order_relaxed))
        return false;
      state_.store(kEmpty, std::memory_order_relaxed);  // it was kNotified
      std::atomic_thread_fence(std::memory_order_acquire);
      return true;
    }
  }
}

bool WaitToken::Signal() {
  if (state_.exchange(kNotified, std::memory_order_release) == kParked) {
    FutexWake(&state_, 1);
    return true;
  }
  return false;
}

}  // namespace walfs
