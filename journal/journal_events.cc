#include "journal/journal_events.h"

namespace walfs::journal {

using tracing::EventKind;
using tracing::FieldKind;

// The grant-head events carry the wake mode (journal/wake_mode.h: 0 inline,
// 1 waking, 2 wakeq) so a trace of several modes (grant_head_bench runs
// them one after another) is told apart by `walfs-trace stats`; grant_bytes
// carries the log's size, so the share of it in use is known.

WALFS_TRACE_EVENT(kTraceReserve, "journal", "reserve", EventKind::kInstant, {"tid"}, {"unit"},
                  {"cnt"}, {"permanent"});
WALFS_TRACE_EVENT(kTraceGrantSleep, "journal", "grant_sleep", EventKind::kInstant, {"head"},
                  {"tid"}, {"need"}, {"free"}, {"queued"}, {"mode"});
WALFS_TRACE_EVENT(kTraceGrantWakeup, "journal", "grant_wakeup", EventKind::kInstant, {"head"},
                  {"tid"}, {"got_space"}, {"mode"});
WALFS_TRACE_EVENT(kTraceGrantGranted, "journal", "grant_granted", EventKind::kInstant, {"head"},
                  {"tid"}, {"need"}, {"wait_ns"}, {"mode"});
WALFS_TRACE_EVENT(kTraceGrantWake, "journal", "grant_wake", EventKind::kInstant, {"head"},
                  {"tid"}, {"need"}, {"mode"});
WALFS_TRACE_EVENT(kTraceWakeBatch, "journal", "wake_batch", EventKind::kInstant, {"head"},
                  {"count"}, {"mode"});
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
                  {"write"}, {"tail_space"}, {"log_bytes"});
WALFS_TRACE_EVENT(kTraceShutdown, "journal", "shutdown", EventKind::kInstant);

WALFS_TRACE_EVENT(kTraceRecoverStart, "journal", "recover_start", EventKind::kInstant,
                  {"head", FieldKind::kHex}, {"tail", FieldKind::kHex}, {"empty"}, {"clean"},
                  {"dry_run"});
WALFS_TRACE_EVENT(kTraceRecoverPass, "journal", "recover_pass", EventKind::kInstant, {"pass"},
                  {"records"}, {"transactions"}, {"count"});
WALFS_TRACE_EVENT(kTraceRecoverBuffer, "journal", "recover_buffer", EventKind::kInstant,
                  {"blkno"}, {"start_lsn", FieldKind::kHex}, {"action"});
WALFS_TRACE_EVENT(kTraceRecoverDone, "journal", "recover_done", EventKind::kInstant,
                  {"replayed"}, {"skipped_newer"}, {"cancelled"}, {"blocks_written"},
                  {"dry_run"});

}  // namespace walfs::journal
