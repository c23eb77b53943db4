// Trace events of the log writer, the CIL and forces (subsystem "log").
// Declared here, defined once in log_events.cc.  Recovery's events live in
// journal_events.h with the reservation ones.
#pragma once

#include "tracing/event.h"

namespace walfs::journal {

extern tracing::EventDef kTraceIclogState;     // index, lsn, state (IclogState)
extern tracing::EventDef kTraceLogSubmit;      // lsn, bytes, flags (IoFlags)
extern tracing::EventDef kTraceLogComplete;    // lsn, latency_ns, error (errno, 0 for none)
extern tracing::EventDef kTraceLogForce;       // lsn, wait_ns, already (1: it was on disk)
extern tracing::EventDef kTraceCilCommit;      // seq, items, bytes (delta charged), space_used
extern tracing::EventDef kTraceCilThrottle;    // seq, space_used, wait_ns
extern tracing::EventDef kTraceCilPush;        // seq, items, bytes, background
extern tracing::EventDef kTraceCilCommitted;   // seq, start_lsn, commit_lsn
extern tracing::EventDef kTraceOverheadCharge; // bytes (overcommitted: the fund ran short)
extern tracing::EventDef kTraceAilPush;        // target, pushed, pinned, busy (one pusher pass)

}  // namespace walfs::journal
