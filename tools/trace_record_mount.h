// walfs-trace record --mount: records a mounted walfs's trace to a file
// through `.walfs/trace_pipe_raw` (tracing/raw_reader.h), as trace-cmd
// record does through tracefs.
//
//   walfs-trace record --mount MNT -o run.wtrace -e fs,journal -- fio job.fio
//
// It clears the trace buffer, enables the events asked for (remembering
// each event's enable bit, restored at the end), reads the raw stream until
// the command exits, --duration passes, SIGINT/SIGTERM arrives or the mount
// goes away, then drains what is left.  The reads' sections (one per daemon
// thread's ring) are merged by timestamp through a ReorderWindow (a record
// that comes a read late still takes its place) and written with
// TraceFileWriter, so the file is one timeline and every other walfs-trace
// command reads it.
#pragma once

#include <string>
#include <vector>

namespace walfs::tracing {

struct MountRecordOptions {
  std::string mount;               // the walfs mount point
  std::string output;              // the trace file to write
  std::string events;              // "subsystem,subsystem/event,..." ("" or "all": every event)
  double duration_s = 0;           // > 0: stop after this long
  std::vector<std::string> command;  // run it and stop when it exits (may be empty)
};

// Returns the exit status: the command's when there is one, else 0; 1 when
// the mount, the stream or the file failed (one line on stderr says why).
int RecordMount(const MountRecordOptions& options);

}  // namespace walfs::tracing
