// Chrome trace event JSON (the "JSON Array/Object Format" that Perfetto UI
// and chrome://tracing load) for trace entries, written as a stream so that a
// trace of any size converts in constant memory:
//
//   std::ofstream out("trace.json");
//   ChromeTraceWriter w(&out, &table, {.pid = 1234});
//   for (const TraceEntry& e : entries) w.Add(e);
//   Status s = w.Finish();        // closes the JSON; IoError if the stream failed
//
// The output is {"traceEvents":[...],"displayTimeUnit":"ns"}, one event per
// line.  Mapping (every event has pid = options.pid, tid = the ring's tid,
// ts = record timestamp in microseconds, as a double, cat = subsystem):
//
//   kBegin      "B", name = full name without a trailing "_enter"
//   kEnd        "E", name = full name without a trailing "_exit"; closes the
//               innermost open slice of that name on its thread.  Slices it
//               skips over (their end was lost) are closed at the same ts with
//               args {"truncated":true}; an end with no open slice becomes an
//               instant of the full name, so nothing is dropped and every "E"
//               has its "B".  Slices still open at Finish() stay open.
//   kInstant    "i", scope "t", name = full name
//   kCounter    "C", name = full name, args = one series per field
//   kLost       "i", scope "t", name "lost_events", args {"count": N}
//   unknown id  "i", name "unknown_event_<id>", args f0..f5 as hex strings
//   a new tid   "M" thread_name with args {"name": comm}; once per tid
//
// Args of B/E/i are the field name -> value map: u64 and i64 as JSON numbers,
// hex as a "0x..." string.  A lost entry with timestamp 0 (TraceReader::Read
// does not stamp them) takes the timestamp of the next record of its thread.
// Strings that are not UTF-8 (a hostile file's names) are written with
// U+FFFD in place of the bad bytes.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "tracing/event_table.h"
#include "tracing/reader.h"

namespace walfs::tracing {

struct ChromeTraceOptions {
  std::uint32_t pid = 0;     // the traced process
  std::string process_name;  // non-empty: a process_name "M" event
};

class ChromeTraceWriter {
 public:
  // `out` and `events` must outlive the writer; `events` may grow while it
  // is used (a TraceFileReader's table does).
  ChromeTraceWriter(std::ostream* out, const EventTable* events, ChromeTraceOptions options);
  ChromeTraceWriter(const ChromeTraceWriter&) = delete;
  ChromeTraceWriter& operator=(const ChromeTraceWriter&) = delete;

  void Add(const TraceEntry& entry);
  // Writes pending lost markers and closes the JSON.  Add() must not be
  // called after.
  Status Finish();

 private:
  struct OpenSlice {
    std::string name;
    std::string cat;
  };
  void AddRecord(const TraceEntry& entry);
  void AddLost(std::uint32_t tid, std::uint64_t count, std::uint64_t timestamp_ns);
  void NoteThread(const TraceEntry& entry);
  void Emit(const std::string& event_json);

  std::ostream* const out_;
  const EventTable* const events_;
  const ChromeTraceOptions options_;
  bool first_ = true;
  bool finished_ = false;
  std::uint64_t last_ts_ = 0;
  std::set<std::uint32_t> named_threads_;
  std::map<std::uint32_t, std::vector<OpenSlice>> open_;  // tid -> slice stack
  std::map<std::uint32_t, std::uint64_t> unstamped_lost_;  // tid -> count awaiting a ts
};

// The whole JSON document for `entries`, as a string.
std::string ToChromeJson(std::span<const TraceEntry> entries, const EventTable& events,
                         const ChromeTraceOptions& options);

}  // namespace walfs::tracing
