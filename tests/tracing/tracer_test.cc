// Specs of the tracer: the catalogue's switches, what a record holds, per-
// thread rings and their retirement, merge order, loss accounting.
#include "tracing/tracer.h"

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "tracing/clock.h"
#include "tracing/reader.h"

namespace walfs::tracing {
namespace tracer_test {  // this file's own names (unity builds share one TU)
namespace {

WALFS_TRACE_EVENT(kPing, "test_tracer", "ping", EventKind::kInstant, {"seq"}, {"thread"});
WALFS_TRACE_EVENT(kPong, "test_tracer", "pong", EventKind::kInstant, {"value", FieldKind::kHex});
WALFS_TRACE_EVENT(kOther, "test_other", "noise", EventKind::kInstant);

class TracerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Tracer::Get().ResetForTesting();
    ASSERT_TRUE(Catalogue::Get().SetSubsystemEnabled("test_tracer", true).ok());
  }
  void TearDown() override { Tracer::Get().ResetForTesting(); }

  static std::vector<TraceEntry> ReadAll() {
    TraceReader reader(&Tracer::Get());
    std::vector<TraceEntry> all;
    for (;;) {
      auto r = reader.Read(1 << 20, 0);
      if (!r.ok()) break;
      all.insert(all.end(), r->begin(), r->end());
    }
    return all;
  }
};

TEST_F(TracerTest, ADisabledEventIsNotActiveAndRecordsNothing) {
  EXPECT_FALSE(kOther.active());
  WALFS_TRACE(kOther);
  EXPECT_TRUE(ReadAll().empty());
}

TEST_F(TracerTest, ARecordCarriesIdFieldsTidCpuAndTime) {
  const std::int64_t before = Tracer::Get().NowNs();
  WALFS_TRACE(kPing, 42, 7);
  const std::int64_t after = Tracer::Get().NowNs();
  auto all = ReadAll();
  ASSERT_EQ(all.size(), 1u);
  const Record& r = all[0].record;
  EXPECT_EQ(r.event_id, kPing.id());
  EXPECT_EQ(r.fields[0], 42u);
  EXPECT_EQ(r.fields[1], 7u);
  EXPECT_EQ(r.fields[2], 0u);
  EXPECT_EQ(r.tid, static_cast<std::uint32_t>(gettid()));
  EXPECT_EQ(all[0].tid, r.tid);
  EXPECT_GE(static_cast<std::int64_t>(r.timestamp), before);
  EXPECT_LE(static_cast<std::int64_t>(r.timestamp), after);
  EXPECT_LT(r.cpu, 4096);
}

TEST_F(TracerTest, TracingOffSilencesEnabledEventsAndOnRestoresThem) {
  Catalogue::Get().SetTracingOn(false);
  EXPECT_FALSE(kPing.active());
  EXPECT_TRUE(kPing.enabled());
  WALFS_TRACE(kPing, 1, 0);
  Catalogue::Get().SetTracingOn(true);
  WALFS_TRACE(kPing, 2, 0);
  auto all = ReadAll();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].record.fields[0], 2u);
}

TEST_F(TracerTest, UnknownEventsAndSubsystemsAreRefused) {
  EXPECT_EQ(Catalogue::Get().SetEnabled("test_tracer", "nope", true).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(Catalogue::Get().SetSubsystemEnabled("nope", true).code(), StatusCode::kNotFound);
  EXPECT_EQ(Catalogue::Get().Find("test_tracer", "ping"), &kPing);
  EXPECT_EQ(Catalogue::Get().ById(kPing.id()), &kPing);
  EXPECT_EQ(kPing.full_name(), "test_tracer_ping");
}

TEST_F(TracerTest, BadOptionsAreRefused) {
  TracerOptions o;
  o.buffer_size_kb = 1;
  EXPECT_EQ(Tracer::Get().SetOptions(o).code(), StatusCode::kInvalidArgument);
  o = TracerOptions{};
  o.buffer_percent = 101;
  EXPECT_EQ(Tracer::Get().SetOptions(o).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(ParseRecursionMode("paranoid").ok());
  EXPECT_EQ(*ParseWakeupMode("deferred"), WakeupMode::kDeferred);
}

// Threads write into rings of their own; a consuming read merges them by
// time, and keeps each thread's order.
TEST_F(TracerTest, ThreadsWriteOwnRingsAndTheReaderMergesByTime) {
  constexpr int kThreads = 4, kEach = 500;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([t] {
      for (int i = 0; i < kEach; ++i) WALFS_TRACE(kPing, i, t);
    });
  for (auto& t : ts) t.join();
  auto all = ReadAll();
  ASSERT_EQ(all.size(), static_cast<std::size_t>(kThreads * kEach));
  std::set<std::uint32_t> tids;
  std::vector<std::int64_t> next(kThreads, 0);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Record& r = all[i].record;
    tids.insert(r.tid);
    if (i > 0) {
      EXPECT_LE(all[i - 1].record.timestamp, r.timestamp);
    }
    EXPECT_EQ(static_cast<std::int64_t>(r.fields[0]), next[r.fields[1]]++);
  }
  EXPECT_EQ(tids.size(), static_cast<std::size_t>(kThreads));
}

TEST_F(TracerTest, AnExitedThreadsRingIsFreedOnceReadAndItsCountsKept) {
  std::thread([] {
    for (int i = 0; i < 10; ++i) WALFS_TRACE(kPing, i, 0);
  }).join();
  TracerStats s = Tracer::Get().Stats();
  ASSERT_EQ(s.rings.size(), 1u);
  EXPECT_TRUE(s.rings[0].retired);
  EXPECT_EQ(ReadAll().size(), 10u);
  s = Tracer::Get().Stats();
  EXPECT_TRUE(s.rings.empty());
  EXPECT_EQ(s.totals.entries, 10u);
}

TEST_F(TracerTest, OverwrittenEventsComeBackAsALostEntry) {
  TracerOptions o;
  o.buffer_size_kb = 4;  // 64 records
  ASSERT_TRUE(Tracer::Get().SetOptions(o).ok());
  for (int i = 0; i < 1000; ++i) WALFS_TRACE(kPing, i, 0);
  auto all = ReadAll();
  ASSERT_EQ(all.size(), 65u);
  EXPECT_EQ(all[0].type, TraceEntry::Type::kLost);
  EXPECT_EQ(all[0].lost, 1000u - 64u);
  EXPECT_EQ(all[1].record.fields[0], 1000u - 64u);
  EXPECT_EQ(Tracer::Get().Stats().totals.overruns, 1000u - 64u);
}

TEST_F(TracerTest, DiscardModeKeepsTheFirstEventsAndCountsDrops) {
  TracerOptions o;
  o.buffer_size_kb = 4;
  o.overwrite = false;
  ASSERT_TRUE(Tracer::Get().SetOptions(o).ok());
  for (int i = 0; i < 1000; ++i) WALFS_TRACE(kPing, i, 0);
  auto all = ReadAll();
  ASSERT_EQ(all.size(), 64u);
  EXPECT_EQ(all[0].record.fields[0], 0u);
  EXPECT_EQ(Tracer::Get().Stats().totals.drops, 1000u - 64u);
}

TEST_F(TracerTest, ANewBufferSizeGivesThreadsFreshRings) {
  WALFS_TRACE(kPing, 1, 0);
  TracerOptions o;
  o.buffer_size_kb = 8;
  ASSERT_TRUE(Tracer::Get().SetOptions(o).ok());
  WALFS_TRACE(kPing, 2, 0);
  TracerStats s = Tracer::Get().Stats();
  ASSERT_EQ(s.rings.size(), 2u);
  EXPECT_TRUE(s.rings[0].retired);
  EXPECT_EQ(s.rings[1].capacity, 8u * 1024 / sizeof(Record));
  auto all = ReadAll();  // the old ring is read out, nothing is lost
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(Tracer::Get().Stats().rings.size(), 1u);
}

TEST_F(TracerTest, SnapshotDoesNotConsume) {
  for (int i = 0; i < 5; ++i) WALFS_TRACE(kPing, i, 0);
  EXPECT_EQ(TraceReader::Snapshot(&Tracer::Get()).size(), 5u);
  EXPECT_EQ(TraceReader::Snapshot(&Tracer::Get()).size(), 5u);
  EXPECT_EQ(ReadAll().size(), 5u);
  EXPECT_TRUE(TraceReader::Snapshot(&Tracer::Get()).empty());
}

TEST_F(TracerTest, ClearDiscardsWhatWasWritten) {
  for (int i = 0; i < 5; ++i) WALFS_TRACE(kPing, i, 0);
  Tracer::Get().Clear();
  EXPECT_TRUE(ReadAll().empty());
}

TEST_F(TracerTest, TheDefaultClockIsTheTscWhereTheCpuHasAnInvariantOne) {
  EXPECT_EQ(TracerOptions{}.clock, TscUsable() ? ClockKind::kTsc : ClockKind::kMonotonic);
  EXPECT_EQ(Tracer::Get().options().clock, DefaultClockKind());
  // Within one thread the trace clock never goes back, whichever it is.
  std::int64_t last = Tracer::Get().NowNs();
  for (int i = 0; i < 100000; ++i) {
    const std::int64_t now = Tracer::Get().NowNs();
    ASSERT_GE(now, last);
    last = now;
  }
}

TEST_F(TracerTest, TheTscClockAgreesWithTheMonotonicClock) {
  TracerOptions o;
  o.clock = ClockKind::kTsc;
  ASSERT_TRUE(Tracer::Get().SetOptions(o).ok());
  const std::int64_t mono = walfs::MonotonicNanos();
  const std::int64_t tsc = Tracer::Get().NowNs();
  EXPECT_LT(std::llabs(tsc - mono), 50'000'000);  // same time base, within 50 ms
}

}  // namespace
}  // namespace tracer_test
}  // namespace walfs::tracing
