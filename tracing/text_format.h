// ftrace-style text for trace entries: what `trace`, `trace_pipe` and
// `walfs-trace print` show.
//
//   std::string out;
//   for (const TraceEntry& e : entries) AppendTextLine(e, table, &out);
//
// A record becomes (ftrace's trace_output.c layout: comm right-aligned in 16
// columns, tid left-aligned in 7, CPU in 3 digits, seconds with 6 decimals):
//
//       walfs-fuse-1234    [001]   812.003456: journal_grant_sleep: tid=7 need=4096 free=0
//
// Fields print by FieldKind: u64 in decimal, i64 signed decimal, hex as 0x...
// An id the table does not know prints as `unknown_event_<id>` with its six
// raw fields in hex (f0=0x.. f5=0x..).  A kLost entry becomes
//
//       walfs-fuse-1234    [LOST 17 EVENTS]
//
// (ftrace prints `CPU:N [LOST M EVENTS]`; our rings are per thread).  An
// entry with no comm prints `<...>` as ftrace does for an unknown task.
// Timestamps are rounded to the nearest microsecond, as ftrace's ns2usecs.
#pragma once

#include <cstdint>
#include <string>

#include "tracing/event_table.h"
#include "tracing/reader.h"

namespace walfs::tracing {

// The line for `entry`, without a newline.
std::string FormatTextLine(const TraceEntry& entry, const EventTable& events);

// Appends the line and a newline to *out.
void AppendTextLine(const TraceEntry& entry, const EventTable& events, std::string* out);

// ftrace's header block (`# tracer: nop`, the entries-in-buffer line and the
// column legend), each line ending in a newline.  `entries_in_buffer` is what
// the reader is about to print, `entries_written` what the tracer wrote in
// total (they differ by the entries lost).
std::string FormatTextHeader(std::uint64_t entries_in_buffer, std::uint64_t entries_written,
                             unsigned cpus);

}  // namespace walfs::tracing
