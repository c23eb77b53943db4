#include "base/wake_queue.h"

#include <cstdint>

#include "base/check.h"

namespace walfs {

namespace {
// Marks the last token on a queue, so that wake_next_ == nullptr means "on no
// queue" (the kernel's WAKE_Q_TAIL).
WaitToken* const kTail = reinterpret_cast<WaitToken*>(uintptr_t{1});
}  // namespace

WakeQueue::~WakeQueue() {
  WALFS_CHECK_MSG(size_ == 0, "WakeQueue destroyed with wakes not issued");
}

bool WakeQueue::Add(WaitToken* token) {
  // Claim the token's link atomically: two wakers racing for one token (on
  // two grant heads, say) must not both link it.
  WaitToken* expected = nullptr;
  if (!token->wake_next_.compare_exchange_strong(expected, kTail,
                                                 std::memory_order_acq_rel))
    return false;
  token->Ref();
  if (last_ == nullptr)
    head_ = token;
  else
    last_->wake_next_.store(token, std::memory_order_relaxed);
  last_ = token;
  ++size_;
  return true;
}

std::size_t WakeQueue::WakeAll() {
  std::size_t syscalls = 0;
  WaitToken* t = head_;
  while (t != nullptr && t != kTail) {
    WaitToken* next = t->wake_next_.load(std::memory_order_relaxed);
    // Unlink before the signal: once signalled the owner may be queued again,
    // and that new wake must not be swallowed by this old link.
    t->wake_next_.store(nullptr, std::memory_order_release);
    if (t->Signal()) ++syscalls;
    t->Unref();
    t = next;
  }
  head_ = nullptr;
  last_ = nullptr;
  size_ = 0;
  return syscalls;
}

}  // namespace walfs
