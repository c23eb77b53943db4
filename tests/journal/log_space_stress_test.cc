// Randomized many-thread stress of log-space reservation with a concurrent
// tail mover, in every wake mode and with both head locks.  Catches lost
// wakeups (a waiter asleep while its space is free and nothing else moves:
// the run stalls and the watchdog fails it) and accounting leaks (after
// quiesce both grant heads must be back at zero, as xfstests xfs/011 checks).
#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "journal/log_space.h"
#include "tests/journal/space_test_util.h"

namespace walfs::journal {
namespace {

struct StressParam {
  WakeMode mode;
  HeadLockKind lock;
};

class LogSpaceStress : public ::testing::TestWithParam<StressParam> {};

TEST_P(LogSpaceStress, NoLostWakeupsAndGrantHeadsReturnToZero) {
  constexpr int kThreads = 12;
  constexpr int kTransactionsPerThread = 300;
  constexpr std::int32_t kUnit = 1000;
  auto space = testing::MakeSpace(8 * kUnit, GetParam().mode, GetParam().lock);

  std::atomic<std::int64_t> written{0};   // consumed, not yet returned
  std::atomic<int> finished{0};
  std::atomic<bool> stop_mover{false};
  std::atomic<std::uint64_t> progress{0};

  // The tail mover: hands written bytes to the "AIL", then moves the tail by
  // a random part of the tail space.  It only acts when there is something
  // to move, so it never papers over a lost wakeup with a stray wake.
  std::thread mover([&] {
    std::mt19937 rng(1);
    while (!stop_mover.load()) {
      const std::int64_t w = written.exchange(0);
      if (w > 0) space->ReturnSpace(w);
      const std::int64_t tail = space->tail_space();
      if (tail > 0) space->MoveTail(std::uniform_int_distribution<std::int64_t>(1, tail)(rng));
      if (rng() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
      else std::this_thread::yield();
    }
  });

  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      for (int i = 0; i < kTransactionsPerThread; ++i) {
        const bool perm = rng() % 3 != 0;
        const std::int32_t cnt = perm ? 1 + static_cast<std::int32_t>(rng() % 3) : 1;
        const std::int32_t unit = kUnit / 2 + static_cast<std::int32_t>(rng() % (kUnit / 2));
        Result<TicketRef> r = space->Reserve(unit, cnt, perm);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        Ticket* tic = r->get();
        const int steps = perm ? 1 + static_cast<int>(rng() % 4) : 1;
        for (int s = 0; s < steps; ++s) {
          const auto used = static_cast<std::int32_t>(rng() % tic->curr_res());
          ASSERT_TRUE(tic->Consume(used));
          written.fetch_add(used);
          if (s + 1 == steps) {
            space->TicketUngrant(tic);
          } else {
            space->TicketRegrant(tic);
            ASSERT_TRUE(space->Regrant(tic).ok());
          }
        }
        progress.fetch_add(1);
      }
      finished.fetch_add(1);
    });
  }

  // Watchdog: fail (and shut the log down so threads exit) if no transaction
  // completes for 20 s.
  std::uint64_t last = 0;
  auto last_change = std::chrono::steady_clock::now();
  bool stalled = false;
  while (finished.load() < kThreads) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const std::uint64_t p = progress.load();
    if (p != last) {
      last = p;
      last_change = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - last_change > std::chrono::seconds(20)) {
      stalled = true;
      break;
    }
  }
  if (stalled) {
    const LogSpaceStats s = space->Stats();
    ADD_FAILURE() << "stalled: reserve grant " << s.reserve_head.grant_bytes << " queued "
                  << s.reserve_head.queued << ", write grant " << s.write_head.grant_bytes
                  << " queued " << s.write_head.queued << ", tail space " << s.tail_space;
    space->Shutdown();
  }
  for (auto& w : workers) w.join();
  stop_mover.store(true);
  mover.join();
  if (stalled) return;

  // Quiesce: return what is still written, move the tail to the head.
  space->ReturnSpace(written.exchange(0));
  space->MoveTail(space->tail_space());
  const LogSpaceStats s = space->Stats();
  EXPECT_EQ(s.reserve_head.grant_bytes, 0);
  EXPECT_EQ(s.write_head.grant_bytes, 0);
  EXPECT_EQ(s.tail_space, 0);
  EXPECT_EQ(s.live_tickets, 0);
  EXPECT_EQ(s.reserve_head.queued + s.write_head.queued, 0);
  if (GetParam().mode != WakeMode::kInline) {
    EXPECT_LE(s.reserve_head.max_signals_per_cycle, 1u);
    EXPECT_LE(s.write_head.max_signals_per_cycle, 1u);
  }
  if (GetParam().mode == WakeMode::kWakeQueue) {
    EXPECT_EQ(s.reserve_head.signals_under_lock + s.write_head.signals_under_lock, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllModes, LogSpaceStress,
    ::testing::Values(StressParam{WakeMode::kInline, HeadLockKind::kMutex},
                      StressParam{WakeMode::kWaking, HeadLockKind::kMutex},
                      StressParam{WakeMode::kWakeQueue, HeadLockKind::kMutex},
                      StressParam{WakeMode::kInline, HeadLockKind::kSpin},
                      StressParam{WakeMode::kWaking, HeadLockKind::kSpin},
                      StressParam{WakeMode::kWakeQueue, HeadLockKind::kSpin}),
    // Not named `info`: the macro's generator function has a parameter of
    // that name, which the lambda's would shadow (-Wshadow).
    [](const auto& test_info) {
      return std::string(WakeModeName(test_info.param.mode)) + "_" +
             std::string(HeadLockKindName(test_info.param.lock));
    });

}  // namespace
}  // namespace walfs::journal
