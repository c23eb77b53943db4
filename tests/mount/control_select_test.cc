// Specs of the control directory's event selection and markers
// (docs/control_dir.md): set_event (tracefs's one-file selection),
// events/<subsystem>/<event>/filter (applied before a record is written),
// and trace_marker (a user's line in the trace).
#include <fcntl.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/mount/control_dir_fixture.h"
#include "tracing/event.h"
#include "tracing/marker.h"
#include "tracing/reader.h"

namespace walfs::mount {
namespace {

using tracing::EventKind;

WALFS_TRACE_EVENT(kSelA, "test_select", "a", EventKind::kInstant, {"caller_pid"}, {"ino"});
WALFS_TRACE_EVENT(kSelB, "test_select", "b", EventKind::kInstant, {"seq"});
WALFS_TRACE_EVENT(kOtherC, "test_select_other", "c", EventKind::kInstant, {"seq"});

class ControlSelect : public ControlDirTest {
 protected:
  // echo VALUE >> PATH: no O_TRUNC.
  Status Append(std::string_view path, std::string_view value) {
    Result<ControlDir::Opened> h = dir_.Open(Ino(path), O_WRONLY | O_APPEND, kRoot);
    if (!h.ok()) return h.status();
    Result<std::size_t> n = dir_.Write(h->handle, 0, value, 4711);
    dir_.Release(h->handle);
    return n.ok() ? Status::Ok() : n.status();
  }
  // The event lines of a trace snapshot.
  std::vector<std::string> Trace() { return EventLines(Cat("trace")); }
};

TEST_F(ControlSelect, SetEventListsTheEnabledEventsOneALine) {
  EXPECT_EQ(Cat("set_event"), "");
  ASSERT_TRUE(Echo("events/test_select/b/enable", "1").ok());
  EXPECT_EQ(Cat("set_event"), "test_select:b\n");
}

TEST_F(ControlSelect, AWriteEnablesTheNamedEventsAndATruncatingOneStartsFromNone) {
  ASSERT_TRUE(Echo("events/test_select_other/c/enable", "1").ok());
  ASSERT_TRUE(Echo("set_event", "test_select:a test_select:b\n").ok());
  EXPECT_EQ(Cat("set_event"), "test_select:a\ntest_select:b\n") << "> first disabled test_select_other:c";
  ASSERT_TRUE(Append("set_event", "test_select_other:*").ok());
  EXPECT_EQ(Cat("set_event"), "test_select:a\ntest_select:b\ntest_select_other:c\n");
  ASSERT_TRUE(Append("set_event", "!test_select:*").ok());
  EXPECT_EQ(Cat("set_event"), "test_select_other:c\n");
  ASSERT_TRUE(Append("set_event", "test_select").ok()) << "a subsystem alone is all its events";
  EXPECT_EQ(Cat("events/test_select/enable"), "1\n");
  ASSERT_TRUE(Append("set_event", "!*:*").ok());
  EXPECT_EQ(Cat("set_event"), "");
}

TEST_F(ControlSelect, ANameThatMatchesNoEventIsEinvalAndChangesNothing) {
  ASSERT_TRUE(Append("set_event", "test_select:a").ok());
  EXPECT_EQ(Append("set_event", "test_select:b nosuch:event").ToErrno(), EINVAL);
  EXPECT_EQ(Append("set_event", "test_select:").ToErrno(), EINVAL);
  EXPECT_EQ(Append("set_event", ":a").ToErrno(), EINVAL);
  EXPECT_EQ(Cat("set_event"), "test_select:a\n") << "test_select:b was not enabled by the failed write";
}

TEST_F(ControlSelect, TruncatingSetEventDisablesEveryEvent) {
  ASSERT_TRUE(Append("set_event", "test_select").ok());
  ASSERT_TRUE(dir_.Truncate(Ino("set_event"), kRoot).ok());
  EXPECT_EQ(Cat("set_event"), "");
}

TEST_F(ControlSelect, AFilterKeepsOnlyTheRecordsThatPassItBeforeTheyAreWritten) {
  EXPECT_EQ(Cat("events/test_select/a/filter"), "none\n");
  ASSERT_TRUE(Echo("events/test_select/a/enable", "1").ok());
  ASSERT_TRUE(Echo("events/test_select/a/filter", "caller_pid == 7 && ino >= 100 || ino == 0x5").ok());
  EXPECT_EQ(Cat("events/test_select/a/filter"), "caller_pid == 7 && ino >= 100 || ino == 0x5\n");
  const std::uint64_t written = Tracer::Get().Stats().totals.entries;
  WALFS_TRACE(kSelA, 7, 100);  // passes
  WALFS_TRACE(kSelA, 7, 99);   // fails
  WALFS_TRACE(kSelA, 8, 100);  // fails
  WALFS_TRACE(kSelA, 8, 5);    // passes: the || branch
  const std::vector<std::string> lines = Trace();
  ASSERT_EQ(lines.size(), 2u) << Cat("trace");
  EXPECT_NE(lines[0].find("ino=100"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("ino=5"), std::string::npos) << lines[1];
  EXPECT_EQ(Tracer::Get().Stats().totals.entries, written + 2) << "the others took no ring space";
  ASSERT_TRUE(Echo("events/test_select/a/filter", "0").ok());
  EXPECT_EQ(Cat("events/test_select/a/filter"), "none\n");
  WALFS_TRACE(kSelA, 8, 99);
  EXPECT_EQ(Trace().size(), 3u);
}

TEST_F(ControlSelect, CommonPidIsTheRecordingThread) {
  ASSERT_TRUE(Echo("events/test_select/b/enable", "1").ok());
  ASSERT_TRUE(Echo("events/test_select/b/filter", "common_pid == 1").ok());
  WALFS_TRACE(kSelB, 1);
  EXPECT_TRUE(Trace().empty()) << "this thread is not pid 1";
  ASSERT_TRUE(Echo("events/test_select/b/filter", "common_pid != 1").ok());
  WALFS_TRACE(kSelB, 2);
  EXPECT_EQ(Trace().size(), 1u);
}

TEST_F(ControlSelect, AFilterThatDoesNotParseIsEinvalAndKeepsTheOldOne) {
  ASSERT_TRUE(Echo("events/test_select/a/filter", "ino == 1").ok());
  for (const char* bad : {"nosuch == 1", "ino = 1", "ino == x1", "ino ==", "ino == 1 &&", "ino == 1 and seq == 2",
                          "ino == 1 & ino == 2", "(ino == 1)", "ino ~ 1", "ino == 18446744073709551616"})
    EXPECT_EQ(Echo("events/test_select/a/filter", bad).ToErrno(), EINVAL) << bad;
  EXPECT_EQ(Echo("events/test_select/a/filter", "").ToErrno(), EINVAL) << "empty: 0 removes a filter";
  EXPECT_EQ(Cat("events/test_select/a/filter"), "ino == 1\n");
}

TEST_F(ControlSelect, AMarkerLineIsRecordedForItsWriterWhateverTheEnableBits) {
  ASSERT_TRUE(Cat("set_event").empty());
  ASSERT_TRUE(Append("trace_marker", "phase 2 begins\n").ok());
  const std::vector<std::string> lines = Trace();
  ASSERT_EQ(lines.size(), 1u) << Cat("trace");
  EXPECT_NE(lines[0].find("-4711 "), std::string::npos) << "the writer's pid: " << lines[0];
  EXPECT_NE(lines[0].find("user_marker: text=phase\\x202\\x20begins len=14"), std::string::npos) << lines[0];
  EXPECT_EQ(Cat("trace_marker"), "");
}

TEST_F(ControlSelect, ALongMarkerContinuesInThirtyTwoByteRecordsAndEveryLineIsOne) {
  const std::string long_line(70, 'x');
  ASSERT_TRUE(Append("trace_marker", long_line + "\n\nshort").ok());
  const std::vector<std::string> lines = Trace();
  ASSERT_EQ(lines.size(), 4u) << Cat("trace");
  EXPECT_NE(lines[0].find("text=" + std::string(32, 'x') + " len=70"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("text=" + std::string(32, 'x') + " len=70"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("text=xxxxxx len=70"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("text=short len=5"), std::string::npos) << lines[3];
}

TEST_F(ControlSelect, NoMarkerIsRecordedWhileTracingIsOff) {
  ASSERT_TRUE(Echo("tracing_on", "0").ok());
  ASSERT_TRUE(Append("trace_marker", "unseen").ok());
  ASSERT_TRUE(Echo("tracing_on", "1").ok());
  EXPECT_TRUE(Trace().empty());
  EXPECT_EQ(tracing::WriteMarker(1, std::string(tracing::kMaxMarkerBytes + 100, 'y')),
            tracing::kMaxMarkerBytes / tracing::kMarkerTextBytes)
      << "a write is kept up to kMaxMarkerBytes";
}

}  // namespace
}  // namespace walfs::mount
