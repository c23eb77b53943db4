// libFuzzer target for the trace file decoder (TraceFileReader) and the
// formatters that run on what it returns.  Built with -DWALFS_FUZZ=ON
// (clang); ctest -L fuzz runs it for a few seconds from the seeds that
// trace_file_fuzz_seed writes at build time.
//
// Properties checked, beyond "no crash, no sanitizer report":
//   - every error is Corruption (an in-memory source has no I/O errors);
//   - the Chrome JSON of whatever was read is valid JSON;
//   - a file that reads cleanly re-encodes to one that reads back the same
//     entries (decode . encode . decode == decode);
//   - stream mode (ForStream/Feed, as walfs-trace record --mount reads
//     .walfs/trace_pipe_raw), fed the same bytes in pieces of sizes taken
//     from the input, reads the same entries, fails where the file reader
//     fails, and leaves unparsed exactly the torn tail the file reader skips.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tracing/chrome_json.h"
#include "tracing/text_format.h"
#include "tracing/trace_file.h"
#include "tracing/trace_summary.h"

namespace walfs::tracing {
namespace {

bool SameEntry(const TraceEntry& a, const TraceEntry& b) {
  if (a.type != b.type || a.lost != b.lost || a.tid != b.tid) return false;
  if ((a.comm == nullptr) != (b.comm == nullptr) || (a.comm && *a.comm != *b.comm)) return false;
  const Record& x = a.record;
  const Record& y = b.record;
  if (x.event_id != y.event_id || x.cpu != y.cpu || x.tid != y.tid || x.timestamp != y.timestamp)
    return false;
  for (int i = 0; i < kMaxFields; ++i)
    if (x.fields[i] != y.fields[i]) return false;
  return true;
}

void CheckReencodes(const TraceFileContents& first) {
  std::string again;
  auto writer = TraceFileWriter::ToBuffer(&again, first.info, 3);
  if (!writer->AddEvents(first.events).ok()) __builtin_trap();
  for (const TraceEntry& e : first.entries) {
    // A record of an event the file never defined cannot be written back.
    if (e.type == TraceEntry::Type::kRecord && !writer->HasEvent(e.record.event_id)) return;
    if (!writer->Append(e).ok()) __builtin_trap();
  }
  if (!writer->Close().ok()) __builtin_trap();
  Result<std::unique_ptr<TraceFileReader>> reader = TraceFileReader::FromBuffer(again);
  if (!reader.ok()) __builtin_trap();
  Result<TraceFileContents> second = ReadAllTraceEntries(reader->get());
  if (!second.ok() || !(second->info == first.info) || second->torn_tail) __builtin_trap();
  if (second->entries.size() != first.entries.size()) __builtin_trap();
  for (std::size_t i = 0; i < first.entries.size(); ++i)
    if (!SameEntry(first.entries[i], second->entries[i])) __builtin_trap();
}

// The stream reader's view of `bytes`, fed in pieces: its entries, its
// final status, and the bytes it could not parse.
struct StreamRead {
  std::vector<TraceEntry> entries;
  Status status;
  std::size_t unparsed = 0;
};

StreamRead ReadAsStream(const std::string& bytes) {
  StreamRead out;
  std::unique_ptr<TraceFileReader> r = TraceFileReader::ForStream();
  std::vector<TraceEntry> chunk;
  std::size_t at = 0, k = 0;
  while (at < bytes.size() && out.status.ok()) {
    // Piece sizes 1..64 from the input's own bytes: deterministic per input.
    const std::size_t piece = 1 + static_cast<unsigned char>(bytes[k++ % bytes.size()]) % 64;
    r->Feed(std::string_view(bytes).substr(at, piece));
    at += piece;
    while ((out.status = r->ReadChunk(&chunk)).ok() && !chunk.empty())
      out.entries.insert(out.entries.end(), chunk.begin(), chunk.end());
  }
  out.unparsed = r->unparsed_bytes();
  return out;
}

void CheckStream(const std::string& bytes, const std::vector<TraceEntry>& file_entries,
                 const Status& file_status, std::size_t torn_bytes) {
  const StreamRead st = ReadAsStream(bytes);
  if (st.status.ok() != file_status.ok()) __builtin_trap();
  if (!st.status.ok() && !st.status.IsCorruption()) __builtin_trap();
  if (st.entries.size() != file_entries.size()) __builtin_trap();
  for (std::size_t i = 0; i < st.entries.size(); ++i)
    if (!SameEntry(st.entries[i], file_entries[i])) __builtin_trap();
  if (file_status.ok() && st.unparsed != torn_bytes) __builtin_trap();
}

void FuzzOne(std::string bytes) {
  const std::string copy = bytes;
  Result<std::unique_ptr<TraceFileReader>> reader = TraceFileReader::FromBuffer(std::move(bytes));
  if (!reader.ok()) {
    if (!reader.status().IsCorruption()) __builtin_trap();
    // A header the file reader refuses is refused by the stream reader too,
    // or (a header not yet whole) waited for.
    const StreamRead st = ReadAsStream(copy);
    if (st.status.ok() && (copy.size() >= trace_file::kFileHeaderSize || !st.entries.empty()))
      __builtin_trap();
    return;
  }
  TraceFileReader& r = **reader;
  std::ostringstream json;
  ChromeTraceWriter chrome(&json, &r.events(), {});
  TraceSummary summary;
  TraceFileContents all;
  std::string text;
  std::vector<TraceEntry> chunk;
  Status s;
  while ((s = r.ReadChunk(&chunk)).ok() && !chunk.empty()) {
    text.clear();
    for (const TraceEntry& e : chunk) {
      AppendTextLine(e, r.events(), &text);
      chrome.Add(e);
      summary.Add(e);
      all.entries.push_back(e);
    }
  }
  if (!s.ok() && !s.IsCorruption()) __builtin_trap();
  CheckStream(copy, all.entries, s, r.torn_tail() ? r.torn_bytes() : 0);
  if (!chrome.Finish().ok()) __builtin_trap();
  if (!nlohmann::json::accept(json.str())) __builtin_trap();
  text = summary.Format(r.events());
  if (s.ok()) {
    all.info = r.info();
    all.events = r.events();
    CheckReencodes(all);
  }
}

}  // namespace
}  // namespace walfs::tracing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  walfs::tracing::FuzzOne(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
