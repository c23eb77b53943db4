// Specs of TracePlot (walfs-trace plot): which events each figure draws,
// what its data files hold, what it leaves out and why, and its errors.
// The PNG specs run gnuplot and skip, saying so, where it is missing.
#include "tracing/trace_plot.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace walfs::tracing {
namespace trace_plot_test {  // this file's own names (unity builds share one TU)
namespace {

namespace fs = std::filesystem;

enum Id : std::uint16_t {
  kGrantBytes = 1, kSleep, kWake, kBatch, kSubmit, kPush, kForce, kWriteExit, kLookupExit,
  kOther, kWrongFields,
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
  add(kGrantBytes, "journal", "grant_bytes", {"reserve", "write", "tail_space"});
  add(kSleep, "journal", "grant_sleep", {"head", "tid", "need", "free", "queued"});
  add(kWake, "journal", "grant_wake", {"head", "tid", "need"});
  add(kBatch, "journal", "wake_batch", {"head", "count"});
  add(kSubmit, "log", "log_submit", {"lsn", "bytes", "flags"});
  add(kPush, "log", "cil_push", {"seq", "items", "bytes", "background"});
  add(kForce, "log", "log_force", {"lsn", "wait_ns", "already"});
  add(kWriteExit, "fs", "write_exit", {"ino", "err", "latency_ns"});
  add(kLookupExit, "fs", "lookup_exit", {"ino", "err", "latency_ns"});
  add(kOther, "journal", "reserve", {"tid", "unit"});
  // Same name as ours, other fields (another build): not plotted.
  add(kWrongFields, "fs", "read_exit", {"ino"});
  return t;
}

TraceEntry Rec(std::uint16_t id, std::uint64_t t_ns, std::vector<std::uint64_t> fields) {
  TraceEntry e;
  e.record.event_id = id;
  e.record.timestamp = t_ns;
  for (std::size_t i = 0; i < fields.size(); ++i) e.record.fields[i] = fields[i];
  return e;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> DataRows(const fs::path& p) {
  std::vector<std::string> rows;
  std::istringstream in(ReadFile(p));
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') rows.push_back(line);
  return rows;
}

bool HaveGnuplot() { return std::system("command -v gnuplot > /dev/null 2>&1") == 0; }

bool IsPng(const fs::path& p) {
  const std::string s = ReadFile(p);
  return s.size() > 1000 && s.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0;
}

class TracePlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/walfs-plot-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A second of every event the figures draw.
  void AddEverything() {
    constexpr std::uint64_t kS = 1'000'000'000;
    for (std::uint64_t i = 0; i < 100; ++i) {
      const std::uint64_t t = 5 * kS + i * kS / 100;
      Add(Rec(kGrantBytes, t, {(i + 1) << 20, (i + 1) << 19, 3 << 20}));
      Add(Rec(kSubmit, t, {(1ull << 32) | (i * 2048), 32768, 0}));
      Add(Rec(kPush, t, {i, 10, 4096, 0}));
      Add(Rec(kForce, t, {0, 1000 * (i + 1), 0}));
      Add(Rec(kForce, t, {0, 0, 1}));  // already durable: not a wait
      Add(Rec(kSleep, t, {i % 2, 7, 100, 50, 1}));
      Add(Rec(kWake, t, {i % 2, 7, 100}));
      Add(Rec(kBatch, t, {0, 1}));
      Add(Rec(kWriteExit, t, {2, 0, 4096}));  // bucket 2^12
      Add(Rec(kLookupExit, t, {1, 0, 1000 + i}));
      Add(Rec(kOther, t, {1, 2}));
    }
  }
  void Add(const TraceEntry& e) { plot_.Add(e, table_); }
  PlotOptions Options(std::string gnuplot = "gnuplot") const {
    PlotOptions o;
    o.out_dir = dir_.string();
    o.gnuplot = std::move(gnuplot);
    return o;
  }

  EventTable table_ = Table();
  TracePlot plot_;
  fs::path dir_;
};

TEST_F(TracePlotTest, DrawsEveryFigureAsAPngWhenItsEventsAreThere) {
  if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed (scripts/setup.sh installs gnuplot-nox)";
  AddEverything();
  auto report = plot_.Draw({.out_dir = dir_, .title = "spec", .when = "today", .gnuplot = "gnuplot"});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->skipped.empty());
  std::vector<std::string> drawn;
  for (const auto& f : report->drawn) drawn.push_back(f.file);
  EXPECT_EQ(drawn, (std::vector<std::string>{"log_space.png", "grant_waits.png", "log_writes.png",
                                             "force_latency.png", "fuse_latency.png"}));
  for (const std::string& f : drawn) EXPECT_TRUE(IsPng(dir_ / f)) << f;
  EXPECT_TRUE(fs::exists(dir_ / "plot.gp"));
  EXPECT_NE(ReadFile(dir_ / "plot.gp").find("spec, today"), std::string::npos);
}

TEST_F(TracePlotTest, DataFilesHoldTheEventsValues) {
  if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed (scripts/setup.sh installs gnuplot-nox)";
  AddEverything();
  ASSERT_TRUE(plot_.Draw(Options()).ok());
  // Grant heads and use in MiB, seconds from the first plotted event.
  const auto space = DataRows(dir_ / "log_space.dat");
  ASSERT_EQ(space.size(), 100u);
  EXPECT_EQ(space.front(), "0.000000 1.0000 0.5000 3.0000");
  EXPECT_EQ(space.back(), "0.990000 100.0000 50.0000 3.0000");
  // The log head: sector 2048 * 99 of 512 bytes = 99 MiB.
  const auto head = DataRows(dir_ / "log_head.dat");
  ASSERT_EQ(head.size(), 100u);
  EXPECT_EQ(head.back(), "0.990000 99.0000");
  // Force waits in us; the forces already durable are not among them.
  const auto forces = DataRows(dir_ / "force_latency.dat");
  ASSERT_EQ(forces.size(), 100u);
  EXPECT_EQ(forces.front(), "0.000000 1.000");
  // The FUSE histogram: a head row, then writes all in the 4096 ns bucket.
  const auto lat = DataRows(dir_ / "fuse_latency.dat");
  ASSERT_GE(lat.size(), 2u);
  EXPECT_EQ(lat[0], "latency_us write lookup");
  bool found = false;
  for (const std::string& row : lat)
    if (row.rfind("5.79", 0) == 0) {  // 4096 * sqrt(2) ns
      EXPECT_NE(row.find(" 100 "), std::string::npos) << row;
      found = true;
    }
  EXPECT_TRUE(found);
  EXPECT_EQ(plot_.records(), 1100u);
  EXPECT_EQ(plot_.used_records(), 1000u);  // all but journal_reserve
}

// grant_waits.dat's blocks (two blank lines apart), each its rows (one
// blank line where the series breaks) and a heading naming the series.
struct Block {
  std::string heading;
  std::vector<std::string> rows;
  int breaks = 0;
};
std::vector<Block> Blocks(const fs::path& p) {
  std::vector<Block> out;
  std::istringstream in(ReadFile(p));
  int blanks = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) {
      ++blanks;
      continue;
    }
    if (line[0] == '#') {
      out.push_back({line, {}, 0});
    } else if (!out.empty()) {
      if (blanks == 1 && !out.back().rows.empty()) ++out.back().breaks;
      out.back().rows.push_back(line);
    }
    blanks = 0;
  }
  return out;
}

TEST_F(TracePlotTest, RatesCountEventsPerSecondPerGrantHead) {
  if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed (scripts/setup.sh installs gnuplot-nox)";
  AddEverything();
  ASSERT_TRUE(plot_.Draw(Options()).ok());
  const std::vector<Block> blocks = Blocks(dir_ / "grant_waits.dat");
  ASSERT_EQ(blocks.size(), 5u);
  EXPECT_EQ(blocks[0].heading, "# index 0: seconds sleeps_reserve/s");
  EXPECT_EQ(blocks[1].heading, "# index 1: seconds sleeps_write/s");
  // 50 sleeps on each head; a rate times the slice length sums back to it.
  const double slice = 0.99 / 300;
  for (int head = 0; head < 2; ++head) {
    double sum = 0, last = 0;
    for (const std::string& row : blocks[static_cast<std::size_t>(head)].rows) {
      std::istringstream in(row);
      double t = 0, rate = 0;
      in >> t >> rate;
      sum += rate;
      last = t;
    }
    EXPECT_NEAR(sum * slice, 50, 1e-3) << head;  // rates are printed to 6 digits
    EXPECT_GT(last, 0.97);
  }
  EXPECT_NE(ReadFile(dir_ / "plot.gp").find("index 4 using 1:2"), std::string::npos);
}

TEST_F(TracePlotTest, NoLineCrossesASpanWithoutSamples) {
  if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed (scripts/setup.sh installs gnuplot-nox)";
  // Sleeps on the reserve head in the first and last tenth of a second only,
  // and none on the write head.
  constexpr std::uint64_t kS = 1'000'000'000;
  // One every millisecond there, so every slice (1/300 s) of those spans has some.
  for (std::uint64_t i = 0; i < 100; ++i) {
    Add(Rec(kSleep, i * kS / 1000, {0, 7, 100, 50, 1}));
    Add(Rec(kSleep, kS - i * kS / 1000, {0, 7, 100, 50, 1}));
  }
  ASSERT_TRUE(plot_.Draw(Options()).ok());
  const std::vector<Block> blocks = Blocks(dir_ / "grant_waits.dat");
  ASSERT_EQ(blocks.size(), 1u) << "only the series with events";
  EXPECT_EQ(blocks[0].heading, "# index 0: seconds sleeps_reserve/s");
  EXPECT_GE(blocks[0].rows.size(), 60u);
  EXPECT_EQ(blocks[0].breaks, 1) << "one break, over the 0.8 s without sleeps:\n"
                                 << ReadFile(dir_ / "grant_waits.dat");
  for (const std::string& row : blocks[0].rows) EXPECT_EQ(row.find("NaN"), std::string::npos) << row;
}

TEST_F(TracePlotTest, FuseLatencyKeepsTheOpcodesOfMostTotalTimeAndNamesTheOthers) {
  if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed (scripts/setup.sh installs gnuplot-nox)";
  // Nine opcodes: "lookup" the most frequent (1,000 of 1 us), "write" once
  // but 10 ms; seven more of 2 ms each once.  The ninth by total time is lookup
  // (1 ms), so it is the one left out.
  EventTable t = Table();
  const char* more[] = {"getattr", "create", "fsync", "unlink", "rename", "mkdir", "setattr"};
  std::uint16_t id = 100;
  for (const char* op : more) {
    ASSERT_TRUE(t.Add(EventInfo{.id = id, .subsystem = "fs", .name = std::string(op) + "_exit",
                                .fields = {{"ino"}, {"err"}, {"latency_ns"}}})
                    .ok());
    plot_.Add(Rec(id++, 10, {1, 0, 2'000'000}), t);
  }
  for (int i = 0; i < 1000; ++i) plot_.Add(Rec(kLookupExit, 20, {1, 0, 1000}), t);
  plot_.Add(Rec(kWriteExit, 30, {1, 0, 10'000'000}), t);
  auto report = plot_.Draw(Options());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const auto lat = DataRows(dir_ / "fuse_latency.dat");
  ASSERT_FALSE(lat.empty());
  EXPECT_EQ(lat[0].rfind("latency_us write ", 0), 0u) << "the most total time first: " << lat[0];
  EXPECT_EQ(lat[0].find("lookup"), std::string::npos) << lat[0];
  EXPECT_NE(ReadFile(dir_ / "plot.gp").find("(left out: lookup)"), std::string::npos);
  ASSERT_EQ(report->drawn.size(), 1u);
  EXPECT_NE(report->drawn[0].what.find("left out: lookup"), std::string::npos) << report->drawn[0].what;
}

TEST_F(TracePlotTest, TheAilPushTargetIsDrawnWhereItIsInTheLog) {
  if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed (scripts/setup.sh installs gnuplot-nox)";
  EventTable t;
  ASSERT_TRUE(t.Add(EventInfo{.id = 1, .subsystem = "log", .name = "ail_push", .kind = EventKind::kInstant,
                              .fields = {{"target"}, {"pushed"}, {"pinned"}, {"busy"}}})
                  .ok());
  // Cycle 3, sector 4096: 2 MiB into the log.
  plot_.Add(Rec(1, 1000, {(3ull << 32) | 4096, 5, 0, 0}), t);
  auto report = plot_.Draw(Options());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(DataRows(dir_ / "ail_target.dat"), (std::vector<std::string>{"0.000000 2.0000"}));
  EXPECT_NE(ReadFile(dir_ / "plot.gp").find("title 'AIL push target offset'"), std::string::npos);
}

TEST_F(TracePlotTest, TheLogsSizeIsALineWhenTheTraceCarriesIt) {
  if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed (scripts/setup.sh installs gnuplot-nox)";
  EventTable t;
  ASSERT_TRUE(t.Add(EventInfo{.id = 1, .subsystem = "journal", .name = "grant_bytes", .kind = EventKind::kCounter,
                              .fields = {{"reserve"}, {"write"}, {"tail_space"}, {"log_bytes"}}})
                  .ok());
  for (std::uint64_t i = 0; i < 10; ++i) plot_.Add(Rec(1, i * 1000, {i << 20, i << 20, 1 << 20, 16 << 20}), t);
  auto report = plot_.Draw(Options());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const std::string gp = ReadFile(dir_ / "plot.gp");
  EXPECT_NE(gp.find("16.0000 with lines lw 2 lc rgb 'black' dt 3 title 'log size'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("title 'write grant head (dashed)'"), std::string::npos) << gp;
  EXPECT_NE(report->drawn[0].what.find("a 16.00 MiB log"), std::string::npos) << report->drawn[0].what;
}

TEST_F(TracePlotTest, LeavesOutFiguresWithoutTheirEventsAndSaysWhy) {
  if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed (scripts/setup.sh installs gnuplot-nox)";
  for (std::uint64_t i = 0; i < 10; ++i) Add(Rec(kGrantBytes, i * 1000, {i, i, i}));
  auto report = plot_.Draw(Options());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->drawn.size(), 1u);
  EXPECT_EQ(report->drawn[0].file, "log_space.png");
  ASSERT_EQ(report->skipped.size(), 4u);
  EXPECT_EQ(report->skipped[0].file, "grant_waits.png");
  EXPECT_NE(report->skipped[0].what.find("never ran out of space"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "fuse_latency.png"));
}

TEST_F(TracePlotTest, AnEventOfAKnownNameWithOtherFieldsIsNotPlotted) {
  Add(Rec(kWrongFields, 10, {1}));
  EXPECT_EQ(plot_.used_records(), 0u);
  auto report = plot_.Draw(Options());
  EXPECT_EQ(report.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TracePlotTest, ATraceWithoutAnyPlottedEventIsAnErrorThatSaysWhatToRecord) {
  Add(Rec(kOther, 10, {1, 2}));
  auto report = plot_.Draw(Options());
  ASSERT_EQ(report.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(report.status().message().find("journal, log and fs"), std::string::npos);
}

TEST_F(TracePlotTest, AMissingGnuplotIsNotFoundAndNamesThePackage) {
  AddEverything();
  auto report = plot_.Draw(Options("/nonexistent/gnuplot"));
  ASSERT_EQ(report.status().code(), StatusCode::kNotFound);
  EXPECT_NE(report.status().message().find("gnuplot-nox"), std::string::npos);
}

TEST_F(TracePlotTest, AFailingGnuplotIsAnIoErrorWithItsOutput) {
  AddEverything();
  auto report = plot_.Draw(Options("false"));
  ASSERT_EQ(report.status().code(), StatusCode::kIoError);
  EXPECT_NE(report.status().message().find("exit 1"), std::string::npos);
}

TEST_F(TracePlotTest, AnOutputPathThatIsAFileIsAnIoError) {
  AddEverything();
  std::ofstream(dir_ / "file") << "x";
  auto report = plot_.Draw({.out_dir = (dir_ / "file").string(), .title = "", .when = "", .gnuplot = "gnuplot"});
  ASSERT_EQ(report.status().code(), StatusCode::kIoError);
  EXPECT_NE(report.status().message().find("not a directory"), std::string::npos);
}

TEST_F(TracePlotTest, LongSeriesAreThinnedToTheirMaximaPerSlice) {
  if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed (scripts/setup.sh installs gnuplot-nox)";
  constexpr std::uint64_t kN = 50'000;
  for (std::uint64_t i = 0; i < kN; ++i)
    Add(Rec(kGrantBytes, i * 1000, {i == 31'337 ? 64ull << 20 : 1ull << 20, 0, 0}));
  ASSERT_TRUE(plot_.Draw(Options()).ok());
  const auto rows = DataRows(dir_ / "log_space.dat");
  EXPECT_LE(rows.size(), TracePlot::kMaxPoints);
  bool peak = false;
  for (const std::string& r : rows) peak |= r.find(" 64.0000 ") != std::string::npos;
  EXPECT_TRUE(peak) << "the one 64 MiB sample was thinned away";
}

TEST_F(TracePlotTest, RecordsOfIdsNotYetDefinedAreSkippedUntilTheTableDefinesThem) {
  EventTable empty;
  plot_.Add(Rec(kGrantBytes, 10, {1, 2, 3}), empty);
  EXPECT_EQ(plot_.used_records(), 0u);
  Add(Rec(kGrantBytes, 20, {1, 2, 3}));
  EXPECT_EQ(plot_.used_records(), 1u);
}

}  // namespace
}  // namespace trace_plot_test
}  // namespace walfs::tracing
