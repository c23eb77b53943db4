// Specs of the binary reader (RawTraceReader): its stream is a trace file
// read in any piece size, it moves each ring's records whole with losses
// counted exactly, it shares consumption with the text reader, and the
// stream-mode TraceFileReader and MergeByTimestamp that walfs-trace record
// uses to put the rings back on one timeline.
#include "tracing/raw_reader.h"

#include <unistd.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/tracing/trace_file_test_util.h"
#include "tracing/reader.h"
#include "tracing/trace_file.h"

namespace walfs::tracing {
namespace {

WALFS_TRACE_EVENT(kRawPing, "test_raw", "ping", EventKind::kInstant, {"seq"});
WALFS_TRACE_EVENT(kRawPong, "test_raw", "pong", EventKind::kInstant, {"seq"}, {"thread"});

class RawReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Tracer::Get().ResetForTesting();
    ASSERT_TRUE(Catalogue::Get().SetSubsystemEnabled("test_raw", true).ok());
  }
  void TearDown() override { Tracer::Get().ResetForTesting(); }

  // Everything the reader returns without waiting, `max_bytes` per call.
  static std::string Drain(RawTraceReader* raw, std::size_t max_bytes, int* calls = nullptr) {
    std::string all;
    for (;;) {
      Result<std::size_t> n = raw->Read(&all, max_bytes, 0);
      if (!n.ok()) {
        EXPECT_EQ(n.status().code(), StatusCode::kWouldBlock) << n.status().ToString();
        break;
      }
      EXPECT_GT(*n, 0u);
      if (calls != nullptr) ++*calls;
    }
    return all;
  }

  // Parses a stream fed in pieces of `piece` bytes.
  static std::vector<TraceEntry> Parse(const std::string& bytes, std::size_t piece,
                                       std::unique_ptr<TraceFileReader>* keep = nullptr) {
    std::unique_ptr<TraceFileReader> r = TraceFileReader::ForStream();
    std::vector<TraceEntry> all, chunk;
    for (std::size_t at = 0; at < bytes.size(); at += piece) {
      r->Feed(std::string_view(bytes).substr(at, piece));
      for (;;) {
        Status s = r->ReadChunk(&chunk);
        EXPECT_TRUE(s.ok()) << s.ToString();
        if (!s.ok() || chunk.empty()) break;
        all.insert(all.end(), chunk.begin(), chunk.end());
      }
    }
    EXPECT_EQ(r->unparsed_bytes(), 0u) << "the stream ended inside a section";
    if (keep != nullptr) *keep = std::move(r);
    return all;
  }
};

TEST_F(RawReaderTest, TheFirstReadIsTheFileHeaderAndCatalogueWithoutWaiting) {
  RawTraceReader raw(&Tracer::Get(), CurrentTraceFileInfo(&Tracer::Get()));
  std::string bytes;
  Result<std::size_t> n = raw.Read(&bytes, 1 << 16, -1);  // would block forever without them
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, bytes.size());
  auto file = TraceFileReader::FromBuffer(bytes);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  std::vector<TraceEntry> chunk;
  ASSERT_TRUE((*file)->ReadChunk(&chunk).ok());
  EXPECT_TRUE(chunk.empty());
  EXPECT_NE((*file)->events().ById(kRawPing.id()), nullptr);
  EXPECT_EQ((*file)->info().pid, static_cast<std::uint32_t>(::getpid()));
  // Then nothing: a read that may not wait says so.
  EXPECT_EQ(raw.Read(&bytes, 1 << 16, 0).status().code(), StatusCode::kWouldBlock);
}

TEST_F(RawReaderTest, TheStreamIsATraceFileWhateverPieceSizeItIsReadIn) {
  RawTraceReader raw(&Tracer::Get(), CurrentTraceFileInfo(&Tracer::Get()));
  for (int i = 0; i < 100; ++i) WALFS_TRACE(kRawPing, i);
  std::thread other([] {
    for (int i = 0; i < 50; ++i) WALFS_TRACE(kRawPong, i, 1);
  });
  other.join();
  const std::string bytes = Drain(&raw, 1 << 20);
  EXPECT_EQ(raw.records(), 150u);
  EXPECT_EQ(raw.lost(), 0u);
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{64}, bytes.size()}) {
    std::unique_ptr<TraceFileReader> r;
    std::vector<TraceEntry> all = Parse(bytes, piece, &r);
    ASSERT_EQ(all.size(), 150u) << "piece " << piece;
    // Each ring's records come in order, and each thread is named.
    std::map<std::uint16_t, std::uint64_t> next;
    for (const TraceEntry& e : all) {
      ASSERT_EQ(e.type, TraceEntry::Type::kRecord);
      EXPECT_EQ(e.record.fields[0], next[e.record.event_id]++);
      ASSERT_NE(e.comm, nullptr);
    }
    EXPECT_EQ(next[kRawPing.id()], 100u);
    EXPECT_EQ(next[kRawPong.id()], 50u);
  }
}

TEST_F(RawReaderTest, MaxBytesSplitsARingIntoSeveralSectionsLosingNothing) {
  RawTraceReader raw(&Tracer::Get(), CurrentTraceFileInfo(&Tracer::Get()));
  std::string header;
  ASSERT_TRUE(raw.Read(&header, 1 << 16, 0).ok());
  for (int i = 0; i < 1000; ++i) WALFS_TRACE(kRawPing, i);
  int calls = 0;
  const std::string bytes = header + Drain(&raw, 4096, &calls);
  EXPECT_GE(calls, 1000 * 64 / 4096);  // about 4 KiB a call
  const std::vector<TraceEntry> all = Parse(bytes, 1000);
  ASSERT_EQ(all.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(all[i].record.fields[0], static_cast<std::uint64_t>(i));
}

TEST_F(RawReaderTest, AnOverwrittenRingIsReportedAsALostMarkerCountedExactly) {
  TracerOptions o = Tracer::Get().options();
  o.buffer_size_kb = 4;  // 64 records
  ASSERT_TRUE(Tracer::Get().SetOptions(o).ok());
  RawTraceReader raw(&Tracer::Get(), CurrentTraceFileInfo(&Tracer::Get()));
  for (int i = 0; i < 1000; ++i) WALFS_TRACE(kRawPing, i);
  const std::vector<TraceEntry> all = Parse(Drain(&raw, 1 << 20), 4096);
  ASSERT_FALSE(all.empty());
  ASSERT_EQ(all[0].type, TraceEntry::Type::kLost);
  EXPECT_EQ(all[0].lost + (all.size() - 1), 1000u);
  EXPECT_EQ(raw.lost(), all[0].lost);
  EXPECT_EQ(raw.records(), all.size() - 1);
  // The marker sits where the loss happened: stamped like the first survivor.
  EXPECT_EQ(all[0].record.timestamp, all[1].record.timestamp);
  EXPECT_EQ(all.back().record.fields[0], 999u);
}

TEST_F(RawReaderTest, RecordsTheRawReaderReturnedAreGoneForTheTextReader) {
  RawTraceReader raw(&Tracer::Get(), CurrentTraceFileInfo(&Tracer::Get()));
  for (int i = 0; i < 10; ++i) WALFS_TRACE(kRawPing, i);
  const std::vector<TraceEntry> all = Parse(Drain(&raw, 1 << 20), 64);
  EXPECT_EQ(all.size(), 10u);
  TraceReader text(&Tracer::Get());
  EXPECT_EQ(text.Read(100, 0).status().code(), StatusCode::kWouldBlock);
}

TEST_F(RawReaderTest, AStreamThatIsNotATraceFileIsRefusedFromItsFirstBytes) {
  std::unique_ptr<TraceFileReader> r = TraceFileReader::ForStream();
  r->Feed("WALF");
  std::vector<TraceEntry> chunk;
  EXPECT_TRUE(r->ReadChunk(&chunk).ok());  // a prefix of the magic: wait for more
  r->Feed("XXXX");
  EXPECT_EQ(r->ReadChunk(&chunk).code(), StatusCode::kCorruption);
}

TEST_F(RawReaderTest, AStreamStoppedInsideASectionLeavesItsBytesUnparsed) {
  std::string file;
  {
    auto w = TraceFileWriter::ToBuffer(&file, testing::MakeInfo());
    ASSERT_TRUE(w->AddEvents(testing::MakeTable()).ok());
    ASSERT_TRUE(w->Append(testing::Rec(1, 7, "a", 100)).ok());
    ASSERT_TRUE(w->Close().ok());
  }
  std::unique_ptr<TraceFileReader> r = TraceFileReader::ForStream();
  r->Feed(std::string_view(file).substr(0, file.size() - 10));
  std::vector<TraceEntry> chunk;
  ASSERT_TRUE(r->ReadChunk(&chunk).ok());
  EXPECT_TRUE(chunk.empty());
  EXPECT_GT(r->unparsed_bytes(), 0u);
  r->Feed(std::string_view(file).substr(file.size() - 10));
  ASSERT_TRUE(r->ReadChunk(&chunk).ok());
  ASSERT_EQ(chunk.size(), 1u);
  EXPECT_EQ(r->unparsed_bytes(), 0u);
}

TEST_F(RawReaderTest, MergeByTimestampMakesOneTimelineAndKeepsALostMarkerBeforeItsRecord) {
  using testing::Lost;
  using testing::Rec;
  // Two rings' sections, as a stream has them: ring 7 whole, then ring 8.
  std::vector<TraceEntry> batch = {Rec(1, 7, "a", 10), Rec(1, 7, "a", 30), Lost(8, "b", 5, 20),
                                   Rec(2, 8, "b", 20), Rec(3, 8, "b", 30), Rec(1, 8, "b", 40)};
  MergeByTimestamp(&batch);
  std::vector<std::pair<std::uint32_t, std::uint64_t>> got;
  for (const TraceEntry& e : batch) got.emplace_back(e.tid, e.record.timestamp);
  EXPECT_EQ(got, (std::vector<std::pair<std::uint32_t, std::uint64_t>>{
                     {7, 10}, {8, 20}, {8, 20}, {7, 30}, {8, 30}, {8, 40}}));
  EXPECT_EQ(batch[1].type, TraceEntry::Type::kLost);  // before the record it precedes
  EXPECT_EQ(batch[2].type, TraceEntry::Type::kRecord);
  EXPECT_EQ(batch[3].tid, 7u);  // equal stamps keep the stream's order
}

}  // namespace
}  // namespace walfs::tracing
