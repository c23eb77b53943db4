// Ail: the Active Item List (XFS's xfs_ail and xfsaild).  Items whose
// checkpoint is on disk, ordered by LSN; the smallest LSN is the log tail.
// A pusher thread writes items back toward a target that keeps a quarter of
// the log free, forces the log when it meets pinned items, and backs off
// when it can make no progress.  When the tail moves, the space between the
// old and new tail is handed back to LogSpace, which wakes grant-head
// waiters — the chain push -> force -> writeback -> tail move -> wake has no
// gap (the XFS hangs of 2012 and 2019 were gaps in it).
//
//   Ail ail({.space = space, .log_sectors = n, .force_log = [&] { log.Force(); }});
//   ail.Start();
//   ail.Insert(items, checkpoint_lsn);       // checkpoint on disk
//   ail.AdvanceHead(checkpoint_end_lsn);     // its log space becomes tail space
//   ...  item writeback completes:  ail.DeleteIfLsn(item, lsn_written);
//
// Space accounting with LogSpace: AdvanceHead(new) calls ReturnSpace(bytes
// from the old head to the new); a tail move calls MoveTail(bytes from the
// old tail to the new).  So LogSpace's tail_space is always the span from
// the tail to the AIL head.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <span>
#include <thread>

#include <boost/intrusive/list.hpp>

#include "base/mutex.h"
#include "journal/log_item.h"
#include "journal/log_space.h"
#include "journal/lsn.h"

namespace walfs::journal {

struct AilOptions {
  LogSpace* space = nullptr;
  std::uint32_t log_sectors = 0;
  Lsn initial_head = MakeLsn(1, 0);  // where the log head was at mount
  // Forces the log (all checkpoints to disk), so that pinned items unpin.
  // Called from the pusher thread, without the AIL lock.
  std::function<void()> force_log{};
  // Back-off when no progress is possible (xfsaild: 20 ms stuck, 50 ms idle).
  std::int64_t stuck_backoff_ms = 20;
};

struct AilStats {
  std::uint64_t items = 0;
  Lsn tail = kNullLsn;
  Lsn head = kNullLsn;
  Lsn target = kNullLsn;
  std::uint64_t pushes = 0;          // Push() calls
  std::uint64_t pushed = 0;          // kSuccess
  std::uint64_t pinned = 0;
  std::uint64_t locked = 0;
  std::uint64_t flushing = 0;
  std::uint64_t log_forces = 0;
  std::uint64_t tail_moves = 0;
  std::uint64_t push_all_requests = 0;
  std::uint64_t sleeps = 0;
};

class Ail {
 public:
  explicit Ail(const AilOptions& options);
  ~Ail();  // stops the pusher; items still in the AIL are unlinked
  Ail(const Ail&) = delete;
  Ail& operator=(const Ail&) = delete;

  void Start();
  void Stop();

  // Items of a checkpoint whose commit record is on disk enter at `lsn`;
  // an item already in the AIL moves to the new LSN (relogging).
  void Insert(std::span<LogItem* const> items, Lsn lsn) EXCLUDES(mu_);
  // A checkpoint is on disk: the head advances to its commit record and its
  // items enter at `start`, under one lock, so the tail never passes the head
  // (Insert then AdvanceHead would let an empty AIL's tail run ahead of its
  // head; AdvanceHead then Insert would let it run ahead of the items).
  void InsertCheckpoint(std::span<LogItem* const> items, Lsn start, Lsn head) EXCLUDES(mu_);
  // The checkpoint ends at `head`: its log space turns from grant space into
  // tail space (LogSpace::ReturnSpace).  Heads only move forward.
  void AdvanceHead(Lsn head) EXCLUDES(mu_);
  // An item's writeback completed: it leaves the AIL, and if it was the
  // oldest the tail moves (LogSpace::MoveTail, which wakes waiters).
  void Delete(LogItem* item) EXCLUDES(mu_);
  // Writeback of the item's state as of `flushed_lsn` completed: it leaves
  // the AIL unless it was relogged since (it is then at a newer LSN, or not
  // in the AIL because it is pinned in a checkpoint again).  Returns whether
  // it left (xfs_iflush_done / xfs_buf_item_done).
  bool DeleteIfLsn(LogItem* item, Lsn flushed_lsn) EXCLUDES(mu_);

  // Push everything up to the current head (xfs_ail_push_all): called
  // before a grant-head waiter sleeps.  Never blocks.
  void PushAll() EXCLUDES(mu_);
  // Unlinks every item without writing it back: the log is halting (a
  // simulated crash, or a shutdown) and the items' owners may go away.
  void RemoveAll() EXCLUDES(mu_);
  // Wait until the AIL is empty (for unmount), pushing everything.  Returns
  // false, not empty, once the log has shut down (Shutdown()).
  bool WaitEmpty() EXCLUDES(mu_);
  // The log is down: the pusher stops writing items back (they may hold
  // changes that never reached the log), and WaitEmpty stops waiting.
  void Shutdown() EXCLUDES(mu_);

  Lsn tail_lsn() const EXCLUDES(mu_);
  Lsn head_lsn() const EXCLUDES(mu_);
  AilStats Stats() const EXCLUDES(mu_);

 private:
  using ItemList = boost::intrusive::list<LogItem, boost::intrusive::constant_time_size<true>>;

  Lsn TailLocked() const REQUIRES(mu_);
  void InsertLocked(std::span<LogItem* const> items, Lsn lsn) REQUIRES(mu_);
  void AdvanceHeadLocked(Lsn head) REQUIRES(mu_);
  void MoveTailLocked(Lsn old_tail) REQUIRES(mu_);
  Lsn ComputeTargetLocked() const REQUIRES(mu_);
  void PusherMain();
  std::uint64_t Bytes(Lsn from, Lsn to) const;

  const AilOptions options_;

  // Lock order: Ail::mu_ before GrantHead locks (MoveTail is called with mu_
  // held so that tail moves are applied in order).
  mutable Mutex mu_;
  ItemList items_ GUARDED_BY(mu_);   // sorted by ail_lsn_, oldest first
  Lsn head_ GUARDED_BY(mu_);
  Lsn last_tail_ GUARDED_BY(mu_);    // the tail LogSpace was last told about
  bool push_all_ GUARDED_BY(mu_) = false;
  bool stop_ GUARDED_BY(mu_) = false;
  bool shutdown_ GUARDED_BY(mu_) = false;
  bool kicked_ GUARDED_BY(mu_) = false;
  AilStats stats_ GUARDED_BY(mu_);
  CondVar pusher_cv_;
  CondVar empty_cv_;
  std::thread pusher_;
};

}  // namespace walfs::journal
