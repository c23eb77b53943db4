#include "journal/journal_events.h"

namespace walfs::journal {

using tracing::EventKind;
using tracing::FieldKind;

WALFS_TRACE_EVENT(kTraceReserve, "journal", "reserve", EventKind::kInstant, {"tid"}, {"unit"},
                  {"cnt"}, {"permanent"});
WALFS_TRACE_EVENT(kTraceGrantSleep, "journal", "grant_sleep", EventKind::kInstant, {"head"},
                  {"tid"}, {"need"}, {"free"}, {"queued"});
WALFS_TRACE_EVENT(kTraceGrantWakeup, "journal", "grant_wakeup", EventKind::kInstant, {"head"},
                  {"tid"}, {"got_space"});
WALFS_TRACE_EVENT(kTraceGrantGranted, "journal", "grant_granted", EventKind::kInstant, {"head"},
                  {"tid"}, {"need"}, {"wait_ns"});
WALFS_TRACE_EVENT(kTraceGrantWake, "journal", "grant_wake", EventKind::kInstant, {"head"},
                  {"tid"}, {"need"});
WALFS_TRACE_EVENT(kTraceWakeBatch, "journal", "wake_batch", EventKind::kInstant, {"head"},
                  {"count"});
WALFS_TRACE_EVENT(kTraceRegrant, "journal", "regrant", EventKind::kInstant, {"tid"}, {"cnt"},
                  {"waits"});
WALFS_TRACE_EVENT(kTraceTicketRegrant, "journal", "ticket_regrant", EventKind::kInstant,
                  {"tid"}, {"cnt"}, {"returned"});
WALFS_TRACE_EVENT(kTraceTicketUngrant, "journal", "ticket_ungrant", EventKind::kInstant,
                  {"tid"}, {"returned"});
WALFS_TRACE_EVENT(kTraceReturnSpace, "journal", "return_space", EventKind::kInstant, {"bytes"},
                  {"tail_space"});
WALFS_TRACE_EVENT(kTraceMoveTail, "journal", "move_tail", EventKind::kInstant, {"bytes"},
                  {"tail_space"});
WALFS_TRACE_EVENT(kTraceGrantBytes, "journal", "grant_bytes", EventKind::kCounter, {"reserve"},
                  {"write"}, {"tail_space"});
WALFS_TRACE_EVENT(kTraceShutdown, "journal", "shutdown", EventKind::kInstant);

}  // namespace walfs::journal
