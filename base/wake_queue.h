// WakeQueue: wake-ups collected under a lock and issued after it is dropped,
// after the kernel's wake_q (include/linux/sched/wake_q.h).
//
//   WakeQueue wakeq;                      // on the waker's stack
//   { lock; ... wakeq.Add(&waiter_token); ... unlock; }
//   wakeq.WakeAll();                      // signals outside the lock
//
// Contract (STYLE.md rule 13):
//  - A token is on at most one queue at a time.  Add() returns false when
//    the token is already queued somewhere: that queue's pending wake will
//    serve this one too, so nothing is lost.
//  - The queue holds a reference on each token, so the token outlives the
//    wake even if its thread has moved on or exited.
//  - The link is cleared before the signal is sent, so the owner may be
//    queued again (by anyone) as soon as it is signalled.
//  - A wake may therefore arrive after the owner already found its
//    condition true by itself: a spurious wake, which WaitToken allows.
//  - WakeAll() must run before the queue is destroyed.
#pragma once

#include <cstddef>

#include "base/wait_token.h"

namespace walfs {

class WakeQueue {
 public:
  WakeQueue() = default;
  ~WakeQueue();
  WakeQueue(const WakeQueue&) = delete;
  WakeQueue& operator=(const WakeQueue&) = delete;

  // Queues `token` for a wake.  False if it is already on a queue.
  bool Add(WaitToken* token);
  // Signals every queued token in FIFO order and empties the queue.  Returns
  // how many signals needed a futex wake (their owner was asleep).
  std::size_t WakeAll();

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  WaitToken* head_ = nullptr;
  WaitToken* last_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace walfs
