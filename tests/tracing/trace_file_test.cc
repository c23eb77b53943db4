// Specs of the trace file format, part 1: what goes in comes back out, byte
// for byte as docs/trace_format.md says, from hand-made entries and from the
// live tracer.  Part 2, every check the reader makes, is
// trace_file_corruption_test.cc.
#include "tracing/trace_file.h"

#include <pthread.h>
#include <unistd.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/tracing/trace_file_test_util.h"

namespace walfs::tracing {
namespace {

using namespace testing;  // NOLINT: trace_file_test_util.h

WALFS_TRACE_EVENT(kFileTick, "test_trace_file", "tick", EventKind::kInstant, {"seq"},
                  {"delta", FieldKind::kI64});
WALFS_TRACE_EVENT(kFileAddr, "test_trace_file", "addr", EventKind::kInstant,
                  {"addr", FieldKind::kHex});

// --- Round trips

TEST(TraceFile, RoundTripReturnsIdenticalInfoEventsAndEntries) {
  const std::vector<TraceEntry> entries = MakeEntries();
  Result<TraceFileContents> got = ReadBuffer(WriteToBuffer(entries, 1024));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->info, MakeInfo());
  ASSERT_EQ(got->events.size(), 3u);
  const EventTable want = MakeTable();
  for (const EventInfo* e : want.Events()) EXPECT_EQ(*got->events.ById(e->id), *e);
  ExpectSameEntries(got->entries, entries);
  EXPECT_FALSE(got->torn_tail);
}

TEST(TraceFile, RoundTripIsIdenticalWhateverTheChunkSize) {
  const std::vector<TraceEntry> entries = MakeEntries();
  for (std::size_t chunk : {1, 2, 3, 7, 100}) {
    SCOPED_TRACE("chunk_records " + std::to_string(chunk));
    Result<TraceFileContents> got = ReadBuffer(WriteToBuffer(entries, chunk));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ExpectSameEntries(got->entries, entries);
  }
}

TEST(TraceFile, AFileWithNoRecordsReadsAsNoEntries) {
  Result<TraceFileContents> header_only = ReadBuffer(HeaderOnly());
  ASSERT_TRUE(header_only.ok()) << header_only.status().ToString();
  EXPECT_TRUE(header_only->entries.empty());
  EXPECT_TRUE(header_only->events.empty());

  Result<TraceFileContents> catalogue_only = ReadBuffer(WriteToBuffer({}, 8));
  ASSERT_TRUE(catalogue_only.ok());
  EXPECT_TRUE(catalogue_only->entries.empty());
  EXPECT_EQ(catalogue_only->events.size(), 3u);
}

TEST(TraceFile, AppendRefusesARecordOfAnEventTheFileDoesNotDefine) {
  std::string buf;
  auto w = TraceFileWriter::ToBuffer(&buf, MakeInfo());
  Status s = w->Append(Rec(1, 100, "x", 1));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(w->AddEvents(MakeTable()).ok());
  EXPECT_TRUE(w->Append(Rec(1, 100, "x", 1)).ok());
  EXPECT_EQ(w->Append(Rec(9, 100, "x", 1)).code(), StatusCode::kInvalidArgument);
}

TEST(TraceFile, AddEventsRefusesToRedefineAnIdAndIgnoresRepeats) {
  std::string buf;
  auto w = TraceFileWriter::ToBuffer(&buf, MakeInfo());
  ASSERT_TRUE(w->AddEvents(MakeTable()).ok());
  const std::size_t size = buf.size();
  ASSERT_TRUE(w->AddEvents(MakeTable()).ok());
  EXPECT_EQ(buf.size(), size) << "nothing new: no section";
  EventTable other;
  ASSERT_TRUE(other.Add({1, "journal", "something_else", EventKind::kInstant, {}}).ok());
  EXPECT_EQ(w->AddEvents(other).code(), StatusCode::kAlreadyExists);
}

TEST(TraceFile, EventsDefinedMidFileResolveForTheRecordsAfterThem) {
  std::string buf;
  auto w = TraceFileWriter::ToBuffer(&buf, MakeInfo(), 2);
  EventTable first;
  ASSERT_TRUE(first.Add(*MakeTable().ById(1)).ok());
  ASSERT_TRUE(w->AddEvents(first).ok());
  ASSERT_TRUE(w->Append(Rec(1, 100, "a", 10)).ok());
  ASSERT_TRUE(w->AddEvents(MakeTable()).ok());  // adds 2 and 3 only
  ASSERT_TRUE(w->Append(Rec(2, 100, "a", 20)).ok());
  ASSERT_TRUE(w->Append(Rec(3, 100, "a", 30)).ok());
  ASSERT_TRUE(w->Close().ok());
  Result<TraceFileContents> got = ReadBuffer(buf);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->events.size(), 3u);
  EXPECT_EQ(got->entries.size(), 3u);
}

TEST(TraceFile, ARenamedThreadKeepsItsOldNameOnEarlierRecords) {
  const std::vector<TraceEntry> entries = {Rec(1, 7, "before", 1), Rec(1, 7, "before", 2),
                                           Rec(1, 7, "after", 3)};
  Result<TraceFileContents> got = ReadBuffer(WriteToBuffer(entries, 100));
  ASSERT_TRUE(got.ok());
  ExpectSameEntries(got->entries, entries);
}

TEST(TraceFile, ATidFirstNamedMidChunkLeavesItsEarlierUnnamedEntriesUnnamed) {
  // A file read back can hold entries of a tid before any threads section
  // names it (comm null), then named ones: the fuzzer found the writer
  // putting the name in front of the chunk that held both, naming all.
  TraceEntry unnamed_lost = Lost(101, "", 9, 1);
  unnamed_lost.comm = nullptr;
  TraceEntry unnamed_rec = Rec(1, 101, "", 2);
  unnamed_rec.comm = nullptr;
  const std::vector<TraceEntry> entries = {unnamed_lost, Rec(1, 100, "other", 3), unnamed_rec,
                                           Rec(1, 101, "walfs-log", 4)};
  for (std::size_t chunk : {1, 3, 100}) {
    SCOPED_TRACE("chunk_records " + std::to_string(chunk));
    Result<TraceFileContents> got = ReadBuffer(WriteToBuffer(entries, chunk));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ExpectSameEntries(got->entries, entries);
  }
}

TEST(TraceFile, WriterAndReaderRoundTripThroughAFile) {
  const std::string path = TempPath("round_trip");
  {
    auto w = TraceFileWriter::Create(path, MakeInfo(), 2);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE((*w)->AddEvents(MakeTable()).ok());
    for (const TraceEntry& e : MakeEntries()) ASSERT_TRUE((*w)->Append(e).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  Result<TraceFileContents> got = ReadTraceFile(path);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ExpectSameEntries(got->entries, MakeEntries());
  ::unlink(path.c_str());
}

TEST(TraceFile, OpeningAMissingFileIsNotFound) {
  Result<TraceFileContents> got = ReadTraceFile(::testing::TempDir() + "/no/such.wtrace");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
}

TEST(TraceFile, TheWorkedExampleInTheFormatDocIsExactlyWhatTheWriterWrites) {
  // docs/trace_format.md, "Worked example", byte for byte.
  const std::string hex =
      "57414c465354524301000000010000006d6f6e6f000000000000000000000000"
      "0000b3a973687c18c0878b3b00000000921000000000000000000000008642b3"
      "01000000180000005b4c625ba6f382ce01000000010000010200667304007379"
      "6e63020300696e6f020000000f00000032789c72341de4010100000064000000"
      "050077616c66730300000088000000b5c3b4d0c574ad89020000000000000000"
      "0000006400000000ca9a3b000000000300000000000000640000000000000000"
      "0000000000000000000000000000000000000000000000000000000000000001"
      "0001006400000000ca9a3b000000002a00000000000000000000000000000000"
      "00000000000000000000000000000000000000000000000000000000000000";
  std::string want;
  for (std::size_t i = 0; i < hex.size(); i += 2)
    want.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));

  TraceFileInfo info;
  info.flags = kFlagOverwrite;
  info.clock = "mono";
  info.created_unix_ns = 1'764'400'000'000'000'000ull;
  info.created_trace_ns = 999'000'000;
  info.pid = 4242;
  EventTable events;
  ASSERT_TRUE(events.Add({1, "fs", "sync", EventKind::kInstant, {{"ino", FieldKind::kHex}}}).ok());
  std::string got;
  auto w = TraceFileWriter::ToBuffer(&got, info);
  ASSERT_TRUE(w->AddEvents(events).ok());
  ASSERT_TRUE(w->Append(Lost(100, "walfs", 3, 1'000'000'000)).ok());
  TraceEntry r = Rec(1, 100, "walfs", 1'000'000'000, 0x2a);
  r.record.cpu = 1;
  ASSERT_TRUE(w->Append(r).ok());
  ASSERT_TRUE(w->Close().ok());
  EXPECT_EQ(got.size(), 287u);
  EXPECT_EQ(got, want);
}

// --- From the live tracer

TEST(TraceFile, WriteTraceFileDrainsTheTracerIntoASelfDescribingFile) {
  Tracer::Get().ResetForTesting();
  ASSERT_TRUE(Catalogue::Get().SetSubsystemEnabled("test_trace_file", true).ok());
  auto emit = [](const char* name, int base) {
    pthread_setname_np(pthread_self(), name);
    for (int i = 0; i < 100; ++i) {
      WALFS_TRACE(kFileTick, base + i, -i);
      WALFS_TRACE(kFileAddr, 0x1000 + i);
    }
  };
  std::thread a(emit, "tf_writer_a", 0);
  std::thread b(emit, "tf_writer_b", 1000);
  a.join();
  b.join();

  const std::string path = TempPath("drain");
  ASSERT_TRUE(WriteTraceFile(path, &Tracer::Get(), {.pid = 77}).ok());
  EXPECT_FALSE(Tracer::Get().HasUnread()) << "the tracer was drained";

  Result<TraceFileContents> got = ReadTraceFile(path);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->info.pid, 77u);
  EXPECT_EQ(got->info.clock, ClockKindName(DefaultClockKind()));
  ASSERT_EQ(got->entries.size(), 400u);
  std::map<std::string, int> per_thread;
  for (const TraceEntry& e : got->entries) {
    ASSERT_EQ(e.type, TraceEntry::Type::kRecord);
    const EventInfo* info = got->events.ById(e.record.event_id);
    ASSERT_NE(info, nullptr) << "every record's event is in the file";
    EXPECT_EQ(info->subsystem, "test_trace_file");
    ASSERT_NE(e.comm, nullptr);
    ++per_thread[*e.comm];
  }
  EXPECT_EQ(per_thread["tf_writer_a"], 200);
  EXPECT_EQ(per_thread["tf_writer_b"], 200);
  const EventInfo* tick = got->events.ById(kFileTick.id());
  ASSERT_NE(tick, nullptr);
  EXPECT_EQ(tick->name, "tick");
  ASSERT_EQ(tick->fields.size(), 2u);
  EXPECT_EQ(tick->fields[1].kind, FieldKind::kI64);
  ::unlink(path.c_str());
  Tracer::Get().ResetForTesting();
}

}  // namespace
}  // namespace walfs::tracing
