// Specs of the /.walfs control directory model: the tree and its attributes,
// the tracefs files (trace, trace_pipe, tracing_on, enable, format), the
// options, stats, and per-handle state.  The tracer is process-wide: every
// test starts and ends with Tracer::ResetForTesting(), which restores the
// options, disables every event and turns tracing on.
#include "mount/control_dir.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/mount/control_dir_fixture.h"
#include "tracing/reader.h"
#include "tracing/trace_file.h"
#include "tracing/tracer.h"

namespace walfs::mount {
namespace {

using tracing::Catalogue;
using tracing::EventKind;
using tracing::FieldKind;

WALFS_TRACE_EVENT(kPing, "test_control", "ping", EventKind::kInstant, {"seq"},
                  {"value", FieldKind::kHex});
WALFS_TRACE_EVENT(kPong, "test_control", "pong", EventKind::kInstant, {"delta", FieldKind::kI64});

testing::AssertionResult Has(const std::vector<std::string>& names, std::string_view name) {
  for (const auto& n : names)
    if (n == name) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "no " << name;
}

TEST_F(ControlDirTest, TheDirectoryIsFoundByItsReservedNameInTheMountRoot) {
  Result<ControlDir::Attr> a = dir_.Lookup(kMountRoot, ControlDir::kName);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->ino, ControlDir::root_ino());
  EXPECT_TRUE(ControlDir::IsControlIno(a->ino));
  EXPECT_FALSE(ControlDir::IsControlIno(kMountRoot));
  EXPECT_TRUE(S_ISDIR(a->mode));
  EXPECT_EQ(a->nlink, 4u);  // ., its entry in the root, events/.., options/..
  EXPECT_GT(a->time_ns, 0);
  EXPECT_EQ(dir_.Lookup(kMountRoot, "walfs").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(dir_.Lookup(kMountRoot, "walfs").status().ToErrno(), ENOENT);
}

TEST_F(ControlDirTest, EveryLevelLooksUpGetsAttributesAndLists) {
  for (const char* n : {".", "..", "README", "stats", "trace", "trace_pipe", "trace_pipe_raw", "tracing_on",
                        "events", "options"})
    EXPECT_TRUE(Has(Names(""), n));
  for (const char* n : {"enable", "test_control"}) EXPECT_TRUE(Has(Names("events"), n));
  for (const char* n : {"enable", "ping", "pong"})
    EXPECT_TRUE(Has(Names("events/test_control"), n));
  for (const char* n : {"enable", "format"})
    EXPECT_TRUE(Has(Names("events/test_control/ping"), n));
  for (const char* n : {"wakeup", "wakeup_delay_us", "buffer_percent", "safety_timeout_ms",
                        "recursion", "overwrite", "buffer_size_kb", "trace_clock", "grant_wake"})
    EXPECT_TRUE(Has(Names("options"), n));

  // Every entry's attributes agree with GetAttr and Lookup.
  for (const char* path : {"", "events", "events/test_control", "events/test_control/ping",
                           "options"}) {
    const std::uint64_t ino = Ino(path);
    auto entries = dir_.ReadDir(ino);
    ASSERT_TRUE(entries.ok());
    ASSERT_GE(entries->size(), 2u);
    EXPECT_EQ((*entries)[0].attr.ino, ino);
    for (const auto& e : *entries) {
      if (e.name == "." || e.name == "..") continue;
      auto looked = dir_.Lookup(ino, e.name);
      auto got = dir_.GetAttr(e.attr.ino);
      ASSERT_TRUE(looked.ok() && got.ok()) << path << "/" << e.name;
      EXPECT_EQ(looked->ino, e.attr.ino);
      EXPECT_EQ(got->mode, e.attr.mode);
      EXPECT_EQ(got->nlink, e.attr.nlink);
      EXPECT_EQ(got->size, 0u);
      if (S_ISREG(e.attr.mode)) {
        EXPECT_EQ(e.attr.nlink, 1u) << e.name;
      }
    }
  }
  EXPECT_EQ(dir_.GetAttr(Ino("stats"))->mode, S_IFREG | 0444u);
  EXPECT_EQ(dir_.GetAttr(Ino("trace"))->mode, S_IFREG | 0600u);
  EXPECT_EQ(dir_.GetAttr(Ino("trace_pipe"))->mode, S_IFREG | 0400u);
  EXPECT_EQ(dir_.GetAttr(Ino("tracing_on"))->mode, S_IFREG | 0644u);
  EXPECT_EQ(dir_.GetAttr(Ino("events/test_control"))->nlink, 4u);  // ping, pong
  // .. of .walfs is the mount root.
  auto root = dir_.ReadDir(ControlDir::root_ino());
  EXPECT_EQ((*root)[1].name, "..");
  EXPECT_EQ((*root)[1].attr.ino, kMountRoot);
}

TEST_F(ControlDirTest, FilesAreNotDirectoriesAndMissingNodesAreNotFound) {
  const std::uint64_t stats = Ino("stats");
  EXPECT_EQ(dir_.ReadDir(stats).status().ToErrno(), ENOTDIR);
  EXPECT_EQ(dir_.Lookup(stats, "x").status().ToErrno(), ENOTDIR);
  EXPECT_EQ(dir_.Lookup(ControlDir::root_ino(), "nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(dir_.GetAttr(kControlInoBase + 1'000'000).status().ToErrno(), ENOENT);
  EXPECT_EQ(dir_.Open(Ino("events"), O_RDONLY, kRoot).status().ToErrno(), EISDIR);
}

TEST_F(ControlDirTest, ReadOnlyFilesRefuseWriteAccessAndHandlesTheirDirection) {
  for (const char* path : {"stats", "README", "trace_pipe", "events/test_control/ping/format"}) {
    Status s = dir_.Open(Ino(path), O_WRONLY, kRoot).status();
    EXPECT_EQ(s.code(), StatusCode::kPermission) << path;
    EXPECT_EQ(s.ToErrno(), EACCES) << path;
    EXPECT_EQ(dir_.Truncate(Ino(path), kRoot).ToErrno(), EACCES) << path;
  }
  EXPECT_EQ(dir_.Open(Ino("trace_pipe"), O_RDWR, kRoot).status().ToErrno(), EACCES);
  const std::uint64_t ro = OpenOk("tracing_on", O_RDONLY);
  EXPECT_EQ(dir_.Write(ro, 0, "0").status().ToErrno(), EBADF);
  const std::uint64_t wo = OpenOk("tracing_on", O_WRONLY);
  EXPECT_EQ(dir_.Read(wo, 0, 10, false).status().ToErrno(), EBADF);
  dir_.Release(ro);
  dir_.Release(wo);
  EXPECT_EQ(dir_.Read(ro, 0, 10, false).status().ToErrno(), EBADF);  // released
  EXPECT_TRUE(Catalogue::Get().tracing_on());
}

TEST_F(ControlDirTest, StatsHasTheMountsTextAndATracerSection) {
  ASSERT_TRUE(Catalogue::Get().SetEnabled("test_control", "ping", true).ok());
  WALFS_TRACE(kPing, 1, 2);
  WALFS_TRACE(kPing, 3, 4);
  const std::string stats = Cat("stats");
  EXPECT_EQ(stats.rfind("journal:\n  log_forces: 3\ntracer:\n", 0), 0u) << stats;
  for (const char* want : {"  tracing_on: 1\n", "  entries: 2\n", "  overruns: 0\n",
                           "  lost_unattached: 0\n", "  reader_sleeps: 0\n", "  rings: 1\n",
                           " capacity=4096 unread=2 entries=2 "})
    EXPECT_NE(stats.find(want), std::string::npos) << want << " in\n" << stats;
}

TEST_F(ControlDirTest, StatsIsASnapshotTakenAtOpenAndReadsByOffset) {
  ASSERT_TRUE(Catalogue::Get().SetEnabled("test_control", "ping", true).ok());
  WALFS_TRACE(kPing, 1, 2);
  const std::uint64_t h = OpenOk("stats", O_RDONLY);
  WALFS_TRACE(kPing, 3, 4);  // after the open: not in this handle's text
  std::string pieces;
  for (;;) {
    auto r = dir_.Read(h, pieces.size(), 7, false);
    ASSERT_TRUE(r.ok());
    if (r->empty()) break;
    EXPECT_LE(r->size(), 7u);
    pieces += *r;
  }
  EXPECT_EQ(*dir_.Read(h, 0, 1 << 20, false), pieces);
  EXPECT_NE(pieces.find("  entries: 1\n"), std::string::npos) << pieces;
  dir_.Release(h);
  EXPECT_NE(Cat("stats").find("  entries: 2\n"), std::string::npos);
}

TEST_F(ControlDirTest, EnableFilesSwitchEventsAndTraceShowsTheirRecords) {
  WALFS_TRACE(kPing, 1, 0xa);
  EXPECT_TRUE(EventLines(Cat("trace")).empty());
  EXPECT_EQ(Cat("events/test_control/ping/enable"), "0\n");
  EXPECT_EQ(Cat("events/test_control/enable"), "0\n");

  ASSERT_TRUE(Echo("events/test_control/ping/enable", "1\n").ok());
  EXPECT_TRUE(kPing.enabled());
  EXPECT_FALSE(kPong.enabled());
  EXPECT_EQ(Cat("events/test_control/ping/enable"), "1\n");
  EXPECT_EQ(Cat("events/test_control/enable"), "X\n");  // mixed
  WALFS_TRACE(kPing, 7, 0xff);
  WALFS_TRACE(kPong, -3);
  const std::string trace = Cat("trace");
  EXPECT_EQ(trace.rfind("# tracer: nop\n", 0), 0u) << trace;
  EXPECT_NE(trace.find("# entries-in-buffer/entries-written: 1/1 "), std::string::npos) << trace;
  auto lines = EventLines(trace);
  ASSERT_EQ(lines.size(), 1u) << trace;
  EXPECT_NE(lines[0].find(": test_control_ping: seq=7 value=0xff"), std::string::npos) << lines[0];

  ASSERT_TRUE(Echo("events/test_control/enable", "1").ok());
  EXPECT_TRUE(kPong.enabled());
  EXPECT_EQ(Cat("events/test_control/enable"), "1\n");
  WALFS_TRACE(kPong, -3);
  lines = EventLines(Cat("trace"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("test_control_pong: delta=-3"), std::string::npos) << lines[1];

  ASSERT_TRUE(Echo("events/enable", "0\n").ok());
  EXPECT_FALSE(kPing.enabled());
  EXPECT_EQ(Cat("events/enable"), "0\n");
  EXPECT_EQ(Cat("events/test_control/enable"), "0\n");
  ASSERT_TRUE(Echo("events/enable", "1\n").ok());
  EXPECT_TRUE(kPong.enabled());
  EXPECT_EQ(Cat("events/enable"), "1\n");

  Status bad = Echo("events/test_control/ping/enable", "yes");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.ToErrno(), EINVAL);
  EXPECT_TRUE(kPing.enabled());
}

TEST_F(ControlDirTest, TraceIsNotConsumedAndAWriteOrTruncateClearsIt) {
  ASSERT_TRUE(Catalogue::Get().SetEnabled("test_control", "ping", true).ok());
  WALFS_TRACE(kPing, 1, 0);
  WALFS_TRACE(kPing, 2, 0);
  EXPECT_EQ(EventLines(Cat("trace")).size(), 2u);
  EXPECT_EQ(EventLines(Cat("trace")), EventLines(Cat("trace")));

  ASSERT_TRUE(Echo("trace", "").ok());  // : > trace (O_TRUNC, an empty write)
  EXPECT_TRUE(EventLines(Cat("trace")).empty());
  WALFS_TRACE(kPing, 3, 0);
  const std::uint64_t h = OpenOk("trace", O_WRONLY);  // no O_TRUNC: the write clears
  EXPECT_EQ(EventLines(Cat("trace")).size(), 1u);
  ASSERT_TRUE(dir_.Write(h, 0, "\n").ok());
  dir_.Release(h);
  EXPECT_TRUE(EventLines(Cat("trace")).empty());
  WALFS_TRACE(kPing, 4, 0);
  ASSERT_TRUE(dir_.Truncate(Ino("trace"), kRoot).ok());  // setattr(size 0) without atomic_o_trunc
  EXPECT_TRUE(EventLines(Cat("trace")).empty());
  EXPECT_TRUE(dir_.Truncate(Ino("tracing_on"), kRoot).ok());
  EXPECT_EQ(dir_.Truncate(Ino("events"), kRoot).ToErrno(), EISDIR);
}

TEST_F(ControlDirTest, TracingOnStopsAndStartsRecording) {
  ASSERT_TRUE(Catalogue::Get().SetEnabled("test_control", "ping", true).ok());
  EXPECT_EQ(Cat("tracing_on"), "1\n");
  ASSERT_TRUE(Echo("tracing_on", "0\n").ok());
  EXPECT_EQ(Cat("tracing_on"), "0\n");
  EXPECT_FALSE(Catalogue::Get().tracing_on());
  WALFS_TRACE(kPing, 1, 0);
  EXPECT_TRUE(EventLines(Cat("trace")).empty());
  EXPECT_EQ(Echo("tracing_on", "2").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Cat("tracing_on"), "0\n");
  ASSERT_TRUE(Echo("tracing_on", "1").ok());
  WALFS_TRACE(kPing, 2, 0);
  auto lines = EventLines(Cat("trace"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("seq=2"), std::string::npos);
}

TEST_F(ControlDirTest, AValueFileReadFromTheStartAgainShowsAWriteOnTheSameHandle) {
  const std::uint64_t h = OpenOk("tracing_on", O_RDWR);
  EXPECT_EQ(*dir_.Read(h, 0, 64, false), "1\n");
  EXPECT_EQ(*dir_.Read(h, 2, 64, false), "");
  ASSERT_TRUE(dir_.Write(h, 0, "0").ok());
  EXPECT_EQ(*dir_.Read(h, 0, 64, false), "0\n");
  dir_.Release(h);
}

TEST_F(ControlDirTest, TracePipeConsumesWhatItReturns) {
  ASSERT_TRUE(Catalogue::Get().SetEnabled("test_control", "ping", true).ok());
  for (int i = 0; i < 3; ++i) WALFS_TRACE(kPing, i, 0);
  const std::uint64_t h = OpenOk("trace_pipe", O_RDONLY);
  auto r = dir_.Read(h, 0, 1 << 16, false);
  ASSERT_TRUE(r.ok());
  auto lines = Lines(*r);
  ASSERT_EQ(lines.size(), 3u) << *r;
  for (int i = 0; i < 3; ++i)
    EXPECT_NE(lines[i].find("test_control_ping: seq=" + std::to_string(i)), std::string::npos);
  // Consumed: neither this handle nor a later one sees the lines again.
  EXPECT_EQ(dir_.Read(h, 0, 1 << 16, true).status().code(), StatusCode::kWouldBlock);
  dir_.Release(h);
  const std::uint64_t other = OpenOk("trace_pipe", O_RDONLY);
  EXPECT_EQ(dir_.Read(other, 0, 1 << 16, true).status().code(), StatusCode::kWouldBlock);
  EXPECT_TRUE(EventLines(Cat("trace")).empty());
  dir_.Release(other);
}

TEST_F(ControlDirTest, TracePipeRawIsATraceFileStreamInWhateverSizeItIsRead) {
  ASSERT_TRUE(Catalogue::Get().SetEnabled("test_control", "ping", true).ok());
  for (int i = 0; i < 300; ++i) WALFS_TRACE(kPing, i, 0);
  Result<ControlDir::Opened> o = dir_.Open(Ino("trace_pipe_raw"), O_RDONLY | O_NONBLOCK, kRoot);
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->nonseekable);
  EXPECT_TRUE(dir_.Readable(o->handle));
  // dd bs=1000: reads end anywhere, even inside a section.
  std::string bytes;
  for (;;) {
    Result<std::string> r = dir_.Read(o->handle, 0, 1000, true);
    if (!r.ok()) {
      EXPECT_EQ(r.status().ToErrno(), EAGAIN);
      break;
    }
    EXPECT_LE(r->size(), 1000u);
    bytes += *r;
  }
  EXPECT_FALSE(dir_.Readable(o->handle));
  dir_.Release(o->handle);
  auto file = tracing::TraceFileReader::FromBuffer(bytes);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  std::vector<tracing::TraceEntry> chunk, all;
  while ((*file)->ReadChunk(&chunk).ok() && !chunk.empty()) all.insert(all.end(), chunk.begin(), chunk.end());
  EXPECT_FALSE((*file)->torn_tail());
  ASSERT_EQ(all.size(), 300u);
  for (int i = 0; i < 300; ++i) EXPECT_EQ(all[i].record.fields[0], static_cast<std::uint64_t>(i));
  ASSERT_NE((*file)->events().ById(kPing.id()), nullptr);
  EXPECT_EQ((*file)->events().ById(kPing.id())->full_name(), "test_control_ping");
  // Consumed: the text pipe has nothing left.
  const std::uint64_t text = OpenOk("trace_pipe", O_RDONLY);
  EXPECT_EQ(dir_.Read(text, 0, 4096, true).status().code(), StatusCode::kWouldBlock);
  dir_.Release(text);
}

TEST_F(ControlDirTest, ANonblockingReadOfAnEmptyPipeIsWouldBlock) {
  Result<ControlDir::Opened> o = dir_.Open(Ino("trace_pipe"), O_RDONLY | O_NONBLOCK, kRoot);
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->nonseekable);
  Status s = dir_.Read(o->handle, 0, 4096, true).status();
  EXPECT_EQ(s.code(), StatusCode::kWouldBlock);
  EXPECT_EQ(s.ToErrno(), EAGAIN);
  EXPECT_FALSE(dir_.Readable(o->handle));
  dir_.Release(o->handle);
}

TEST_F(ControlDirTest, TracePipeBlocksUntilAnEventArrivesFromAnotherThread) {
  ASSERT_TRUE(Catalogue::Get().SetEnabled("test_control", "ping", true).ok());
  const std::uint64_t h = OpenOk("trace_pipe", O_RDONLY);
  std::atomic<bool> emitted{false};
  std::string got;
  bool emitted_before_return = false;
  const std::uint64_t sleeps = Tracer::Get().Stats().reader_sleeps;
  std::thread reader([&] {
    auto r = dir_.Read(h, 0, 4096, false);
    emitted_before_return = emitted.load();
    if (r.ok()) got = *r;
  });
  AwaitReaderSleep(sleeps);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  emitted.store(true);
  WALFS_TRACE(kPing, 42, 0);
  reader.join();
  EXPECT_TRUE(emitted_before_return);
  EXPECT_NE(got.find("test_control_ping: seq=42"), std::string::npos) << got;
  dir_.Release(h);
}

TEST_F(ControlDirTest, InterruptReadersReleasesABlockedReader) {
  const std::uint64_t h = OpenOk("trace_pipe", O_RDONLY);
  std::atomic<bool> returned{false};
  Result<std::string> result = Status::Internal("not read");
  const std::uint64_t sleeps = Tracer::Get().Stats().reader_sleeps;
  std::thread reader([&] {
    result = dir_.Read(h, 0, 4096, false);
    returned.store(true);
  });
  AwaitReaderSleep(sleeps);
  EXPECT_FALSE(returned.load());
  const auto start = std::chrono::steady_clock::now();
  dir_.InterruptReaders();
  reader.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            std::chrono::nanoseconds(ControlDir::kWaitSliceNs) + std::chrono::seconds(1));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(*result, "");  // EOF: cat ends
  dir_.Release(h);
}

TEST_F(ControlDirTest, ASmallReadReturnsWholeLinesAndTheRestComesNext) {
  ASSERT_TRUE(Catalogue::Get().SetEnabled("test_control", "ping", true).ok());
  for (int i = 0; i < 10; ++i) WALFS_TRACE(kPing, i, 0);
  const std::uint64_t h = OpenOk("trace_pipe", O_RDONLY);
  std::string all;
  int reads = 0;
  for (;;) {
    auto r = dir_.Read(h, 12345 /* ignored */, 150, true);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kWouldBlock);
      break;
    }
    ++reads;
    EXPECT_LE(r->size(), 150u);
    ASSERT_FALSE(r->empty());
    EXPECT_EQ(r->back(), '\n') << *r;
    all += *r;
  }
  EXPECT_GE(reads, 5);  // a line is ~70 bytes: at most two per read
  auto lines = Lines(all);
  ASSERT_EQ(lines.size(), 10u) << all;
  for (int i = 0; i < 10; ++i)
    EXPECT_NE(lines[i].find("seq=" + std::to_string(i) + " "), std::string::npos) << lines[i];
  dir_.Release(h);
}

TEST_F(ControlDirTest, ReadableSaysWhetherAPipeReadWouldReturnAtOnce) {
  ASSERT_TRUE(Catalogue::Get().SetEnabled("test_control", "ping", true).ok());
  const std::uint64_t pipe = OpenOk("trace_pipe", O_RDONLY);
  const std::uint64_t stats = OpenOk("stats", O_RDONLY);
  EXPECT_FALSE(dir_.Readable(pipe));
  EXPECT_TRUE(dir_.Readable(stats));
  WALFS_TRACE(kPing, 5, 0);
  EXPECT_TRUE(dir_.Readable(pipe));
  // The event Readable pulled in belongs to this handle now.
  auto r = dir_.Read(pipe, 0, 4096, true);
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->find("seq=5"), std::string::npos);
  EXPECT_FALSE(dir_.Readable(pipe));
  dir_.Release(pipe);
  dir_.Release(stats);
}

TEST_F(ControlDirTest, HandlesAreIndependent) {
  ASSERT_TRUE(Catalogue::Get().SetEnabled("test_control", "ping", true).ok());
  WALFS_TRACE(kPing, 1, 0);
  const std::uint64_t early = OpenOk("trace", O_RDONLY);
  WALFS_TRACE(kPing, 2, 0);
  const std::uint64_t late = OpenOk("trace", O_RDONLY);
  EXPECT_EQ(EventLines(*dir_.Read(early, 0, 1 << 16, false)).size(), 1u);
  EXPECT_EQ(EventLines(*dir_.Read(late, 0, 1 << 16, false)).size(), 2u);
  dir_.Release(late);
  EXPECT_EQ(EventLines(*dir_.Read(early, 0, 1 << 16, false)).size(), 1u);
  dir_.Release(early);

  // One pipe at a time takes the events; a second is refused, never split.
  const std::uint64_t a = OpenOk("trace_pipe", O_RDONLY);
  EXPECT_EQ(dir_.Open(Ino("trace_pipe"), O_RDONLY, kRoot).status().ToErrno(), EBUSY);
  WALFS_TRACE(kPing, 3, 0);
  auto first = dir_.Read(a, 0, 4096, true);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(Lines(*first).size(), 3u);
  dir_.Release(a);
}

TEST_F(ControlDirTest, FormatDescribesTheRecordLayout) {
  const std::string f = Cat("events/test_control/ping/format");
  EXPECT_EQ(f.rfind("name: ping\nID: " + std::to_string(kPing.id()) + "\nformat:\n", 0), 0u) << f;
  EXPECT_NE(f.find("\tfield:u64 common_timestamp;\toffset:8;\tsize:8;\tsigned:0;\n"),
            std::string::npos);
  EXPECT_NE(f.find("\tfield:u64 seq;\toffset:16;\tsize:8;\tsigned:0;\n"), std::string::npos);
  EXPECT_NE(f.find("\tfield:u64 value;\toffset:24;\tsize:8;\tsigned:0;\n"), std::string::npos);
  EXPECT_NE(f.find("print fmt: \"seq=%llu value=0x%llx\", REC->seq, REC->value\n"),
            std::string::npos)
      << f;
  EXPECT_NE(Cat("events/test_control/pong/format").find("\tfield:s64 delta;"), std::string::npos);
}

TEST_F(ControlDirTest, OptionsReadTheTracersValuesAndAcceptValidWrites) {
  EXPECT_EQ(Cat("options/wakeup"), "deferred\n");
  EXPECT_EQ(Cat("options/wakeup_delay_us"), "2000\n");
  EXPECT_EQ(Cat("options/buffer_percent"), "50\n");
  EXPECT_EQ(Cat("options/safety_timeout_ms"), "1000\n");
  EXPECT_EQ(Cat("options/recursion"), "safe\n");
  EXPECT_EQ(Cat("options/overwrite"), "1\n");
  EXPECT_EQ(Cat("options/buffer_size_kb"), "256\n");
  const std::string clock = fmt::format("[{}]", tracing::ClockKindName(tracing::DefaultClockKind()));
  EXPECT_NE(Cat("options/trace_clock").find(clock), std::string::npos) << "the default clock is current";

  ASSERT_TRUE(Echo("options/wakeup", "immediate\n").ok());
  ASSERT_TRUE(Echo("options/wakeup_delay_us", "500\n").ok());
  ASSERT_TRUE(Echo("options/buffer_percent", "0").ok());
  ASSERT_TRUE(Echo("options/safety_timeout_ms", "250\n").ok());
  ASSERT_TRUE(Echo("options/recursion", "context\n").ok());
  ASSERT_TRUE(Echo("options/overwrite", "0\n").ok());
  ASSERT_TRUE(Echo("options/buffer_size_kb", "64\n").ok());
  ASSERT_TRUE(Echo("options/trace_clock", "mono\n").ok());
  const tracing::TracerOptions o = Tracer::Get().options();
  EXPECT_EQ(o.wakeup, tracing::WakeupMode::kImmediate);
  EXPECT_EQ(o.wakeup_delay_us, 500u);
  EXPECT_EQ(o.buffer_percent, 0u);
  EXPECT_EQ(o.safety_timeout_ms, 250u);
  EXPECT_EQ(o.recursion, tracing::RecursionMode::kContext);
  EXPECT_FALSE(o.overwrite);
  EXPECT_EQ(o.buffer_size_kb, 64u);
  EXPECT_EQ(o.clock, tracing::ClockKind::kMonotonic);
  EXPECT_EQ(Cat("options/wakeup"), "immediate\n");
  EXPECT_EQ(Cat("options/buffer_size_kb"), "64\n");
  EXPECT_EQ(Cat("options/overwrite"), "0\n");
}

TEST_F(ControlDirTest, InvalidOptionWritesAreRejectedAndLeaveTheValue) {
  const tracing::TracerOptions before = Tracer::Get().options();
  const std::pair<const char*, const char*> bad[] = {
      {"options/wakeup", "sometimes"},     {"options/wakeup", ""},
      {"options/wakeup_delay_us", "abc"},  {"options/wakeup_delay_us", "-1"},
      {"options/wakeup_delay_us", "1 2"},  {"options/wakeup_delay_us", "99999999999"},
      {"options/wakeup_delay_us", "20000000"},  // over Validate()'s 10 s
      {"options/buffer_percent", "101"},   {"options/safety_timeout_ms", "0x10"},
      {"options/recursion", "slow"},       {"options/overwrite", "2"},
      {"options/buffer_size_kb", "1"},     {"options/trace_clock", "wall"},
      {"options/grant_wake", "eager"},
  };
  for (const auto& [path, value] : bad) {
    const std::string was = Cat(path);
    Status s = Echo(path, value);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << path << " <- '" << value << "'";
    EXPECT_EQ(s.ToErrno(), EINVAL) << path;
    EXPECT_EQ(Cat(path), was) << path;
  }
  const tracing::TracerOptions after = Tracer::Get().options();
  EXPECT_EQ(after.wakeup, before.wakeup);
  EXPECT_EQ(after.wakeup_delay_us, before.wakeup_delay_us);
  EXPECT_EQ(after.buffer_percent, before.buffer_percent);
  EXPECT_EQ(after.buffer_size_kb, before.buffer_size_kb);
  EXPECT_EQ(grant_wake_sets_, 0);
}

TEST_F(ControlDirTest, TheTraceAndItsControlsAreTheOwnersAloneWhateverTheModeBitsSay) {
  ControlDir::Sources s = MakeSources();
  s.owner_uid = 1000;
  s.owner_gid = 1000;
  s.files.push_back(
      {.name = "messages", .read = [] { return std::string("m\n"); }, .write = {}, .help = {}, .owner_reads_only = true});
  s.files.push_back({.name = "sync",
                     .read = [] { return std::string(); },
                     .write = [](std::string_view) { return Status::Ok(); },
                     .help = {},
                     .anyone_writes = true});
  ControlDir owned(std::move(s));
  auto ino = [&](std::string_view name) { return owned.Lookup(ControlDir::root_ino(), name)->ino; };
  constexpr std::uint32_t kOwner = 1000, kStranger = 1001;
  for (const char* name : {"trace", "trace_pipe", "trace_pipe_raw", "messages"}) {
    EXPECT_EQ(owned.Open(ino(name), O_RDONLY, kStranger).status().ToErrno(), EACCES) << name;
    EXPECT_EQ(owned.GetAttr(ino(name))->mode & 0044u, 0u) << name << " must not look world-readable";
    EXPECT_EQ(owned.GetAttr(ino(name))->uid, kOwner) << name;
  }
  for (const char* name : {"trace", "tracing_on"}) {
    EXPECT_EQ(owned.Open(ino(name), O_WRONLY, kStranger).status().ToErrno(), EACCES) << name;
    EXPECT_EQ(owned.Truncate(ino(name), kStranger).ToErrno(), EACCES) << name;
  }
  // What names no file stays readable; sync is anyone's, as sync(2).
  for (const char* name : {"stats", "README", "tracing_on"}) {
    auto h = owned.Open(ino(name), O_RDONLY, kStranger);
    EXPECT_TRUE(h.ok()) << name;
    if (h.ok()) owned.Release(h->handle);
  }
  auto sync = owned.Open(ino("sync"), O_WRONLY, kStranger);
  ASSERT_TRUE(sync.ok());
  owned.Release(sync->handle);
  // The owner and root may do everything.
  for (std::uint32_t uid : {kOwner, kRoot}) {
    auto h = owned.Open(ino("trace"), O_RDWR, uid);
    EXPECT_TRUE(h.ok()) << uid;
    if (h.ok()) owned.Release(h->handle);
  }
}

TEST_F(ControlDirTest, ASecondStreamReaderIsRefusedUntilTheFirstLetsGo) {
  const std::uint64_t first = OpenOk("trace_pipe", O_RDONLY | O_NONBLOCK);
  for (const char* path : {"trace_pipe", "trace_pipe_raw"})
    EXPECT_EQ(dir_.Open(Ino(path), O_RDONLY, kRoot).status().ToErrno(), EBUSY) << path;
  // The snapshot does not consume: it may be read beside the stream.
  const std::uint64_t snapshot = OpenOk("trace", O_RDONLY);
  dir_.Release(snapshot);
  dir_.Release(first);
  const std::uint64_t raw = OpenOk("trace_pipe_raw", O_RDONLY | O_NONBLOCK);
  EXPECT_EQ(dir_.Open(Ino("trace_pipe"), O_RDONLY, kRoot).status().ToErrno(), EBUSY);
  dir_.Release(raw);
}

TEST_F(ControlDirTest, GrantWakeGoesThroughTheMountsSources) {
  EXPECT_EQ(Cat("options/grant_wake"), "wakeq\n");
  ASSERT_TRUE(Echo("options/grant_wake", "inline\n").ok());
  EXPECT_EQ(grant_wake_, "inline");
  EXPECT_EQ(grant_wake_sets_, 1);
  EXPECT_EQ(Cat("options/grant_wake"), "inline\n");
  grant_wake_ = "waking";  // changed elsewhere: the file shows it
  EXPECT_EQ(Cat("options/grant_wake"), "waking\n");
}

TEST_F(ControlDirTest, GrantWakeIsReadOnlyWithoutASetterAndAbsentWithoutAGetter) {
  ControlDir::Sources s = MakeSources();
  s.set_grant_wake = nullptr;
  ControlDir ro(std::move(s));
  auto options = ro.Lookup(ControlDir::root_ino(), "options");
  ASSERT_TRUE(options.ok());
  auto gw = ro.Lookup(options->ino, "grant_wake");
  ASSERT_TRUE(gw.ok());
  EXPECT_EQ(gw->mode, S_IFREG | 0444u);
  EXPECT_EQ(ro.Open(gw->ino, O_WRONLY, kRoot).status().ToErrno(), EACCES);

  ControlDir::Sources bare;
  bare.tracer = &Tracer::Get();
  ControlDir none(std::move(bare));
  options = none.Lookup(ControlDir::root_ino(), "options");
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(none.Lookup(options->ino, "grant_wake").status().code(), StatusCode::kNotFound);
  // Without a stats source, stats is the tracer section alone.
  auto stats = none.Lookup(ControlDir::root_ino(), "stats");
  auto h = none.Open(stats->ino, O_RDONLY, kRoot);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(none.Read(h->handle, 0, 4096, false)->rfind("tracer:\n", 0), 0u);
  none.Release(h->handle);
}

TEST_F(ControlDirTest, EventsRegisteredLaterAppearInTheTree) {
  EXPECT_EQ(dir_.Lookup(Ino("events"), "test_late").status().code(), StatusCode::kNotFound);
  static WALFS_TRACE_EVENT(late, "test_late", "arrival", EventKind::kInstant, {"n"});
  const std::uint64_t ino = Ino("events/test_late/arrival/enable");
  ASSERT_NE(ino, 0u);
  ASSERT_TRUE(Echo("events/test_late/enable", "1").ok());
  EXPECT_TRUE(late.enabled());
  WALFS_TRACE(late, 9);
  EXPECT_NE(Cat("trace").find("test_late_arrival: n=9"), std::string::npos);
}

TEST_F(ControlDirTest, ReadmeListsTheFiles) {
  const std::string readme = Cat("README");
  for (const char* f : {"trace_pipe", "tracing_on", "events/enable", "options/grant_wake"})
    EXPECT_NE(readme.find(f), std::string::npos) << f;
}

}  // namespace
}  // namespace walfs::mount
