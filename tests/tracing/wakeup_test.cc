// Specs of how a blocked trace_pipe reader is woken: deferred (one writer
// syscall per period, delivery after the delay), immediate, the watermark,
// interruption, and no lost wakeup under stress.
#include <time.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "tracing/reader.h"
#include "tracing/tracer.h"

namespace walfs::tracing {
namespace {

WALFS_TRACE_EVENT(kTick, "test_wakeup", "tick", EventKind::kInstant, {"seq"});

std::int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

class WakeupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Tracer::Get().ResetForTesting();
    ASSERT_TRUE(Catalogue::Get().SetSubsystemEnabled("test_wakeup", true).ok());
  }
  void TearDown() override { Tracer::Get().ResetForTesting(); }

  static void SetOptions(WakeupMode mode, std::uint32_t delay_us, std::uint32_t percent,
                         std::uint32_t kb = 256) {
    TracerOptions o;
    o.wakeup = mode;
    o.wakeup_delay_us = delay_us;
    o.buffer_percent = percent;
    o.buffer_size_kb = kb;
    ASSERT_TRUE(Tracer::Get().SetOptions(o).ok());
  }

  // Starts a reader blocked in Read(); returns when it is asleep.
  struct BlockedReader {
    std::thread thread;
    std::atomic<std::int64_t> woke_at{0};
    std::atomic<std::size_t> got{0};
    std::atomic<bool> would_block{false};
    std::atomic<std::int64_t> cpu_ns{0};
    void Start() {
      const std::uint64_t sleeps = Tracer::Get().Stats().reader_sleeps;
      thread = std::thread([this] {
        TraceReader reader(&Tracer::Get());
        const std::int64_t cpu0 = ThreadCpuNs();
        auto r = reader.Read(1 << 16, -1);
        woke_at.store(MonotonicNanos());
        cpu_ns.store(ThreadCpuNs() - cpu0);
        if (r.ok()) got.store(r->size());
        else would_block.store(true);
      });
      while (Tracer::Get().Stats().reader_sleeps == sleeps)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // into the futex wait
    }
  };
};

TEST_F(WakeupTest, NonBlockingReadOfNothingIsWouldBlock) {
  TraceReader reader(&Tracer::Get());
  auto r = reader.Read(10, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToErrno(), EAGAIN);
}

TEST_F(WakeupTest, DeferredWakeupArrivesAfterTheDelayWithOneWriterSyscall) {
  SetOptions(WakeupMode::kDeferred, 20000, 0);  // 20 ms
  BlockedReader reader;
  reader.Start();
  const std::int64_t t0 = MonotonicNanos();
  for (int i = 0; i < 1000; ++i) WALFS_TRACE(kTick, i);  // a burst within the period
  reader.thread.join();
  const std::int64_t waited = reader.woke_at.load() - t0;
  EXPECT_GE(waited, 19'000'000);
  EXPECT_LE(waited, 20'000'000 + 200'000'000);  // slack for a loaded machine
  const TracerStats s = Tracer::Get().Stats();
  EXPECT_EQ(s.totals.writer_wake_syscalls, 1u);  // arming the waker, once
  EXPECT_EQ(s.waker_arms, 1u);
  EXPECT_GE(reader.got.load(), 1u);
}

TEST_F(WakeupTest, ImmediateWakeupComesFromTheCommit) {
  SetOptions(WakeupMode::kImmediate, 1'000'000, 0);  // the delay must not matter
  BlockedReader reader;
  reader.Start();
  const std::int64_t t0 = MonotonicNanos();
  WALFS_TRACE(kTick, 1);
  reader.thread.join();
  EXPECT_LT(reader.woke_at.load() - t0, 500'000'000);
  EXPECT_EQ(reader.got.load(), 1u);
  EXPECT_EQ(Tracer::Get().Stats().totals.writer_wake_syscalls, 1u);
  EXPECT_EQ(Tracer::Get().Stats().waker_arms, 0u);
}

TEST_F(WakeupTest, TheWatermarkWakesADeferredReaderBeforeTheRingFills) {
  SetOptions(WakeupMode::kDeferred, 5'000'000, 50, 16);  // 5 s delay, 256-record rings
  BlockedReader reader;
  reader.Start();
  const std::int64_t t0 = MonotonicNanos();
  for (int i = 0; i < 200; ++i) WALFS_TRACE(kTick, i);  // 78% of the ring
  reader.thread.join();
  EXPECT_LT(reader.woke_at.load() - t0, 2'000'000'000);
  EXPECT_EQ(Tracer::Get().Stats().watermark_wakes, 1u);
  EXPECT_EQ(Tracer::Get().Stats().totals.overruns, 0u);
}

// Found by the stress test: a wakeup armed under a long delay must not keep
// it after the delay is shortened.
TEST_F(WakeupTest, AShorterDelayAppliesToAWakeupAlreadyArmed) {
  SetOptions(WakeupMode::kDeferred, 5'000'000, 0);  // 5 s
  BlockedReader reader;
  reader.Start();
  WALFS_TRACE(kTick, 1);  // arms the waker with 5 s to go
  const std::int64_t t0 = MonotonicNanos();
  SetOptions(WakeupMode::kDeferred, 10'000, 0);  // 10 ms
  reader.thread.join();
  EXPECT_LT(reader.woke_at.load() - t0, 1'000'000'000);
  EXPECT_EQ(reader.got.load(), 1u);
}

// A record published without the commit path's wake check (here: written
// straight into the ring) reaches a blocked reader by the safety timeout.
TEST_F(WakeupTest, TheSafetyTimeoutFindsEventsNoWakeupAnnounced) {
  TracerOptions o;
  o.safety_timeout_ms = 50;
  ASSERT_TRUE(Tracer::Get().SetOptions(o).ok());
  WALFS_TRACE(kTick, 0);  // gives this thread its ring
  TraceReader drain(&Tracer::Get());
  ASSERT_TRUE(drain.Read(16, 0).ok());
  std::shared_ptr<Ring> ring = Tracer::Get().Rings().at(0);
  BlockedReader reader;
  reader.Start();
  Record r;
  r.event_id = kTick.id();
  r.timestamp = static_cast<std::uint64_t>(Tracer::Get().NowNs());
  const std::int64_t t0 = MonotonicNanos();
  ASSERT_TRUE(ring->Write(r, true));
  reader.thread.join();
  EXPECT_EQ(reader.got.load(), 1u);
  EXPECT_LT(reader.woke_at.load() - t0, 1'000'000'000);
  EXPECT_EQ(Tracer::Get().Stats().safety_timeouts, 1u);
}

// Found by trace_bench: a reader asleep under `immediate`, then a switch to
// `deferred` before any deferred reader had started the waker thread.
TEST_F(WakeupTest, SwitchingToDeferredWhileAReaderSleepsStillWakesIt) {
  SetOptions(WakeupMode::kImmediate, 2000, 0);
  BlockedReader reader;
  reader.Start();
  SetOptions(WakeupMode::kDeferred, 2000, 0);
  const std::int64_t t0 = MonotonicNanos();
  WALFS_TRACE(kTick, 1);
  reader.thread.join();
  EXPECT_EQ(reader.got.load(), 1u);
  EXPECT_LT(reader.woke_at.load() - t0, 500'000'000);  // not the 1 s safety timeout
}

TEST_F(WakeupTest, InterruptReleasesABlockedReader) {
  SetOptions(WakeupMode::kDeferred, 2000, 50);
  BlockedReader reader;
  reader.Start();
  Tracer::Get().InterruptReaders();
  reader.thread.join();
  EXPECT_TRUE(reader.would_block.load());
}

TEST_F(WakeupTest, ABlockedReaderUsesNoCpu) {
  SetOptions(WakeupMode::kDeferred, 2000, 50);
  BlockedReader reader;
  reader.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Tracer::Get().InterruptReaders();
  reader.thread.join();
  EXPECT_LT(reader.cpu_ns.load(), 20'000'000);  // 300 ms asleep, well under 20 ms of CPU
}

// Writers emit in bursts with random pauses while a reader consumes with
// blocking reads: every event must arrive (no reader left asleep with data).
void StressNoLostWakeup(WakeupMode mode) {
  TracerOptions o;
  o.wakeup = mode;
  o.wakeup_delay_us = 500;
  o.buffer_size_kb = 4096;
  o.overwrite = false;
  o.safety_timeout_ms = 0;  // a lost wakeup must show, not be rescued
  ASSERT_TRUE(Tracer::Get().SetOptions(o).ok());
  constexpr int kWriters = 3, kBursts = 200;
  std::atomic<std::uint64_t> emitted{0};
  std::atomic<bool> writers_done{false};
  std::uint64_t received = 0;
  std::thread reader([&] {
    TraceReader r(&Tracer::Get());
    for (;;) {
      // Writers never pause for more than 3 ms: a read that returns data
      // after a second slept through a wakeup (the 2 s timeout rescued it).
      const std::int64_t t0 = MonotonicNanos();
      auto got = r.Read(4096, 2'000'000'000);
      if (got.ok()) {
        if (MonotonicNanos() - t0 > 1'000'000'000) ADD_FAILURE() << "reader slept with data";
        received += got->size();
        continue;
      }
      if (writers_done.load() && received == emitted.load()) return;
      if (writers_done.load()) {
        ADD_FAILURE() << "reader stalled with " << emitted.load() - received << " unread";
        return;
      }
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      std::mt19937 rng(w);
      for (int b = 0; b < kBursts; ++b) {
        const int n = 1 + static_cast<int>(rng() % 50);
        for (int i = 0; i < n; ++i) WALFS_TRACE(kTick, i);
        emitted.fetch_add(n);
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
      }
    });
  for (auto& w : writers) w.join();
  writers_done.store(true);
  reader.join();
  EXPECT_EQ(received, emitted.load());
  EXPECT_EQ(Tracer::Get().Stats().totals.drops, 0u);
}

TEST_F(WakeupTest, NoLostWakeupUnderStressDeferred) { StressNoLostWakeup(WakeupMode::kDeferred); }
TEST_F(WakeupTest, NoLostWakeupUnderStressImmediate) { StressNoLostWakeup(WakeupMode::kImmediate); }

}  // namespace
}  // namespace walfs::tracing
