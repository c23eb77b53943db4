// Cil: the Committed Item List and its checkpoints (XFS's delayed logging,
// xfs_log_cil.c).
//
// A transaction's commit does not write the log.  It formats its items into
// the current checkpoint context; an item already there (relogged) replaces
// its earlier copy, so a block changed by a thousand transactions is written
// to the log once per checkpoint.  A push swaps in a fresh context and
// writes the old one as one log transaction (tid of its own):
//
//   START  TRANS_HEADER(seq, items)  item ops ...  COMMIT
//
// When the record holding the COMMIT is durable (with every record before
// it: LogWriter's stable head), the items are unpinned and enter the AIL at
// the checkpoint's start LSN, and the AIL head advances to the commit record
// (LogSpace gets the written bytes back as tail space).  A checkpoint
// written lazily (lazy_push_ns) keeps its items pinned until a force or a
// later preflush makes it durable: the AIL never writes back metadata whose
// log records a power cut could still take away.
//
// Pushes happen in the background when a context holds
// min(log/8, 32 MiB) (push_bytes); committers are throttled at twice that
// until the push has swapped contexts; and on a force, which does the push
// on its own thread when none is under way (saving fsync the hand-off to the
// push thread and back).  Forces of the same sequence share one push and
// one log write (group commit).
//
// Space: a committing transaction's ticket pays for the bytes its items add
// to the context (a negative delta, a relogged item that shrank, is
// refunded) and for its share of the checkpoint's overhead: the start,
// header and commit ops, and a header sector, padding and split op header
// for every record the checkpoint may span.  That overhead, kept by the
// context as its fund (the checkpoint's own ticket, XFS's ctx->ticket), is
// handed to the log writer with the checkpoint.  A transaction's unit
// reservation covers its share: ReservationTable includes
// CheckpointOverhead().
//
// Pushes are written one at a time, so checkpoints reach the log, and
// complete, in sequence order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/histogram.h"
#include "base/mutex.h"
#include "base/status.h"
#include "journal/ail.h"
#include "journal/log_item.h"
#include "journal/log_space.h"
#include "journal/log_writer.h"
#include "journal/ticket.h"

namespace walfs::journal {

struct CilOptions {
  LogWriter* writer = nullptr;
  Ail* ail = nullptr;
  LogSpace* space = nullptr;
  // Background push threshold; 0: min(log bytes / 8, 32 MiB).
  std::int64_t push_bytes = 0;
  // xfs_log_worker: committed changes are pushed at most this long after the
  // first of them, even if nobody forces them and the CIL is far from
  // push_bytes, so that a crash loses at most this much un-fsynced work.
  // 0: only when the CIL fills or on a force.
  std::int64_t push_interval_ns = 0;
  // The lazy push: a context is pushed at most this long after its first
  // commit and its records written to the device without FUA or flush
  // (LogWriter::WriteOut), so that a killed daemon loses nothing committed
  // more than this long before (the device, or the host's page cache under
  // an image file, outlives the daemon), while a power cut may still lose it
  // (only a force makes it durable).  The first commit into an empty context
  // wakes the push thread, which sleeps until the delay has passed: the
  // commits of that delay share one push and one log write.  0: off.
  std::int64_t lazy_push_ns = 0;
  // The tid of the first checkpoint; later ones count up from it.
  std::uint32_t first_tid = 1;
  // Called once when the CIL fails the log (an overrun, a failed write).
  std::function<void(const Status&)> on_error{};
};

struct CilStats {
  std::uint64_t seq = 0;               // the current context's sequence
  std::uint64_t items = 0;             // items in it
  std::int64_t space_used = 0;         // bytes it holds (items + overhead fund)
  std::int64_t push_bytes = 0;
  std::uint64_t commits = 0;
  std::uint64_t relogs = 0;            // item already in the context
  std::uint64_t pushes = 0;            // checkpoints written
  std::uint64_t background_pushes = 0;
  std::uint64_t timed_pushes = 0;      // push_interval_ns passed with nobody forcing
  std::uint64_t lazy_pushes = 0;       // lazy_push_ns passed with nobody forcing
  std::uint64_t lazy_written = 0;      // of those, written out
  std::uint64_t kick_flushes = 0;      // forces of lazily written checkpoints (PushAsync, timed)
  // A lazy push: from the context's first commit to its records being
  // written (the bound on what a killed daemon loses).
  std::int64_t lazy_p50_ns = 0;
  std::int64_t lazy_p99_ns = 0;
  std::int64_t lazy_max_ns = 0;
  std::uint64_t forced_pushes = 0;
  std::uint64_t inline_pushes = 0;     // pushes done on a forcer's thread
  std::uint64_t empty_forces = 0;      // forces with nothing new to write
  std::uint64_t forces = 0;
  std::uint64_t throttles = 0;
  std::uint64_t committed = 0;         // checkpoints on disk
  std::uint64_t aborted = 0;           // checkpoints failed by a shutdown
  std::uint64_t checkpoint_items = 0;  // over all checkpoints written
  std::uint64_t checkpoint_bytes = 0;
  std::uint64_t max_checkpoint_bytes = 0;
  std::uint64_t committed_seq = 0;
  std::uint64_t written_seq = 0;       // the last checkpoint whose records reached the image
};

class Cil {
 public:
  // The trans-header op body: seq u64, item count u32, item bytes u32.
  static constexpr std::int64_t kTransHeaderBytes = 16;
  // What a checkpoint whose items take `item_bytes` (op headers included)
  // costs on top of them in records of `payload` bytes.  Also the most
  // a transaction logging `item_bytes` can add to a context's overhead.
  static std::int64_t CheckpointOverhead(std::int64_t item_bytes, std::uint32_t payload);

  explicit Cil(const CilOptions& options);
  ~Cil();  // Stop()s
  Cil(const Cil&) = delete;
  Cil& operator=(const Cil&) = delete;

  void Start();
  // Stops the push thread.  Does not write what is committed: Force(0) first.
  void Stop();

  // xfs_log_commit_cil: formats `items` into the current context, pins the
  // ones new to it, and charges `tic` (see above).  Returns the sequence
  // the transaction is in.  May wait (throttle).  Shutdown when the log is
  // down; Internal (and the log shuts down) when the ticket cannot pay: the
  // reservation table under-estimated the transaction.
  Result<std::uint64_t> Commit(Ticket* tic, std::span<LogItem* const> items);
  // Makes sequence `seq` (0: every commit so far) durable: pushes it if it is
  // still current and waits for its commit record to be on disk.
  Status Force(std::uint64_t seq = 0);
  // Asks for a push of the current context without waiting, and for its
  // commit record to be written promptly (the grant-head sleeper's kick);
  // with an empty context, for checkpoints written lazily to be made
  // durable, so that their items unpin and their log space can come back.
  void PushAsync();

  // Fails every waiter and refuses further commits.
  void Shutdown(const Status& why);

  // Called with a checkpoint's sequence once its commit record is durable
  // (after committed_seq() has reached it), on the log's completion thread:
  // it must be short and must not wait for the log.  Online discard uses it
  // (fs/alloc.h).  Replacing or clearing the hook waits for a call in
  // progress, so after SetCommittedHook(nullptr) returns the old hook is
  // never called again.
  void SetCommittedHook(std::function<void(std::uint64_t seq)> hook) EXCLUDES(hook_mu_);

  std::uint64_t current_seq() const;
  // The newest sequence whose checkpoint is on disk.
  std::uint64_t committed_seq() const;
  CilStats Stats() const;

 private:
  struct Entry {
    LogItem* item;
    std::string body;
  };
  struct Ctx {
    std::uint64_t seq = 0;
    std::uint32_t tid = 0;
    std::vector<Entry> entries;
    std::int64_t item_bytes = 0;  // op headers and bodies
    std::int64_t fund = 0;        // overhead charged so far
    std::int64_t first_commit_ns = 0;  // MonotonicNanos() of its first item (timed, lazy pushes)
  };
  void PushMain();
  // One push: swaps the current (non-empty) context out, writes it and gets
  // its commit record out, with mu_ let go meanwhile (pushing_ keeps a
  // second pusher out, so checkpoints are still written one at a time, in
  // order).  On the push thread, or on a forcer's (Force).  `lazy`: write
  // it out without making it durable (lazy_push_ns).
  void PushLocked(bool lazy = false) REQUIRES(mu_);
  // Writes one swapped-out context; returns the commit record's LSN.
  Result<Lsn> WriteCheckpoint(std::shared_ptr<Ctx> ctx, bool lazy);
  void Committed(const std::shared_ptr<Ctx>& ctx, const Status& s, const WriteResult& res);
  void Fail(const Status& why);

  const CilOptions options_;
  const std::int64_t push_bytes_;

  mutable Mutex mu_;
  std::unique_ptr<Ctx> ctx_ GUARDED_BY(mu_);
  std::uint32_t next_tid_ GUARDED_BY(mu_);
  std::uint64_t push_target_ GUARDED_BY(mu_) = 0;   // push contexts up to this seq
  bool push_urgent_ GUARDED_BY(mu_) = false;        // and get the commit record out
  bool flush_wanted_ GUARDED_BY(mu_) = false;       // force pushed_lsn_ (PushAsync, timed)
  // The first commit of the oldest lazily written checkpoint not yet
  // durable (0: none), and the newest lazily pushed sequence: the timed push
  // runs from it, so commit= bounds what a power cut loses.
  std::int64_t lazy_first_ns_ GUARDED_BY(mu_) = 0;
  std::uint64_t lazy_seq_ GUARDED_BY(mu_) = 0;
  bool pushing_ GUARDED_BY(mu_) = false;            // a push is between swap and pushed_seq_
  std::uint64_t pushed_seq_ GUARDED_BY(mu_) = 0;    // written to the log writer
  Lsn pushed_lsn_ GUARDED_BY(mu_) = kNullLsn;       // its commit record
  std::uint64_t committed_seq_ GUARDED_BY(mu_) = 0; // on disk
  Status status_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  bool started_ GUARDED_BY(mu_) = false;
  CilStats stats_ GUARDED_BY(mu_);
  Histogram lazy_ns_;  // lazy pushes: first commit -> written
  CondVar push_cv_;   // work for the push thread
  CondVar state_cv_;  // contexts swapped, pushed, committed; shutdown
  // Lock order: after mu_ is let go (never both); held across a hook call.
  Mutex hook_mu_;
  std::function<void(std::uint64_t seq)> committed_hook_ GUARDED_BY(hook_mu_);
  std::thread pusher_;
};

}  // namespace walfs::journal
