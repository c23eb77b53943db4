// Specs of TraceFilter (`walfs-trace print` and `stats` -p/-c/-e/-i/--from/
// --to): each condition alone, their conjunction, callers named by their
// task records, lost markers, and a bad event list.
#include "tracing/trace_filter.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace walfs::tracing {
namespace trace_filter_test {  // this file's own names (unity builds share one TU)
namespace {

enum Id : std::uint16_t { kWriteEnter = 1, kRenameTo, kTask, kReserve, kCilPush };

EventTable Table() {
  EventTable t;
  auto add = [&](std::uint16_t id, const char* sub, const char* name, std::vector<FieldInfo> fields) {
    EXPECT_TRUE(t.Add(EventInfo{.id = id, .subsystem = sub, .name = name, .fields = std::move(fields)}).ok());
  };
  add(kWriteEnter, "fs", "write_enter", {{"caller_pid"}, {"ino"}, {"off"}, {"len"}});
  add(kRenameTo, "fs", "rename_to", {{"caller_pid"}, {"newparent"}, {"name", FieldKind::kChars}, {"name_len"}});
  add(kTask, "fs", "task", {{"caller_pid"}, {"comm", FieldKind::kChars}, {"tgid"}});
  add(kReserve, "journal", "reserve", {{"tid"}, {"unit"}});
  add(kCilPush, "log", "cil_push", {{"seq"}, {"items"}});
  return t;
}

// A record written by thread `tid` (named `comm`) at `t_ns`.
TraceEntry Rec(std::uint16_t id, std::uint32_t tid, const char* comm, std::uint64_t t_ns,
               std::vector<std::uint64_t> fields) {
  TraceEntry e;
  e.record.event_id = id;
  e.record.timestamp = t_ns;
  e.tid = tid;
  e.comm = std::make_shared<const std::string>(comm);
  for (std::size_t i = 0; i < fields.size(); ++i) e.record.fields[i] = fields[i];
  return e;
}

class TraceFilterTest : public ::testing::Test {
 protected:
  EventTable table_ = Table();
  TaskNames tasks_;
  // A write by process 100 ("fio") on inode 7, served by worker 11.
  TraceEntry write_ = Rec(kWriteEnter, 11, "walfs", 5'000, {100, 7, 0, 4096});
  // journal work on worker 11, and a CIL push on thread 12 (walfs-cil).
  TraceEntry reserve_ = Rec(kReserve, 11, "walfs", 6'000, {1, 2});
  TraceEntry push_ = Rec(kCilPush, 12, "walfs-cil", 7'000, {3, 4});

  void SetUp() override {
    TraceEntry task = Rec(kTask, 11, "walfs", 1'000, {100});
    ASSERT_TRUE(PackChars("fio", &task.record.fields[1], 1));
    tasks_.Observe(task, *table_.ById(kTask));
  }
  bool Shows(const TraceFilter& f, const TraceEntry& e) { return f.Matches(e, table_, tasks_); }
};

TEST_F(TraceFilterTest, AnEmptyFilterShowsEverything) {
  TraceFilter f;
  EXPECT_TRUE(f.empty());
  EXPECT_TRUE(Shows(f, write_));
  EXPECT_TRUE(Shows(f, reserve_));
  EXPECT_TRUE(Shows(f, Rec(99, 1, "x", 0, {})));  // an id not (yet) defined
}

TEST_F(TraceFilterTest, APidMatchesTheCallerOfAnFsRecordOrTheThreadThatWroteIt) {
  TraceFilter f;
  f.pids = {100};
  EXPECT_TRUE(Shows(f, write_)) << "the caller";
  EXPECT_FALSE(Shows(f, reserve_)) << "journal records have no caller";
  f.pids = {11};
  EXPECT_TRUE(Shows(f, write_)) << "the worker that served it";
  EXPECT_TRUE(Shows(f, reserve_));
  EXPECT_FALSE(Shows(f, push_));
}

TEST_F(TraceFilterTest, ACommMatchesTheCallersNameFromItsTaskRecordOrTheThreadsName) {
  TraceFilter f;
  f.comms = {"fio"};
  EXPECT_TRUE(Shows(f, write_));
  EXPECT_FALSE(Shows(f, reserve_));
  f.comms = {"walfs-cil"};
  EXPECT_TRUE(Shows(f, push_));
  EXPECT_FALSE(Shows(f, write_));
}

TEST_F(TraceFilterTest, EventsAreSubsystemsNamesOrShellPatterns) {
  TraceFilter f;
  ASSERT_TRUE(f.SetEvents("journal").ok());
  EXPECT_TRUE(Shows(f, reserve_));
  EXPECT_FALSE(Shows(f, write_));
  ASSERT_TRUE(f.SetEvents("log/cil_push,fs_write_*").ok());
  EXPECT_TRUE(Shows(f, push_));
  EXPECT_TRUE(Shows(f, write_));
  EXPECT_FALSE(Shows(f, reserve_));
  ASSERT_TRUE(f.SetEvents("fs/*").ok());
  EXPECT_TRUE(Shows(f, write_));
  EXPECT_FALSE(Shows(f, Rec(99, 1, "x", 0, {}))) << "an undefined id is no event a list names";
}

TEST_F(TraceFilterTest, AnEmptyItemInTheEventListIsRefused) {
  TraceFilter f;
  EXPECT_EQ(f.SetEvents("fs,,journal").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.SetEvents("").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.SetEvents("fs,").code(), StatusCode::kInvalidArgument);
}

TEST_F(TraceFilterTest, AnInodeMatchesTheInoOrNewparentField) {
  TraceFilter f;
  f.inos = {7};
  EXPECT_TRUE(Shows(f, write_));
  EXPECT_FALSE(Shows(f, reserve_)) << "no inode field";
  f.inos = {3};
  EXPECT_TRUE(Shows(f, Rec(kRenameTo, 11, "walfs", 0, {100, 3, 0, 1})));
  EXPECT_FALSE(Shows(f, write_));
}

TEST_F(TraceFilterTest, TheTimeWindowIncludesBothEnds) {
  TraceFilter f;
  f.from_ns = 5'000;
  f.to_ns = 6'000;
  EXPECT_TRUE(Shows(f, write_));
  EXPECT_TRUE(Shows(f, reserve_));
  EXPECT_FALSE(Shows(f, push_));
}

TEST_F(TraceFilterTest, EveryConditionMustHold) {
  TraceFilter f;
  f.pids = {11};
  ASSERT_TRUE(f.SetEvents("fs").ok());
  EXPECT_TRUE(Shows(f, write_));
  EXPECT_FALSE(Shows(f, reserve_));
  f.inos = {8};
  EXPECT_FALSE(Shows(f, write_));
}

TEST_F(TraceFilterTest, ALostMarkerIsKeptWhenItsThreadAndTimePass) {
  TraceEntry lost = Rec(0, 11, "walfs", 5'500, {});
  lost.type = TraceEntry::Type::kLost;
  lost.lost = 3;
  TraceFilter f;
  ASSERT_TRUE(f.SetEvents("log").ok());
  f.inos = {7};
  EXPECT_TRUE(Shows(f, lost)) << "the lost records may have matched";
  f.pids = {12};
  EXPECT_FALSE(Shows(f, lost)) << "another thread's ring";
  f.pids = {};
  f.to_ns = 5'000;
  EXPECT_FALSE(Shows(f, lost)) << "outside the window";
}

}  // namespace
}  // namespace trace_filter_test
}  // namespace walfs::tracing
