// The trace events trace_bench records, subsystem "bench".
//
//   getuid_enter / getuid_exit  (kBegin / kEnd; fields seq, arg)
//       around every call of the measured loops; the LTTng-UST provider in
//       lttng_tp.h declares the same two events with the same two fields.
//   storm_signal                (kInstant; fields seq, signo)
//       from the signal handler of the recursion table.
//
// ResetForTesting() disables every event; EnableBenchEvents() turns ours on.
#pragma once

#include "base/status.h"
#include "tracing/event.h"

namespace walfs::bench {

extern tracing::EventDef kGetuidEnter;
extern tracing::EventDef kGetuidExit;
extern tracing::EventDef kStormSignal;

// Enables (or disables) the three events above.
Status EnableBenchEvents(bool on);

}  // namespace walfs::bench
