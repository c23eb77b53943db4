// Helpers for log-space tests: a thread that reserves in the background, and
// polling with a deadline instead of sleeps that guess.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "journal/log_space.h"

namespace walfs::journal::testing {

// Polls `pred` until it holds or `timeout` passes; returns whether it held.
inline bool Eventually(const std::function<bool()>& pred,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

inline std::unique_ptr<LogSpace> MakeSpace(std::int64_t log_bytes,
                                           WakeMode mode = WakeMode::kWakeQueue,
                                           HeadLockKind lock = HeadLockKind::kMutex) {
  auto space = LogSpace::Create({.log_bytes = log_bytes, .wake_mode = mode, .head_lock = lock});
  EXPECT_TRUE(space.ok()) << space.status().ToString();
  return std::move(space).value();
}

// Runs Reserve() on its own thread; the result is read after done().
class BackgroundReserve {
 public:
  BackgroundReserve(LogSpace* space, std::int32_t unit, std::int32_t cnt = 1,
                    bool permanent = false,
                    std::function<void()> before = nullptr)
      : space_(space),
        thread_([=, this] {
          if (before) before();
          token_.store(&WaitToken::Current());
          Result<TicketRef> r = space->Reserve(unit, cnt, permanent);
          if (r.ok()) ticket_ = *r;
          status_ = r.status();
          done_.store(true);
        }) {}
  // A test that fails early must not hang on a waiter that never wakes.
  ~BackgroundReserve() {
    if (!done()) space_->Shutdown();
    Join();
  }

  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  bool done() const { return done_.load(); }
  const Status& status() const { return status_; }
  TicketRef ticket() const { return ticket_; }

 private:
  LogSpace* const space_;
  std::atomic<bool> done_{false};
  std::atomic<WaitToken*> token_{nullptr};
  Status status_;
  TicketRef ticket_;
  std::thread thread_;
};

}  // namespace walfs::journal::testing
