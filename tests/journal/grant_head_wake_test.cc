// Specs of the three wake modes: who is signalled, how often, and from
// where.  The waiter runs SCHED_IDLE on the waker's CPU, so that it cannot run
// between the waker's passes: a wake cycle is then exactly the span of the
// test thread's loop.
#include <pthread.h>
#include <sched.h>

#include <gtest/gtest.h>

#include "journal/log_space.h"
#include "tests/journal/space_test_util.h"

namespace walfs::journal {
namespace {

using testing::BackgroundReserve;
using testing::Eventually;
using testing::MakeSpace;

bool PinToCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

struct PassResult {
  GrantHeadStats head;
};

// One waiter for 500 bytes sleeps; the holder of the whole log ungrants (one
// wake pass) and the test makes `extra_passes` more before the waiter runs.
PassResult RunWakeCycle(WakeMode mode, int extra_passes) {
  const int cpu = sched_getcpu();
  if (!PinToCpu(cpu)) return {};
  auto space = MakeSpace(1000, mode);
  TicketRef hold = *space->Reserve(1000, 1, false);
  BackgroundReserve waiter(space.get(), 500, 1, false, [cpu] {
    PinToCpu(cpu);
    sched_param p{};
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &p);
  });
  EXPECT_TRUE(Eventually([&] { return space->reserve_head().Stats().sleeps == 1; }));
  space->TicketUngrant(hold.get());  // first wake pass
  for (int i = 0; i < extra_passes; ++i) space->SpaceWake();
  PassResult r{space->reserve_head().Stats()};
  waiter.Join();  // lets the waiter run
  EXPECT_TRUE(waiter.status().ok());
  space->TicketUngrant(waiter.ticket().get());
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int c = 0; c < CPU_SETSIZE; ++c) CPU_SET(c, &all);
  pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
  return r;
}

TEST(GrantHeadWake, InlineSignalsAWaiterOnEveryPassUntilItRuns) {
  PassResult r = RunWakeCycle(WakeMode::kInline, 9);
  if (r.head.name.empty()) GTEST_SKIP() << "cannot pin threads to one CPU here";
  EXPECT_EQ(r.head.wakes_issued, 10u);
  EXPECT_EQ(r.head.duplicate_wakes, 9u);
  EXPECT_EQ(r.head.max_signals_per_cycle, 10u);
  EXPECT_EQ(r.head.signals_under_lock, 10u);
}

TEST(GrantHeadWake, WakingSignalsAWaiterOncePerCycle) {
  PassResult r = RunWakeCycle(WakeMode::kWaking, 9);
  if (r.head.name.empty()) GTEST_SKIP() << "cannot pin threads to one CPU here";
  EXPECT_EQ(r.head.wakes_issued, 1u);
  EXPECT_EQ(r.head.duplicate_wakes, 0u);
  EXPECT_EQ(r.head.duplicate_wakes_avoided, 9u);
  EXPECT_EQ(r.head.max_signals_per_cycle, 1u);
  EXPECT_EQ(r.head.signals_under_lock, 1u);
}

TEST(GrantHeadWake, WakeQueueSignalsOncePerCycleAndNeverUnderTheLock) {
  PassResult r = RunWakeCycle(WakeMode::kWakeQueue, 9);
  if (r.head.name.empty()) GTEST_SKIP() << "cannot pin threads to one CPU here";
  EXPECT_EQ(r.head.wakes_issued, 1u);
  EXPECT_EQ(r.head.duplicate_wakes_avoided, 9u);
  EXPECT_EQ(r.head.max_signals_per_cycle, 1u);
  EXPECT_EQ(r.head.signals_under_lock, 0u);
  EXPECT_EQ(r.head.signals_after_unlock, 1u);
  EXPECT_EQ(r.head.wake_batch.count, 1u);
}

// A wake pass stops at the first waiter that does not fit, and charges each
// woken waiter's need so the ones behind are not woken on credit.
TEST(GrantHeadWake, APassWakesOnlyTheWaitersThatFitInOrder) {
  for (WakeMode mode : kAllWakeModes) {
    auto space = MakeSpace(1000, mode);
    TicketRef hold = *space->Reserve(1000, 1, false);
    std::vector<std::unique_ptr<BackgroundReserve>> w;
    for (int need : {300, 300, 300, 300}) {
      w.push_back(std::make_unique<BackgroundReserve>(space.get(), need));
      const auto n = static_cast<std::int64_t>(w.size());
      ASSERT_TRUE(Eventually([&] { return space->reserve_head().Stats().queued == n; }));
    }
    space->TicketUngrant(hold.get());  // 1000 free: three of four fit
    for (int i = 0; i < 3; ++i) w[i]->Join();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_FALSE(w[3]->done()) << WakeModeName(mode);
    EXPECT_EQ(space->reserve_head().Stats().queued, 1);
    for (int i = 0; i < 3; ++i) space->TicketUngrant(w[i]->ticket().get());
    w[3]->Join();
    space->TicketUngrant(w[3]->ticket().get());
    EXPECT_EQ(space->reserve_head().grant(), 0);
  }
}

}  // namespace
}  // namespace walfs::journal
