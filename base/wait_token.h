// WaitToken: a thread's sticky wake-up permit on a futex, the userspace
// counterpart of the kernel's `wake_up_process()` target.
//
// Every thread owns one token, WaitToken::Current().  A sleeper follows the
// kernel's set_current_state() pattern: publish itself (e.g. enqueue its
// ticket with its token), drop its lock, then Wait().  A waker calls
// Signal() on the sleeper's token.  The permit is sticky: a Signal() that
// lands before the Wait() makes the Wait() return at once, so a wake issued
// between "enqueue" and "sleep" is never lost.
//
// Spurious returns are allowed and expected: a permit left over from an
// earlier wake cycle, or a wake issued just after the sleeper found its
// condition true by itself, makes one later Wait() return early.  Callers
// always wait in a loop that re-checks their condition (STYLE.md rule 12).
//
// Tokens are reference counted so that a WakeQueue can hold one across the
// moment its owner thread might exit (wake_q holds a task reference for the
// same reason).  The thread's own reference is dropped at thread exit.
#pragma once

#include <atomic>
#include <cstdint>

#include <boost/smart_ptr/intrusive_ptr.hpp>

namespace walfs {

class WakeQueue;

class WaitToken {
 public:
  // The calling thread's token (created on first use).
  static WaitToken& Current();

  WaitToken() = default;
  WaitToken(const WaitToken&) = delete;
  WaitToken& operator=(const WaitToken&) = delete;

  // Blocks until a permit is available, then consumes it.
  void Wait();
  // As Wait(), giving up after timeout_ns; returns whether a permit was taken.
  bool WaitFor(std::int64_t timeout_ns);

  // Makes a permit available and wakes the owner if it sleeps.  Returns true
  // when a futex wake syscall was needed (the owner was asleep).
  bool Signal();

  // Whether a permit is pending (for tests and assertions).
  bool HasPermit() const { return state_.load(std::memory_order_acquire) == kNotified; }

  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 private:
  friend class WakeQueue;
  ~WaitToken() = default;

  static constexpr std::uint32_t kEmpty = 0;
  static constexpr std::uint32_t kNotified = 1;
  static constexpr std::uint32_t kParked = 0xffffffffu;  // kEmpty - 1

  std::atomic<std::uint32_t> state_{kEmpty};
  std::atomic<std::uint32_t> refs_{1};
  // WakeQueue link.  nullptr: on no queue.  WakeQueue::kTail: last on one.
  std::atomic<WaitToken*> wake_next_{nullptr};
};

inline void intrusive_ptr_add_ref(WaitToken* t) { t->Ref(); }
inline void intrusive_ptr_release(WaitToken* t) { t->Unref(); }
using WaitTokenRef = boost::intrusive_ptr<WaitToken>;

}  // namespace walfs
