// The recursion table: events lost to signal handlers that land mid-write,
// per recursion mode (ftrace, "function tracer with irqs disabled": the
// preempt-only variant ran hackbench 10.8% faster but lost 5,117,718 events,
// against 1,150 with interrupts disabled).
//
// What it isolates: the recursion protection around the commit.  P threads
// each emit `iterations` getuid_enter/getuid_exit pairs in a tight loop (no
// syscall, so most of the time is spent inside a write) while a POSIX timer
// per thread (SIGEV_THREAD_ID, every `interval_us`) sends that thread a
// signal.  The handler, installed with tracing::InstallSignalHandler, counts
// its attempt and emits storm_signal.  Per mode:
//   safe     the wrapper holds a handler that lands mid-write until the
//            write ends; nothing should be lost
//   fast     a thread-local busy flag; a handler event mid-write is refused
//            and counted as a recursion miss
//   context  per-context bits; the handler's event nests in the ring
// The storm's signals cost far more than events (on the VM this was written
// on, ~20 us of kernel time per timer signal), so ns_per_event under the
// storm mostly measures signal delivery; the table also runs every cell
// without the timers (interval 0, "quiet") to show the protection's own cost.
// Counts are exact: overwrite is off, every ring is sized to hold the whole
// cell, and nothing reads until the threads are joined, so every record
// written is read back and counted by event.  The invariant checked:
// handler attempts - handler records = recursion misses, main-loop records =
// main-loop events, and no other loss.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "tracing/options.h"

namespace walfs::bench {

struct StormConfig {
  int threads = 2;
  tracing::RecursionMode mode = tracing::RecursionMode::kSafe;
  std::uint64_t iterations = 400'000;  // event pairs per thread
  std::uint64_t warmup = 1000;         // pairs per thread before the start
  std::int64_t interval_us = 50;       // timer period per thread; 0: no signals
  tracing::ClockKind clock = tracing::DefaultClockKind();
};

struct StormResult {
  double ns_per_event = 0;   // mean over threads of loop wall time / events
  double signals_per_s = 0;  // handler runs per second, all threads
  std::uint64_t events_expected = 0;  // main-loop events, warm-up included
  std::uint64_t events_recorded = 0;
  std::uint64_t handler_attempted = 0;
  std::uint64_t handler_recorded = 0;
  std::uint64_t recursion_misses = 0;
  std::uint64_t lost_other = 0;  // overruns + drops + events lost unattached
  std::uint32_t buffer_kb = 0;   // per-thread ring used
  bool consistent = false;       // the invariant above held
};

Result<StormResult> RunStormCell(const StormConfig& config);

}  // namespace walfs::bench
