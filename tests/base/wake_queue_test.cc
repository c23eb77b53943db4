#include "base/wake_queue.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace walfs {
namespace {

TEST(WakeQueue, SignalsEveryQueuedTokenOnFlush) {
  WaitToken& self = WaitToken::Current();
  WakeQueue q;
  EXPECT_TRUE(q.Add(&self));
  EXPECT_FALSE(self.HasPermit());  // nothing is signalled before the flush
  q.WakeAll();
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(self.HasPermit());
  self.Wait();
}

TEST(WakeQueue, ATokenIsOnAtMostOneQueue) {
  WaitToken& self = WaitToken::Current();
  WakeQueue q1, q2;
  EXPECT_TRUE(q1.Add(&self));
  EXPECT_FALSE(q1.Add(&self));
  EXPECT_FALSE(q2.Add(&self));  // q1's pending wake serves q2's too
  EXPECT_EQ(q1.size() + q2.size(), 1u);
  q1.WakeAll();
  // Once flushed it may be queued again.
  EXPECT_TRUE(q2.Add(&self));
  q2.WakeAll();
  self.Wait();
}

TEST(WakeQueue, HoldsAReferenceAcrossItsOwnersExit) {
  WakeQueue q;
  std::thread([&] { EXPECT_TRUE(q.Add(&WaitToken::Current())); }).join();
  // The owner thread exited; the queue's reference keeps the token alive
  // (ASan reports a use-after-free otherwise).
  q.WakeAll();
}

TEST(WakeQueue, ReportsSyscallsOnlyForSleepers) {
  std::atomic<WaitToken*> token{nullptr};
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    token.store(&WaitToken::Current());
    WaitToken::Current().Wait();
    woke.store(true);
  });
  while (token.load() == nullptr) std::this_thread::yield();
  token.load()->Ref();
  while (!woke.load()) {
    WakeQueue q;
    q.Add(token.load());
    q.WakeAll();
    std::this_thread::yield();
  }
  sleeper.join();
  token.load()->Unref();
  WakeQueue q;
  q.Add(&WaitToken::Current());
  EXPECT_EQ(q.WakeAll(), 0u);  // we are awake: no futex wake needed
  WaitToken::Current().Wait();
}

TEST(WakeQueueDeathTest, DestroyingWithPendingWakesAborts) {
  EXPECT_DEATH(
      {
        WakeQueue q;
        q.Add(&WaitToken::Current());
      },
      "wakes not issued");
}

}  // namespace
}  // namespace walfs
