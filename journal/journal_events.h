// The journal's trace events (subsystem "journal").  Declared here, defined
// once in journal_events.cc; emitted with WALFS_TRACE(event, fields...).
// `head` fields are 0 for the reserve head, 1 for the write head.
#pragma once

#include "tracing/event.h"

namespace walfs::journal {

extern tracing::EventDef kTraceReserve;        // tid, unit, cnt, permanent
extern tracing::EventDef kTraceGrantSleep;     // head, tid, need, free, queued
extern tracing::EventDef kTraceGrantWakeup;    // head, tid, got_space (woken waiter's view)
extern tracing::EventDef kTraceGrantGranted;   // head, tid, need, wait_ns (after a sleep)
extern tracing::EventDef kTraceGrantWake;      // head, tid, need (a waker signals or queues a waiter)
extern tracing::EventDef kTraceWakeBatch;      // head, count (a wake queue flushed)
extern tracing::EventDef kTraceRegrant;        // tid, cnt, waits (cnt 0: waits on the write head)
extern tracing::EventDef kTraceTicketRegrant;  // tid, cnt, returned
extern tracing::EventDef kTraceTicketUngrant;  // tid, returned
extern tracing::EventDef kTraceReturnSpace;    // bytes, tail_space
extern tracing::EventDef kTraceMoveTail;       // bytes, tail_space
extern tracing::EventDef kTraceGrantBytes;     // counter: reserve, write, tail_space
extern tracing::EventDef kTraceShutdown;       // (none)

// Log recovery (log_recover.h).
extern tracing::EventDef kTraceRecoverStart;   // head, tail, empty, clean, dry_run
extern tracing::EventDef kTraceRecoverPass;    // pass (0 read, 1 decode, 2 replay), records,
                                               // transactions, count (0: open dropped,
                                               // 1: buffer versions, 2: blocks changed)
extern tracing::EventDef kTraceRecoverBuffer;  // blkno, start_lsn, action (ReplayAction)
extern tracing::EventDef kTraceRecoverDone;    // replayed, skipped_newer, cancelled,
                                               // blocks_written, dry_run

}  // namespace walfs::journal
