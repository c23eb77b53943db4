// Recording a program from the outside, the way `lttng` or `perf record`
// do: if WALFS_TRACE_OUT names a file when a program that links the tracer
// starts, every event matching WALFS_TRACE_EVENTS is enabled as it
// registers, and a recorder thread streams the trace into that file (a
// walfs trace file, docs/trace_format.md) until the program exits.
//
//   WALFS_TRACE_OUT=run.wtrace WALFS_TRACE_EVENTS=journal build/bin/grant_head_bench --quick
//   walfs-trace record -o run.wtrace -e journal -- build/bin/grant_head_bench --quick
//
// WALFS_TRACE_EVENTS: comma-separated "subsystem" or "subsystem/event"
// patterns; unset or "all" records every event.  A program killed before it
// exits leaves a valid prefix of the file.  Children forked by the program
// do not record (their rings have no reader).
#pragma once

namespace walfs::tracing {

// Starts recording if the environment asks for it; idempotent.  Called when
// the first event registers, so every traced program honours it.
// `catalogue` is the one being set up (Catalogue::Get() must not be called
// re-entrantly from its own initialisation).
class Catalogue;
void StartRecordingFromEnvironment(Catalogue& catalogue);

}  // namespace walfs::tracing
