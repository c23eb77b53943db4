// Specs of OpLatency (`walfs-trace stats`'s operations and callers tables):
// exact percentiles, errors, callers named by their task events, the order
// by total time, and what it leaves alone.
#include "tracing/op_latency.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace walfs::tracing {
namespace op_latency_test {  // this file's own names (unity builds share one TU)
namespace {

enum Id : std::uint16_t { kWriteExit = 1, kLookupExit, kTask, kOldReadExit, kReserve, kWriteEnter };

EventTable Table() {
  EventTable t;
  auto add = [&](std::uint16_t id, const char* sub, const char* name, std::vector<FieldInfo> fields) {
    EventInfo e;
    e.id = id;
    e.subsystem = sub;
    e.name = name;
    e.fields = std::move(fields);
    EXPECT_TRUE(t.Add(e).ok());
  };
  const FieldInfo u{"caller_pid"};
  add(kWriteExit, "fs", "write_exit", {u, {"ino"}, {"err"}, {"latency_ns"}});
  add(kLookupExit, "fs", "lookup_exit", {u, {"ino"}, {"err"}, {"latency_ns"}});
  add(kTask, "fs", "task", {u, {"comm", FieldKind::kChars}, {"comm", FieldKind::kChars}, {"tgid"}});
  // Another build's exit event without latency_ns: not counted.
  add(kOldReadExit, "fs", "read_exit", {{"ino"}, {"err"}});
  add(kReserve, "journal", "reserve", {{"tid"}, {"unit"}});
  add(kWriteEnter, "fs", "write_enter", {u, {"ino"}});
  return t;
}

TraceEntry Rec(std::uint16_t id, std::vector<std::uint64_t> fields) {
  TraceEntry e;
  e.record.event_id = id;
  for (std::size_t i = 0; i < fields.size(); ++i) e.record.fields[i] = fields[i];
  return e;
}

TraceEntry Task(std::uint32_t pid, const std::string& comm) {
  TraceEntry e = Rec(kTask, {pid});
  EXPECT_TRUE(PackChars(comm, &e.record.fields[1], 2));
  e.record.fields[3] = pid;
  return e;
}

// The row whose first column is `key`, as text cells.
std::vector<std::string> Row(const Report& r, const std::string& key) {
  for (const auto& row : r.rows())
    if (row[0].Text() == key) {
      std::vector<std::string> out;
      for (const Cell& c : row) out.push_back(c.Text());
      return out;
    }
  return {};
}

TEST(OpLatency, EachOperationGetsItsCountErrorsTotalAndExactPercentiles) {
  const EventTable t = Table();
  OpLatency ops;
  // write: 1..100 us, every tenth failed.  lookup: 1000 us once.
  for (std::uint64_t i = 1; i <= 100; ++i) ops.Add(Rec(kWriteExit, {7, 2, i % 10 == 0 ? 5u : 0u, i * 1000}), t);
  ops.Add(Rec(kLookupExit, {7, 1, 2, 1'000'000}), t);
  EXPECT_EQ(ops.requests(), 101u);
  const Report r = ops.Operations();
  ASSERT_EQ(r.columns(), (std::vector<std::string>{"op", "count", "errors", "total_ms", "mean_us", "p50_us",
                                                   "p99_us", "max_us"}));
  EXPECT_EQ(Row(r, "write"), (std::vector<std::string>{"write", "100", "10", "5.050", "50.5", "50.0", "99.0",
                                                        "100.0"}));
  EXPECT_EQ(Row(r, "lookup"), (std::vector<std::string>{"lookup", "1", "1", "1.000", "1000.0", "1000.0", "1000.0",
                                                         "1000.0"}));
}

TEST(OpLatency, OperationsComeMostTotalTimeFirstNotMostFrequent) {
  const EventTable t = Table();
  OpLatency ops;
  for (int i = 0; i < 50; ++i) ops.Add(Rec(kLookupExit, {1, 1, 0, 1000}), t);  // 50 us in all
  ops.Add(Rec(kWriteExit, {1, 1, 0, 900'000}), t);                           // 900 us once
  const Report r = ops.Operations();
  ASSERT_EQ(r.rows().size(), 2u);
  EXPECT_EQ(r.rows()[0][0].Text(), "write");
  EXPECT_EQ(r.rows()[1][0].Text(), "lookup");
}

TEST(OpLatency, CallersAreNamedByTheirTaskEventsAndTheKernelIsPidZero) {
  const EventTable t = Table();
  OpLatency ops;
  ops.Add(Task(100, "fio"), t);
  for (int i = 0; i < 3; ++i) ops.Add(Rec(kWriteExit, {100, 2, 0, 10'000}), t);
  ops.Add(Rec(kLookupExit, {100, 2, 2, 1'000}), t);
  ops.Add(Rec(kLookupExit, {0, 2, 0, 5'000}), t);    // a request of the kernel's own
  ops.Add(Rec(kLookupExit, {200, 2, 0, 1'000}), t);  // no task event: unnamed
  const Report r = ops.Callers();
  ASSERT_EQ(r.columns(), (std::vector<std::string>{"pid", "comm", "requests", "errors", "total_ms", "busiest_op"}));
  ASSERT_EQ(r.rows().size(), 3u);
  EXPECT_EQ(Row(r, "100"), (std::vector<std::string>{"100", "fio", "4", "1", "0.031", "write"}));
  EXPECT_EQ(Row(r, "0"), (std::vector<std::string>{"0", "<kernel>", "1", "0", "0.005", "lookup"}));
  EXPECT_EQ(Row(r, "200"), (std::vector<std::string>{"200", "<...>", "1", "0", "0.001", "lookup"}));
  EXPECT_EQ(r.rows()[0][0].Text(), "100") << "most total time first";
}

TEST(OpLatency, CallersBeyondTheLimitAreCountedNotShown) {
  const EventTable t = Table();
  OpLatency ops;
  for (std::uint32_t pid = 1; pid <= 30; ++pid) ops.Add(Rec(kWriteExit, {pid, 1, 0, pid * 1000}), t);
  std::size_t left_out = 0;
  const Report r = ops.Callers(20, &left_out);
  EXPECT_EQ(r.rows().size(), 20u);
  EXPECT_EQ(left_out, 10u);
  EXPECT_EQ(r.rows()[0][0].Text(), "30");
  EXPECT_EQ(ops.Callers().rows().size(), 30u);
}

TEST(OpLatency, EnterRecordsOtherSubsystemsAndExitsWithoutLatencyAreNotRequests) {
  const EventTable t = Table();
  OpLatency ops;
  ops.Add(Rec(kWriteEnter, {1, 2}), t);
  ops.Add(Rec(kReserve, {1, 2}), t);
  ops.Add(Rec(kOldReadExit, {1, 0}), t);
  ops.Add(Rec(99, {1, 2, 3, 4}), t);  // an id the table does not define (yet)
  TraceEntry lost;
  lost.type = TraceEntry::Type::kLost;
  lost.lost = 5;
  ops.Add(lost, t);
  EXPECT_EQ(ops.requests(), 0u);
  EXPECT_TRUE(ops.Operations().rows().empty());
  EXPECT_TRUE(ops.Callers().rows().empty());
}

}  // namespace
}  // namespace op_latency_test
}  // namespace walfs::tracing
