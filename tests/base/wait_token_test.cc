#include "base/wait_token.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace walfs {
namespace {

TEST(WaitToken, SignalBeforeWaitIsNotLost) {
  WaitToken& self = WaitToken::Current();
  EXPECT_FALSE(self.Signal());  // nobody sleeps: no syscall
  EXPECT_TRUE(self.HasPermit());
  self.Wait();                  // returns at once, consuming the permit
  EXPECT_FALSE(self.HasPermit());
}

TEST(WaitToken, PermitsDoNotAccumulate) {
  WaitToken& self = WaitToken::Current();
  self.Signal();
  self.Signal();
  self.Wait();
  EXPECT_FALSE(self.WaitFor(1'000'000));  // the second signal left nothing
}

TEST(WaitToken, WaitForTimesOutWithoutASignal) {
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(WaitToken::Current().WaitFor(5'000'000));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(4));
}

TEST(WaitToken, WakesASleepingThread) {
  std::atomic<WaitToken*> token{nullptr};
  std::atomic<bool> done{false};
  std::thread sleeper([&] {
    token.store(&WaitToken::Current());
    WaitToken::Current().Wait();
    done.store(true);
  });
  while (token.load() == nullptr) std::this_thread::yield();
  token.load()->Ref();  // keep it alive whatever the sleeper does
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(done.load());
  token.load()->Signal();
  sleeper.join();
  EXPECT_TRUE(done.load());
  token.load()->Unref();
}

// Ping-pong between two threads many times: every Signal must be seen by the
// Wait that it is meant for, or the exchange deadlocks.
TEST(WaitToken, NoLostWakeupInPingPong) {
  constexpr int kRounds = 20000;
  std::atomic<WaitToken*> a{nullptr}, b{nullptr};
  std::atomic<int> turn{0};
  // Each side holds a reference on the other's token: the last Signal() may
  // land after its target thread has finished.
  std::thread ta([&] {
    WaitToken::Current().Ref();
    a.store(&WaitToken::Current());
    while (b.load() == nullptr) std::this_thread::yield();
    for (int i = 0; i < kRounds; ++i) {
      while (turn.load() != 2 * i) WaitToken::Current().Wait();
      turn.store(2 * i + 1);
      b.load()->Signal();
    }
  });
  std::thread tb([&] {
    WaitToken::Current().Ref();
    b.store(&WaitToken::Current());
    while (a.load() == nullptr) std::this_thread::yield();
    for (int i = 0; i < kRounds; ++i) {
      while (turn.load() != 2 * i + 1) WaitToken::Current().Wait();
      turn.store(2 * i + 2);
      a.load()->Signal();
    }
  });
  ta.join();
  tb.join();
  EXPECT_EQ(turn.load(), 2 * kRounds);
  a.load()->Unref();
  b.load()->Unref();
}

TEST(WaitToken, ReferenceOutlivesItsThread) {
  WaitToken* t = nullptr;
  std::thread([&] {
    t = &WaitToken::Current();
    t->Ref();
  }).join();
  // The thread is gone; our reference keeps the token valid.
  t->Signal();
  EXPECT_TRUE(t->HasPermit());
  t->Unref();
}

}  // namespace
}  // namespace walfs
