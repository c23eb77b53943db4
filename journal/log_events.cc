#include "journal/log_events.h"

namespace walfs::journal {

using tracing::EventKind;
using tracing::FieldKind;

WALFS_TRACE_EVENT(kTraceIclogState, "log", "iclog_state", EventKind::kInstant, {"index"},
                  {"lsn", FieldKind::kHex}, {"state"});
WALFS_TRACE_EVENT(kTraceLogSubmit, "log", "log_submit", EventKind::kInstant, {"lsn", FieldKind::kHex}, {"bytes"},
                  {"flags"});
WALFS_TRACE_EVENT(kTraceLogComplete, "log", "log_complete", EventKind::kInstant, {"lsn", FieldKind::kHex},
                  {"latency_ns"}, {"error"});
WALFS_TRACE_EVENT(kTraceLogForce, "log", "log_force", EventKind::kInstant, {"lsn", FieldKind::kHex}, {"wait_ns"},
                  {"already"});
WALFS_TRACE_EVENT(kTraceCilCommit, "log", "cil_commit", EventKind::kInstant, {"seq"}, {"items"},
                  {"bytes"}, {"space_used"});
WALFS_TRACE_EVENT(kTraceCilThrottle, "log", "cil_throttle", EventKind::kInstant, {"seq"},
                  {"space_used"}, {"wait_ns"});
WALFS_TRACE_EVENT(kTraceCilPush, "log", "cil_push", EventKind::kInstant, {"seq"}, {"items"},
                  {"bytes"}, {"background"});
WALFS_TRACE_EVENT(kTraceCilCommitted, "log", "cil_committed", EventKind::kInstant, {"seq"},
                  {"start_lsn", FieldKind::kHex}, {"commit_lsn", FieldKind::kHex});
WALFS_TRACE_EVENT(kTraceAilPush, "log", "ail_push", EventKind::kInstant, {"target", FieldKind::kHex},
                  {"pushed"}, {"pinned"}, {"busy"});
WALFS_TRACE_EVENT(kTraceOverheadCharge, "log", "overhead_overcommit", EventKind::kInstant,
                  {"bytes"});

}  // namespace walfs::journal
