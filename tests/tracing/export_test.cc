// Specs of the trace exporters: ftrace text lines, Chrome trace JSON, and
// the summary behind `walfs-trace stats`.
#include <pthread.h>
#include <unistd.h>

#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tracing/chrome_json.h"
#include "tracing/event_table.h"
#include "tracing/reader.h"
#include "tracing/text_format.h"
#include "tracing/trace_summary.h"
#include "tracing/tracer.h"

namespace walfs::tracing {
namespace export_test {  // this file's own names (unity builds share one TU)
namespace {

using nlohmann::json;

WALFS_TRACE_EVENT(kSleep, "test_export", "grant_sleep", EventKind::kInstant, {"tid"}, {"need"},
                  {"delta", FieldKind::kI64}, {"addr", FieldKind::kHex});
WALFS_TRACE_EVENT(kBare, "test_export", "bare", EventKind::kInstant);
WALFS_TRACE_EVENT(kWriteEnter, "test_export", "write_enter", EventKind::kBegin, {"ino"});
WALFS_TRACE_EVENT(kWriteExit, "test_export", "write_exit", EventKind::kEnd,
                  {"ret", FieldKind::kI64});
WALFS_TRACE_EVENT(kSyncEnter, "test_export", "sync_enter", EventKind::kBegin);
WALFS_TRACE_EVENT(kSyncExit, "test_export", "sync_exit", EventKind::kEnd);
WALFS_TRACE_EVENT(kQueue, "test_export", "queue", EventKind::kCounter, {"depth"},
                  {"mask", FieldKind::kHex});
WALFS_TRACE_EVENT(kNamed, "test_export", "named", EventKind::kInstant, {"caller_pid"}, {"ino"},
                  {"name", FieldKind::kChars}, {"name", FieldKind::kChars}, {"name_len"});
WALFS_TRACE_EVENT(kTask, "test_export", "task", EventKind::kInstant, {"caller_pid"},
                  {"comm", FieldKind::kChars}, {"comm", FieldKind::kChars});

constexpr std::uint32_t kPid = 4242;

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Tracer::Get().ResetForTesting();
    ASSERT_TRUE(Catalogue::Get().SetSubsystemEnabled("test_export", true).ok());
    table_ = EventTable::FromCatalogue(Catalogue::Get());
  }
  void TearDown() override { Tracer::Get().ResetForTesting(); }

  static TraceEntry Rec(const EventDef& event, std::uint64_t ts_ns,
                        std::vector<std::uint64_t> fields = {}, std::uint32_t tid = 1234,
                        const char* comm = "walfs-fuse") {
    TraceEntry e;
    e.record.event_id = event.id();
    e.record.cpu = 1;
    e.record.tid = tid;
    e.record.timestamp = ts_ns;
    for (std::size_t i = 0; i < fields.size(); ++i) e.record.fields[i] = fields[i];
    e.tid = tid;
    e.comm = std::make_shared<const std::string>(comm);
    return e;
  }
  static TraceEntry Lost(std::uint64_t count, std::uint64_t ts_ns, std::uint32_t tid = 1234) {
    TraceEntry e;
    e.type = TraceEntry::Type::kLost;
    e.lost = count;
    e.tid = tid;
    e.record.timestamp = ts_ns;
    e.comm = std::make_shared<const std::string>("walfs-fuse");
    return e;
  }

  json Chrome(const std::vector<TraceEntry>& entries) {
    const std::string text = ToChromeJson(entries, table_, {.pid = kPid, .process_name = ""});
    json doc = json::parse(text);  // throws (fails the test) if not JSON
    EXPECT_EQ(doc["displayTimeUnit"], "ns");
    EXPECT_TRUE(doc["traceEvents"].is_array());
    return doc;
  }
  // The trace events with phase `ph`.
  static std::vector<json> Phase(const json& doc, const char* ph) {
    std::vector<json> out;
    for (const json& ev : doc["traceEvents"])
      if (ev["ph"] == ph) out.push_back(ev);
    return out;
  }

  EventTable table_;
};

// --- Text

TEST_F(ExportTest, ARecordPrintsAsAnFtraceLineWithFieldsByKind) {
  const TraceEntry e =
      Rec(kSleep, 812'003'456'789, {7, 4096, static_cast<std::uint64_t>(-5), 0xdeadbeef});
  EXPECT_EQ(FormatTextLine(e, table_),
            "      walfs-fuse-1234    [001]   812.003457: test_export_grant_sleep: "
            "tid=7 need=4096 delta=-5 addr=0xdeadbeef");
}

TEST_F(ExportTest, AnEventWithoutFieldsEndsAfterItsName) {
  EXPECT_EQ(FormatTextLine(Rec(kBare, 1'000'000'000), table_),
            "      walfs-fuse-1234    [001]     1.000000: test_export_bare:");
}

TEST_F(ExportTest, TimestampsRoundToTheNearestMicrosecondAsFtraceDoes) {
  EXPECT_NE(FormatTextLine(Rec(kBare, 999'999'499), table_).find("     0.999999: "),
            std::string::npos);
  EXPECT_NE(FormatTextLine(Rec(kBare, 999'999'500), table_).find("     1.000000: "),
            std::string::npos);
  EXPECT_NE(FormatTextLine(Rec(kBare, 123'456'789'012'345'678), table_)
                .find(" 123456789.012346: "),
            std::string::npos)
      << "seconds wider than five columns widen the line";
}

TEST_F(ExportTest, AThreadWithoutANamePrintsAsFtracesUnknownTask) {
  TraceEntry e = Rec(kBare, 0, {}, 7);
  e.comm.reset();
  EXPECT_EQ(FormatTextLine(e, table_),
            "           <...>-7       [001]     0.000000: test_export_bare:");
}

TEST_F(ExportTest, AnUnknownEventIdPrintsItsRawFields) {
  TraceEntry e = Rec(kBare, 2'000'000'000, {1, 2, 3, 4, 5, 0xff});
  e.record.event_id = 65000;
  EXPECT_EQ(FormatTextLine(e, table_),
            "      walfs-fuse-1234    [001]     2.000000: unknown_event_65000: "
            "f0=0x1 f1=0x2 f2=0x3 f3=0x4 f4=0x5 f5=0xff");
}

// A caller's record: its process in the TASK-PID column, named by the task
// event before it; the worker that wrote it as a field; a run of kChars
// fields as one string.
TEST_F(ExportTest, ACallersRecordPrintsTheCallerAsTaskAndTheWorkerAsAField) {
  std::uint64_t comm[2], name[2];
  EXPECT_TRUE(PackChars("fio", comm, 2));
  EXPECT_FALSE(PackChars("a name of twenty bytes", name, 2)) << "cut at 16 bytes";
  TaskNames tasks;
  EXPECT_EQ(FormatTextLine(Rec(kNamed, 0, {77, 12, name[0], name[1], 22}), table_, &tasks),
            "           <...>-77      [001]     0.000000: test_export_named: ino=12 "
            "name=a\\x20name\\x20of\\x20twenty name_len=22 worker=walfs-fuse-1234")
      << "before its task event the caller has no name";
  EXPECT_EQ(FormatTextLine(Rec(kTask, 1000, {77, comm[0], comm[1]}), table_, &tasks),
            "             fio-77      [001]     0.000001: test_export_task: comm=fio "
            "worker=walfs-fuse-1234");
  EXPECT_EQ(tasks.Find(77), "fio");
  EXPECT_EQ(FormatTextLine(Rec(kNamed, 2000, {77, 12, name[0], name[1], 22}), table_, &tasks)
                .substr(0, 24),
            "             fio-77     ");
  EXPECT_EQ(FormatTextLine(Rec(kNamed, 0, {0, 12}), table_).substr(0, 24),
            "        <kernel>-0      ")
      << "pid 0 is the kernel's own request";
}

TEST_F(ExportTest, ChromeJsonJoinsACharsRunIntoOneStringArgument) {
  std::uint64_t name[2];
  PackChars("file.txt", name, 2);
  std::ostringstream out;
  ChromeTraceWriter w(&out, &table_, {});
  w.Add(Rec(kNamed, 0, {77, 12, name[0], name[1], 8}));
  ASSERT_TRUE(w.Finish().ok());
  const json j = json::parse(out.str());
  ASSERT_FALSE(j["traceEvents"].empty());
  bool found = false;
  for (const json& ev : j["traceEvents"])
    if (ev.value("name", "") == "test_export_named") {
      EXPECT_EQ(ev["args"]["name"], "file.txt");
      EXPECT_EQ(ev["args"]["name_len"], 8);
      found = true;
    }
  EXPECT_TRUE(found) << out.str();
}

TEST_F(ExportTest, ALostEntryPrintsAsALostEventsLine) {
  EXPECT_EQ(FormatTextLine(Lost(17, 0), table_), "      walfs-fuse-1234    [LOST 17 EVENTS]");
}

TEST_F(ExportTest, AppendTextLineEndsEachLineWithANewline) {
  std::string out;
  AppendTextLine(Rec(kBare, 0), table_, &out);
  AppendTextLine(Lost(1, 0), table_, &out);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2);
  EXPECT_EQ(out.back(), '\n');
}

TEST_F(ExportTest, TheHeaderBlockFollowsFtrace) {
  const std::string h = FormatTextHeader(3, 5, 2);
  EXPECT_EQ(h.rfind("# tracer: nop\n#\n", 0), 0u);
  EXPECT_NE(h.find("# entries-in-buffer/entries-written: 3/5   #P:2\n"), std::string::npos);
  EXPECT_NE(h.find("#           TASK-PID     CPU#     TIMESTAMP  FUNCTION\n"), std::string::npos);
}

TEST_F(ExportTest, LiveEventsPrintWithTheirThreadsNameTidAndFields) {
  std::string line;
  std::thread t([&] {
    pthread_setname_np(pthread_self(), "export_live");
    WALFS_TRACE(kSleep, 1, 2, -3, 0x4);
  });
  t.join();
  TraceReader reader(&Tracer::Get());
  auto entries = reader.Read(16, 0);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), 1u);
  line = FormatTextLine((*entries)[0], table_);
  EXPECT_EQ(line.rfind(fmt::format("     export_live-{:<7} [", (*entries)[0].tid), 0), 0u) << line;
  EXPECT_TRUE(line.ends_with(": test_export_grant_sleep: tid=1 need=2 delta=-3 addr=0x4")) << line;
}

// --- Chrome trace JSON

TEST_F(ExportTest, ChromeJsonIsOneObjectWithTraceEventsAndNanosecondDisplay) {
  json doc = Chrome({});
  EXPECT_TRUE(doc["traceEvents"].empty());
  json named = json::parse(ToChromeJson({}, table_, {.pid = 1, .process_name = "walfs"}));
  ASSERT_EQ(named["traceEvents"].size(), 1u);
  EXPECT_EQ(named["traceEvents"][0]["name"], "process_name");
  EXPECT_EQ(named["traceEvents"][0]["args"]["name"], "walfs");
}

TEST_F(ExportTest, BeginAndEndBecomeOneSliceNamedWithoutTheSuffix) {
  json doc = Chrome({Rec(kWriteEnter, 1'000, {42}),
                     Rec(kWriteExit, 3'500, {static_cast<std::uint64_t>(-28)})});
  auto b = Phase(doc, "B");
  auto e = Phase(doc, "E");
  ASSERT_EQ(b.size(), 1u);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(b[0]["name"], "test_export_write");
  EXPECT_EQ(e[0]["name"], "test_export_write");
  EXPECT_EQ(b[0]["cat"], "test_export");
  EXPECT_DOUBLE_EQ(b[0]["ts"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(e[0]["ts"].get<double>(), 3.5);
  EXPECT_EQ(b[0]["pid"], kPid);
  EXPECT_EQ(b[0]["tid"], 1234);
  EXPECT_EQ(b[0]["args"]["ino"], 42);
  EXPECT_EQ(e[0]["args"]["ret"], -28);
}

TEST_F(ExportTest, SlicesPairPerThreadAndNestWhenInterleavedAcrossThreads) {
  json doc = Chrome({Rec(kWriteEnter, 1'000, {1}, 1), Rec(kWriteEnter, 1'100, {2}, 2),
                     Rec(kSyncEnter, 1'200, {}, 1), Rec(kWriteExit, 1'300, {}, 2),
                     Rec(kSyncExit, 1'400, {}, 1), Rec(kWriteExit, 1'500, {}, 1)});
  std::map<int, std::vector<std::string>> stack;
  for (const json& ev : doc["traceEvents"]) {
    const int tid = ev.value("tid", 0);
    if (ev["ph"] == "B") stack[tid].push_back(ev["name"]);
    if (ev["ph"] == "E") {
      ASSERT_FALSE(stack[tid].empty()) << ev.dump();
      EXPECT_EQ(stack[tid].back(), ev["name"]) << ev.dump();
      stack[tid].pop_back();
    }
  }
  EXPECT_TRUE(stack[1].empty());
  EXPECT_TRUE(stack[2].empty());
  EXPECT_EQ(Phase(doc, "B").size(), 3u);
}

TEST_F(ExportTest, AnEndWhoseInnerSliceLostItsEndClosesThatSliceAsTruncated) {
  json doc = Chrome({Rec(kWriteEnter, 1'000), Rec(kSyncEnter, 2'000), Rec(kWriteExit, 5'000)});
  auto e = Phase(doc, "E");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0]["name"], "test_export_sync");
  EXPECT_EQ(e[0]["args"]["truncated"], true);
  EXPECT_DOUBLE_EQ(e[0]["ts"].get<double>(), 5.0);
  EXPECT_EQ(e[1]["name"], "test_export_write");
}

TEST_F(ExportTest, AnEndWithNoOpenSliceBecomesAnInstant) {
  json doc = Chrome({Rec(kWriteExit, 1'000, {3})});
  EXPECT_TRUE(Phase(doc, "E").empty());
  auto i = Phase(doc, "i");
  ASSERT_EQ(i.size(), 1u);
  EXPECT_EQ(i[0]["name"], "test_export_write_exit");
  EXPECT_EQ(i[0]["args"]["ret"], 3);
}

TEST_F(ExportTest, InstantsAreThreadScopedWithTypedArgs) {
  json doc = Chrome({Rec(kSleep, 2'000, {7, 4096, static_cast<std::uint64_t>(-5), 0xbeef})});
  auto i = Phase(doc, "i");
  ASSERT_EQ(i.size(), 1u);
  EXPECT_EQ(i[0]["name"], "test_export_grant_sleep");
  EXPECT_EQ(i[0]["s"], "t");
  EXPECT_EQ(i[0]["args"], json::parse(R"({"tid":7,"need":4096,"delta":-5,"addr":"0xbeef"})"));
}

TEST_F(ExportTest, CountersBecomeCounterEventsWithOneNumericSeriesPerField) {
  json doc = Chrome({Rec(kQueue, 9'000, {12, 0xf0})});
  auto c = Phase(doc, "C");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]["name"], "test_export_queue");
  EXPECT_EQ(c[0]["args"]["depth"], 12);
  EXPECT_EQ(c[0]["args"]["mask"], 0xf0) << "counter series are numbers, even hex fields";
}

TEST_F(ExportTest, EachThreadIsNamedOnceFromItsComm) {
  json doc = Chrome({Rec(kBare, 1, {}, 1, "alpha"), Rec(kBare, 2, {}, 2, "beta"),
                     Rec(kBare, 3, {}, 1, "alpha")});
  auto m = Phase(doc, "M");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0]["name"], "thread_name");
  EXPECT_EQ(m[0]["tid"], 1);
  EXPECT_EQ(m[0]["args"]["name"], "alpha");
  EXPECT_EQ(m[1]["args"]["name"], "beta");
}

TEST_F(ExportTest, LostEntriesBecomeLostEventsInstantsStampedByTheNextRecordIfUnstamped) {
  json doc = Chrome({Lost(5, 0), Rec(kBare, 7'000), Lost(2, 8'000), Lost(3, 0, 99)});
  std::vector<json> lost;
  for (const json& ev : Phase(doc, "i"))
    if (ev["name"] == "lost_events") lost.push_back(ev);
  ASSERT_EQ(lost.size(), 3u);
  EXPECT_EQ(lost[0]["args"]["count"], 5);
  EXPECT_DOUBLE_EQ(lost[0]["ts"].get<double>(), 7.0) << "stamped by the record it preceded";
  EXPECT_EQ(lost[1]["args"]["count"], 2);
  EXPECT_DOUBLE_EQ(lost[1]["ts"].get<double>(), 8.0);
  EXPECT_EQ(lost[2]["args"]["count"], 3);
  EXPECT_EQ(lost[2]["tid"], 99);
  EXPECT_DOUBLE_EQ(lost[2]["ts"].get<double>(), 7.0) << "no later record: the last timestamp";
}

TEST_F(ExportTest, UnknownEventsAndNonUtf8NamesStillMakeValidJson) {
  TraceEntry e = Rec(kBare, 1'000, {1}, 5, "bad\xff\xfe");
  e.record.event_id = 65001;
  json doc = Chrome({e});
  auto i = Phase(doc, "i");
  ASSERT_EQ(i.size(), 1u);
  EXPECT_EQ(i[0]["name"], "unknown_event_65001");
  EXPECT_EQ(i[0]["args"]["f0"], "0x1");
  EXPECT_EQ(Phase(doc, "M").size(), 1u);
}

TEST_F(ExportTest, LiveSlicesFromTwoThreadsExportAsBalancedPairs) {
  auto work = [] {
    for (int i = 0; i < 50; ++i) {
      WALFS_TRACE(kWriteEnter, i);
      WALFS_TRACE(kSyncEnter);
      WALFS_TRACE(kSyncExit);
      WALFS_TRACE(kWriteExit, 0);
    }
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  json doc = Chrome(TraceReader::Snapshot(&Tracer::Get()));
  std::map<int, int> depth;
  int begins = 0;
  for (const json& ev : doc["traceEvents"]) {
    if (ev["ph"] == "B") ++depth[ev["tid"].get<int>()], ++begins;
    if (ev["ph"] == "E") {
      ASSERT_GE(--depth[ev["tid"].get<int>()], 0);
    }
  }
  EXPECT_EQ(begins, 200);
  ASSERT_EQ(depth.size(), 2u);
  for (const auto& [tid, d] : depth) EXPECT_EQ(d, 0) << tid;
}

// --- Summary

TEST_F(ExportTest, TheSummaryCountsRecordsPerEventLossesThreadsAndSpan) {
  TraceSummary sum;
  for (const TraceEntry& e : {Lost(4, 0), Rec(kBare, 2'000'000'000),
                              Rec(kSleep, 2'500'000'000, {}, 9), Rec(kBare, 3'000'000'000),
                              Lost(1, 0, 9)})
    sum.Add(e);
  EXPECT_EQ(sum.records(), 3u);
  EXPECT_EQ(sum.lost(), 5u);
  EXPECT_EQ(sum.lost_markers(), 2u);
  EXPECT_EQ(sum.threads(), 2u);
  EXPECT_EQ(sum.cpus(), 2u) << "records ran on CPU 1";
  EXPECT_EQ(sum.duration_ns(), 1'000'000'000u);
  EXPECT_EQ(sum.per_event().at(kBare.id()), 2u);
  const std::string report = sum.Format(table_);
  EXPECT_NE(report.find("lost:      5 (in 2 markers)"), std::string::npos) << report;
  EXPECT_NE(report.find("duration:  1.000000 s"), std::string::npos) << report;
  const std::size_t bare = report.find("test_export_bare");
  const std::size_t sleep = report.find("test_export_grant_sleep");
  ASSERT_NE(bare, std::string::npos);
  ASSERT_NE(sleep, std::string::npos);
  EXPECT_LT(bare, sleep) << "most frequent first\n" << report;
}

}  // namespace
}  // namespace export_test
}  // namespace walfs::tracing
