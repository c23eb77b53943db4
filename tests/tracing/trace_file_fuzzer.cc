// libFuzzer target for the trace file decoder (TraceFileReader) and the
// formatters that run on what it returns.  Built with -DWALFS_FUZZ=ON
// (clang); ctest -L fuzz runs it for a few seconds from the seeds that
// trace_file_fuzz_seed writes at build time.
//
// Properties checked, beyond "no crash, no sanitizer report":
//   - every error is Corruption (an in-memory source has no I/O errors);
//   - the Chrome JSON of whatever was read is valid JSON;
//   - a file that reads cleanly re-encodes to one that reads back the same
//     entries (decode . encode . decode == decode).
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

void FuzzOne(std::string bytes) {
  Result<std::unique_ptr<TraceFileReader>> reader = TraceFileReader::FromBuffer(std::move(bytes));
  if (!reader.ok()) {
    if (!reader.status().IsCorruption()) __builtin_trap();
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
