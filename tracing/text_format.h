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
//
// Requests on behalf of a process: an event whose first field is
// `caller_pid` (the mount's fs events) prints that process where ftrace puts
// TASK-PID, and the thread that wrote the record as a `worker=comm-tid`
// field:
//
//            fio-4242    [001]   812.003456: fs_write_enter: ino=12 off=0 len=4096 worker=walfs-4250
//
// The caller's comm comes from the task events before it (fields
// `caller_pid`, `comm`: the mount's fs_task, written when a worker first
// serves a process), remembered in a TaskNames the caller passes; without
// one, or before the process's task event, the comm is `<...>`.  pid 0 is a
// request the kernel made on its own: `<kernel>-0`.
// Timestamps are rounded to the nearest microsecond, as ftrace's ns2usecs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tracing/event_table.h"
#include "tracing/reader.h"

namespace walfs::tracing {

// pid -> comm, from the task events a formatter has seen (see above).
class TaskNames {
 public:
  // Remembers the name if `entry` is a task event.
  void Observe(const TraceEntry& entry, const EventInfo& event);
  std::string_view Find(std::uint32_t pid) const;
  std::size_t size() const { return names_.size(); }

 private:
  std::unordered_map<std::uint32_t, std::string> names_;
};

// The line for `entry`, without a newline.
std::string FormatTextLine(const TraceEntry& entry, const EventTable& events,
                           TaskNames* tasks = nullptr);

// Appends the line and a newline to *out.
void AppendTextLine(const TraceEntry& entry, const EventTable& events, std::string* out,
                    TaskNames* tasks = nullptr);

// ftrace's header block (`# tracer: nop`, the entries-in-buffer line and the
// column legend), each line ending in a newline.  `entries_in_buffer` is what
// the reader is about to print, `entries_written` what the tracer wrote in
// total (they differ by the entries lost).
std::string FormatTextHeader(std::uint64_t entries_in_buffer, std::uint64_t entries_written,
                             unsigned cpus);

}  // namespace walfs::tracing
