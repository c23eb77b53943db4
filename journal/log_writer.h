// LogWriter: the in-core log buffers (iclogs) and the writes of log records
// (XFS's xlog_write, xlog_state_* and xlog_sync).
//
// A ring of iclogs, each one log record in the making: writers copy ops into
// the current one; when it is full (or a force wants it on disk) it is
// switched out and, once the last writer has let go of it, written to the
// log with one write (two if the record wraps past the end of the log).
// Completions are processed in LSN order whatever order the device finished
// them in, and only then does an iclog run its callbacks and become active
// again.  States, as XFS names them:
//
//   ACTIVE -> WANT_SYNC -> SYNCING -> DONE_SYNC -> CALLBACK -> DIRTY -> ACTIVE
//
// Space: every byte the writer puts in the log -- ops, a record's header
// sector, its padding to a whole sector, the op headers of bodies split
// across records -- is paid from a fund of grant space that callers hand
// over with each Write (a checkpoint hands over everything its transactions
// were charged); a fund that runs short is overcommitted on the grant heads,
// as XFS does with the round-off of a record written without a ticket, and
// counted.  Surplus beyond one record's worst-case overhead goes back.
// So the bytes between two record LSNs are always exactly bytes the grant
// heads were charged for, which is what lets the AIL hand them back when a
// checkpoint completes (Ail::InsertCheckpoint).
//
// Durability: a record is written FUA unless every op in it came from a
// lazy Write (a checkpoint nobody has forced yet: see Cil's lazy push); a
// record that holds a commit record, lazy or forced, or whose tail LSN moved
// since the last record, is written with a preflush too (both halves of a
// record that wraps), so that the file data a commit exposes, the metadata
// writeback the tail move relies on and the records before it are stable
// first (a lazy commit without it could reach the disk before the data its
// transaction maps as written: stale data after a power cut).  A lazy
// record is otherwise a plain write: it
// reaches the device (for an image file, the host's page cache, which
// outlives the daemon) but not stable storage.  So the writer keeps two
// heads: `written` (every record up to it completed, in LSN order) and
// `stable` (every record up to it is durable: FUA writes in an unbroken chain
// from a durable point, or covered by a completed flush).  Callbacks run only
// once their record is stable, so a lazy checkpoint keeps its items pinned
// (the AIL cannot write them back: the write-ahead rule for a power cut)
// until a force, or a later preflush, covers it.  A force of a record that
// was written but is not stable issues a device flush (group commit: one
// flush covers every forcer of a record written before it).  And no record is
// written more than one ring (logbufs x logbsize) past the stable head
// without a preflush, so after a power cut the records that may be missing
// all lie in one in-flight window before the head, where recovery's head
// search looks for holes (log_head.h).
//
// Lock order: the writer's lock before the AIL's (the tail is read with the
// writer's lock held).  Callbacks run without the writer's lock, one at a
// time, on the device's completion thread (or on a thread failing the log).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/histogram.h"
#include "base/mutex.h"
#include "base/status.h"
#include "journal/log_format.h"
#include "journal/log_region.h"
#include "journal/log_space.h"
#include "journal/lsn.h"

namespace walfs::journal {

enum class IclogState : std::uint8_t { kActive, kWantSync, kSyncing, kDoneSync, kCallback, kDirty };
std::string_view IclogStateName(IclogState s);

// One op to write: its header fields and body (len is the body's size).
struct LogOp {
  std::uint32_t tid = 0;
  std::uint8_t flags = 0;  // kOpStart, kOpCommit, kOpUnmount; CONTINUE/WAS_CONT are the writer's
  ItemType type = ItemType::kNone;
  std::string_view body;
};

struct WriteResult {
  Lsn start_lsn = kNullLsn;  // the record holding the first op
  Lsn end_lsn = kNullLsn;    // the record holding the last op
};

// Runs once the record holding a Write's last op, and every record before
// it, is durable (stable); or with the error that stopped that.
using LogDoneCallback = std::function<void(const Status&, const WriteResult&)>;

struct LogWriterOptions {
  LogRegion region;
  std::uint32_t iclog_count = 8;
  // The size of a record, header sector included (XFS's logbsize).  A
  // multiple of 512 in [kMinIclogBytes, kMaxIclogBytes].
  std::uint32_t iclog_bytes = 32 * 1024;
  Lsn head = MakeLsn(1, 0);  // where the first record goes
  Lsn prev = kNullLsn;       // the record before it
  LogSpace* space = nullptr;
  // The log tail now (the AIL's).  Called with the writer's lock held.
  std::function<Lsn()> tail_lsn{};
  // Called once, without locks, when an I/O error fails the log.
  std::function<void(const Status&)> on_error{};
  // The most log, in sectors, that records written but not stable may span
  // (past it a record takes a preflush): what recovery's head search can
  // find holes in (Log passes RecoveryWindowSectors less one record).  0 or
  // less than the ring (logbufs x logbsize): the ring.
  std::uint32_t unstable_sectors = 0;
  // fsync without hand-offs (XFS's xlog_sync called from xfs_log_force):
  // a forced record whose last reference the forcer itself drops is
  // written by the forcer, with the device's synchronous Write, and its
  // completion processed on the forcer's thread -- its callbacks run there
  // too -- instead of being submitted to the device's threads and the
  // forcer woken by them.  Group commit is unchanged: forcers of a record
  // switched out or being written wait for it as before.  false: every
  // record through Submit (the comparison log_bench --force-io makes).
  bool inline_force_io = true;
};

struct LogWriterStats {
  Lsn head = kNullLsn;          // where the next record starts
  Lsn durable = kNullLsn;       // the last stable record, with all before it
  Lsn written = kNullLsn;       // the last record written, with all before it
  std::uint64_t writes = 0;     // Write calls
  std::uint64_t ops = 0;
  std::uint64_t op_bytes = 0;   // op headers and bodies copied
  std::uint64_t split_ops = 0;  // bodies continued in the next record
  std::uint64_t records = 0;    // records submitted
  std::uint64_t record_bytes = 0;  // on disk, headers and padding included
  std::uint64_t wrapped_records = 0;
  std::uint64_t preflushes = 0;
  std::uint64_t lazy_records = 0;   // written without FUA (only lazy ops in them)
  std::uint64_t span_preflushes = 0;  // preflushes only because a ring passed the stable head
  std::uint64_t flushes = 0;        // device flushes of a force whose record was written lazily
  std::uint64_t forces = 0;         // Force/ForceAll calls
  std::uint64_t force_switches = 0; // forces that switched out an active iclog
  std::uint64_t force_waits = 0;    // forces that waited for I/O
  std::uint64_t inline_records = 0; // records a forcer wrote itself (inline_force_io)
  std::uint64_t iclog_waits = 0;    // writers that waited for a free iclog
  std::uint64_t overcommitted_bytes = 0;  // overhead the fund did not cover
  std::uint64_t returned_fund_bytes = 0;
  std::uint64_t state_changes = 0;
  std::int64_t write_p50_ns = 0;  // log write submit -> complete
  std::int64_t write_p99_ns = 0;
  // Forces that waited for I/O: call -> the forced record stable.
  std::int64_t force_wait_p50_ns = 0;
  std::int64_t force_wait_p99_ns = 0;
  std::int64_t force_wait_max_ns = 0;
};

class LogWriter {
 public:
  static constexpr std::uint32_t kMinIclogBytes = 16 * 1024;
  static constexpr std::uint32_t kMaxIclogCount = 16;
  static constexpr std::uint32_t kMaxIclogBytes = kLogSectorSize + kMaxRecordPayload;
  // The most overhead one record can cost: its header sector, a sector of
  // padding and one split op header.  The CIL reserves this per record.
  static constexpr std::int64_t kRecordOverhead = 2 * kLogSectorSize + kOpHeaderSize;

  static Result<std::unique_ptr<LogWriter>> Create(const LogWriterOptions& options);
  // Waits for every record submitted to complete.  Writes nothing else:
  // call ForceAll (or WriteUnmount) first for durability.
  ~LogWriter();
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Copies ops into iclogs in order, splitting bodies across records.  `fund`
  // bytes of grant space are handed over to pay for them (see above).  `commit`: the
  // last op commits a transaction (its record gets a preflush, lazy or not).
  // `lazy`: nobody waits for these ops to be durable yet; a record holding
  // only lazy ops is written without FUA.  `done` runs as described
  // above.  Writes are serialized.  Fails once the log is shut down (no op is
  // copied then).
  Result<WriteResult> Write(std::span<const LogOp> ops, std::int64_t fund, bool commit,
                            LogDoneCallback done, bool lazy = false);
  // Makes the record at `lsn` and every record before it durable, switching
  // out the iclog that holds it if it is still being filled (it is then
  // written FUA with a preflush); concurrent forcers of the same record share
  // one write (group commit).  A record already written lazily gets a device
  // flush.  Returns once the records' callbacks have run.
  Status Force(Lsn lsn);
  // Gets the record at `lsn` and every record before it written to the
  // device, switching out the iclog that holds it if it is still being
  // filled, without making them durable: what a killed daemon must not lose,
  // at no flush's cost.  Returns once they completed.
  Status WriteOut(Lsn lsn);
  // Makes everything written so far durable.
  Status ForceAll();
  // A clean-unmount record of its own, then ForceAll.  `fund` must cover a
  // header sector and an op header (kUnmountBytes).
  static constexpr std::int64_t kUnmountBytes = 2 * kLogSectorSize;
  Status WriteUnmount(std::uint32_t tid, std::int64_t fund);

  // Waits until no record is in flight and every callback has run.
  void WaitIdle() EXCLUDES(mu_);
  // Returns the overhead fund still held to the grant heads (clean unmount).
  void ReturnFund() EXCLUDES(mu_);
  // Fails the log: no more writes; forces and callbacks see `why`; the
  // on_error hook runs once (unless the failure started here).
  void Shutdown(const Status& why);
  Status status() const;

  std::uint32_t payload_capacity() const { return capacity_; }
  Lsn head() const;
  Lsn durable_lsn() const;  // stable
  Lsn written_lsn() const;
  LogWriterStats Stats() const;

 private:
  struct Iclog;
  explicit LogWriter(const LogWriterOptions& options);

  Result<WriteResult> WriteLocked(std::span<const LogOp> ops, std::int64_t fund, bool commit,
                                  LogDoneCallback done, bool lazy) REQUIRES(write_mu_)
      EXCLUDES(mu_);
  Iclog* CurrentLocked() REQUIRES(mu_);
  Iclog* FailCurrentLocked() REQUIRES(mu_);
  Status WaitActiveLocked(Iclog* ic) REQUIRES(mu_);
  void BeginRecordLocked(Iclog* ic) REQUIRES(mu_);
  Status SwitchLocked(Iclog* ic) REQUIRES(mu_);
  void DrawFundLocked(std::int64_t bytes) REQUIRES(mu_);
  void ReturnFundLocked() REQUIRES(mu_);
  // `signal`: wake cv_'s waiters now (ProcessCompletions wakes them once,
  // after letting the lock go).
  void SetStateLocked(Iclog* ic, IclogState s, bool signal = true) REQUIRES(mu_);
  // Drops a writer's (or forcer's) reference; the last one syncs a
  // switched-out iclog.  `inline_io`: a forcer's, which writes it itself
  // (LogWriterOptions::inline_force_io).
  void Release(Iclog* ic, bool inline_io = false) EXCLUDES(mu_);
  void Sync(Iclog* ic, bool inline_io = false) EXCLUDES(mu_);
  void PartDone(Iclog* ic, const Status& s) EXCLUDES(mu_);
  void ProcessCompletions() EXCLUDES(mu_);
  // Switches out the current iclog if it holds `lsn`; returns it (with a
  // reference the caller Release()s) or nullptr.  `durable`: write it FUA
  // with a preflush.
  Result<Iclog*> SwitchForLocked(Lsn lsn, bool durable) REQUIRES(mu_);
  // Waits until the record at `lsn` is stable and its callbacks have run,
  // flushing the device when it was written but is not stable.
  Status WaitStableLocked(Lsn lsn) REQUIRES(mu_);

  const LogRegion region_;
  const std::uint32_t capacity_;  // payload bytes per record
  LogSpace* const space_;
  const std::function<Lsn()> tail_lsn_;
  const std::function<void(const Status&)> on_error_;

  Mutex write_mu_;  // serializes Write calls: one op stream at a time
  mutable Mutex mu_;  // the icloglock
  std::vector<std::unique_ptr<Iclog>> ring_ GUARDED_BY(mu_);
  std::size_t current_ GUARDED_BY(mu_) = 0;  // the iclog being filled
  std::size_t oldest_ GUARDED_BY(mu_) = 0;   // the next to complete, in LSN order
  Lsn head_ GUARDED_BY(mu_);         // where the current (or next) record starts
  Lsn prev_ GUARDED_BY(mu_);         // the last record switched out
  // Completions processed up to this record (and where it ends); stable up
  // to this record (and where it ends); callbacks run up to this record.
  // done_ <= stable_ <= written_.
  Lsn written_ GUARDED_BY(mu_);
  Lsn written_end_ GUARDED_BY(mu_);
  Lsn stable_ GUARDED_BY(mu_);
  Lsn stable_end_ GUARDED_BY(mu_);
  Lsn done_ GUARDED_BY(mu_);
  bool flushing_ GUARDED_BY(mu_) = false;  // a force's device flush is under way
  struct Pending {
    Lsn lsn;  // the record holding the Write's last op
    LogDoneCallback done;
    WriteResult res;
  };
  // Callbacks of written records waiting for them to be stable, in LSN order.
  std::deque<Pending> pending_ GUARDED_BY(mu_);
  // The most written past stable_end_ (LogWriterOptions::unstable_sectors).
  const std::uint32_t unstable_sectors_;
  const bool inline_force_io_;
  // The tail written in the last record; at first, the tail at open (its
  // writeback, recovery's, was flushed before the log opened).
  Lsn last_tail_ GUARDED_BY(mu_);
  std::int64_t fund_ GUARDED_BY(mu_) = 0;
  Status status_ GUARDED_BY(mu_);
  bool processing_ GUARDED_BY(mu_) = false;  // a thread is running callbacks
  bool reprocess_ GUARDED_BY(mu_) = false;
  bool error_reported_ GUARDED_BY(mu_) = false;
  LogWriterStats stats_ GUARDED_BY(mu_);
  CondVar cv_;  // iclog states and durable_ changed
  Histogram write_ns_;  // submit -> complete of each record
  Histogram force_wait_ns_;  // Force() that waited: call -> stable
};

}  // namespace walfs::journal
