// Specs of LogSpaceStory (`walfs-trace stats`'s grant heads, log forces and
// log space tables), from records of known content: sleeps, waits and wakes
// per head and wake mode, forces that waited and those already on disk,
// and the time the log spent more than 75 % in use.
#include "tracing/log_space_story.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace walfs::tracing {
namespace log_space_story_test {  // this file's own names (unity builds share one TU)
namespace {

enum Id : std::uint16_t {
  kSleep = 1, kWake, kWakeup, kGranted, kBatch, kForce, kBytes, kOldSleep, kOldBytes,
};

EventTable Table() {
  EventTable t;
  auto add = [&](std::uint16_t id, const char* sub, const char* name, std::vector<const char*> fields) {
    EventInfo e;
    e.id = id;
    e.subsystem = sub;
    e.name = name;
    for (const char* f : fields) e.fields.push_back({f, FieldKind::kU64});
    EXPECT_TRUE(t.Add(e).ok());
  };
  add(kSleep, "journal", "grant_sleep", {"head", "tid", "need", "free", "queued", "mode"});
  add(kWake, "journal", "grant_wake", {"head", "tid", "need", "mode"});
  add(kWakeup, "journal", "grant_wakeup", {"head", "tid", "got_space", "mode"});
  add(kGranted, "journal", "grant_granted", {"head", "tid", "need", "wait_ns", "mode"});
  add(kBatch, "journal", "wake_batch", {"head", "count", "mode"});
  add(kForce, "log", "log_force", {"lsn", "wait_ns", "already"});
  add(kBytes, "journal", "grant_bytes", {"reserve", "write", "tail_space", "log_bytes"});
  return t;
}

TraceEntry Rec(std::uint16_t id, std::uint64_t t_ns, std::vector<std::uint64_t> fields) {
  TraceEntry e;
  e.record.event_id = id;
  e.record.timestamp = t_ns;
  for (std::size_t i = 0; i < fields.size(); ++i) e.record.fields[i] = fields[i];
  return e;
}

std::vector<std::string> Texts(const std::vector<Cell>& row) {
  std::vector<std::string> out;
  for (const Cell& c : row) out.push_back(c.Text());
  return out;
}

constexpr std::uint64_t kReserveHead = 0, kWriteHead = 1, kInline = 0, kWakeq = 2;

TEST(LogSpaceStory, GrantHeadsCountSleepsWaitsAndWakesPerModeAndHead) {
  const EventTable t = Table();
  LogSpaceStory s;
  // wakeq, reserve head: 4 sleeps, 4 wakes in 2 batches, 3 useful and 1
  // futile, 3 granted after 100, 200 and 300 us.
  for (int i = 0; i < 4; ++i) s.Add(Rec(kSleep, 0, {kReserveHead, 1, 10, 0, 1, kWakeq}), t);
  for (int i = 0; i < 4; ++i) s.Add(Rec(kWake, 0, {kReserveHead, 1, 10, kWakeq}), t);
  for (int i = 0; i < 2; ++i) s.Add(Rec(kBatch, 0, {kReserveHead, 2, kWakeq}), t);
  for (int i = 0; i < 3; ++i) s.Add(Rec(kWakeup, 0, {kReserveHead, 1, 1, kWakeq}), t);
  s.Add(Rec(kWakeup, 0, {kReserveHead, 1, 0, kWakeq}), t);
  for (std::uint64_t w : {100'000, 200'000, 300'000}) s.Add(Rec(kGranted, 0, {kReserveHead, 1, 10, w, kWakeq}), t);
  // inline, write head: 1 sleep woken 3 times (the duplicate wakes the
  // waking flag avoids).
  s.Add(Rec(kSleep, 0, {kWriteHead, 2, 10, 0, 1, kInline}), t);
  for (int i = 0; i < 3; ++i) s.Add(Rec(kWake, 0, {kWriteHead, 2, 10, kInline}), t);
  const Report r = s.GrantHeads();
  ASSERT_EQ(r.columns(), (std::vector<std::string>{"mode", "head", "sleeps", "granted", "wait_p50_us",
                                                   "wait_p99_us", "wait_max_us", "wakes", "useful_wakes",
                                                   "futile_wakes", "wakes_per_sleep", "wake_batches"}));
  ASSERT_EQ(r.rows().size(), 2u);
  EXPECT_EQ(Texts(r.rows()[0]), (std::vector<std::string>{"inline", "write", "1", "0", "0.0", "0.0", "0.0", "3",
                                                          "0", "0", "3.00", "0"}));
  EXPECT_EQ(Texts(r.rows()[1]), (std::vector<std::string>{"wakeq", "reserve", "4", "3", "200.0", "300.0", "300.0",
                                                          "4", "3", "1", "1.00", "2"}));
}

TEST(LogSpaceStory, ARecordWithoutTheModeFieldCountsUnderAQuestionMark) {
  EventInfo old{.id = kOldSleep, .subsystem = "journal", .name = "grant_sleep", .kind = EventKind::kInstant,
                .fields = {{"head"}, {"tid"}, {"need"}, {"free"}, {"queued"}}};
  // One table cannot hold two events of the same name and id; the old
  // definition is what a trace from before the field carries.
  EventTable old_table;
  ASSERT_TRUE(old_table.Add(old).ok());
  LogSpaceStory s;
  s.Add(Rec(kOldSleep, 0, {kWriteHead, 1, 10, 0, 1}), old_table);
  const Report r = s.GrantHeads();
  ASSERT_EQ(r.rows().size(), 1u);
  EXPECT_EQ(r.rows()[0][0].Text(), "?");
  EXPECT_EQ(r.rows()[0][1].Text(), "write");
  EXPECT_EQ(r.rows()[0][2].Text(), "1");
}

TEST(LogSpaceStory, ForcesSplitThoseAlreadyOnDiskFromThoseThatWaited) {
  const EventTable t = Table();
  LogSpaceStory s;
  EXPECT_TRUE(s.Forces().rows().empty()) << "no forces, no row";
  s.Add(Rec(kForce, 0, {1, 0, 1}), t);
  s.Add(Rec(kForce, 0, {1, 0, 1}), t);
  for (std::uint64_t w = 1; w <= 100; ++w) s.Add(Rec(kForce, 0, {1, w * 1000, 0}), t);
  const Report r = s.Forces();
  ASSERT_EQ(r.columns(),
            (std::vector<std::string>{"forces", "on_disk", "waited", "wait_p50_us", "wait_p99_us", "wait_max_us"}));
  ASSERT_EQ(r.rows().size(), 1u);
  EXPECT_EQ(Texts(r.rows()[0]), (std::vector<std::string>{"102", "2", "100", "50.0", "99.0", "100.0"}));
}

TEST(LogSpaceStory, TimeAboveThreeQuartersHoldsEachSampleUntilTheNext) {
  const EventTable t = Table();
  LogSpaceStory s;
  constexpr std::uint64_t kLog = 1000, kMs = 1'000'000;
  // 0-10 ms: 50 % (tail 300 + reserve 200); 10-30 ms: 80 % (the reserve
  // head is the furthest: 500 + 300); 30-40 ms: 76 % by the write head;
  // 40 ms: 10 %, the last sample (it spans nothing).
  s.Add(Rec(kBytes, 0, {200, 100, 300, kLog}), t);
  s.Add(Rec(kBytes, 10 * kMs, {300, 200, 500, kLog}), t);
  s.Add(Rec(kBytes, 30 * kMs, {100, 260, 500, kLog}), t);
  s.Add(Rec(kBytes, 40 * kMs, {0, 0, 100, kLog}), t);
  const Report r = s.Space();
  ASSERT_EQ(r.columns(), (std::vector<std::string>{"samples", "log_mib", "peak_used_pct", "mean_used_pct",
                                                   "above_75_s", "above_75_pct"}));
  ASSERT_EQ(r.rows().size(), 1u);
  // mean: (50 * 10 + 80 * 20 + 76 * 10) / 40 = 71.5 %.
  EXPECT_EQ(Texts(r.rows()[0]), (std::vector<std::string>{"4", "0.00", "80.0", "71.5", "0.030", "75.0"}));
}

TEST(LogSpaceStory, GrantBytesWithoutTheLogSizeGiveNoSpaceRow) {
  EventTable old_table;
  ASSERT_TRUE(old_table
                  .Add(EventInfo{.id = kOldBytes, .subsystem = "journal", .name = "grant_bytes",
                                 .kind = EventKind::kCounter, .fields = {{"reserve"}, {"write"}, {"tail_space"}}})
                  .ok());
  LogSpaceStory s;
  s.Add(Rec(kOldBytes, 0, {1, 2, 3}), old_table);
  s.Add(Rec(kOldBytes, 5, {1, 2, 3}), old_table);
  EXPECT_TRUE(s.Space().rows().empty());
  EXPECT_TRUE(s.GrantHeads().rows().empty());
}

}  // namespace
}  // namespace log_space_story_test
}  // namespace walfs::tracing
