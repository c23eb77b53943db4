// FsTransaction: a journal transaction plus the buffers it holds locked
// (XFS's xfs_trans with its joined, locked buffers).  A buffer is locked the
// first time the transaction holds it and unlocked when the transaction
// commits or is cancelled; it stays locked across Roll(), as XFS's bhold.
//
//   WALFS_ASSIGN_OR_RETURN(FsTransaction tx, FsTransaction::Begin(log, TransType::kCreate));
//   WALFS_ASSIGN_OR_RETURN(BufRef agh, cache.Read(blkno, BlockType::kAgHeader));
//   tx.Hold(agh);                      // locks it
//   ... change agh->data() ...
//   tx.LogRange(agh, 56, 59);          // logs bytes [56, 59] and joins it
//   WALFS_RETURN_IF_ERROR(tx.Commit().status());
//
// Lock order is the caller's: buffers of AGs in ascending AG order, and
// within an AG the header before its bitmap and inode map blocks.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/status.h"
#include "fs/buf_cache.h"
#include "journal/log.h"
#include "journal/transaction.h"

namespace walfs::fs {

// Waits for an AG header that another transaction holds: how much the AGs'
// locks serialize a load (every inode and block allocation and free in an
// AG holds its header until commit, as XFS's AGI and AGF).  Counted by the
// transactions given it (FsTransaction::CountAgHeaderWaits).
struct AgHeaderWaits {
  std::atomic<std::uint64_t> waits{0}, wait_ns{0};
};

class FsTransaction {
 public:
  static Result<FsTransaction> Begin(journal::Log* log, journal::TransType type);
  FsTransaction(FsTransaction&& other) noexcept;
  FsTransaction& operator=(FsTransaction&&) = delete;
  ~FsTransaction();  // cancels (and unlocks) a live transaction

  // Locks the buffer for this transaction (no-op if it already holds it).
  void Hold(const BufRef& buf);
  // The same without waiting: false if another transaction holds it.
  bool TryHold(const BufRef& buf);
  // AG headers are locked in ascending AG order (XFS's t_highest_agno): an
  // AG at or above the highest one this transaction holds is waited for;
  // a lower one only try-locked.  False if that try failed.
  bool HoldAgHeader(const BufRef& agh, std::uint32_t agno);
  // Where HoldAgHeader counts the times it had to wait, and for how long
  // (not counted without).
  void CountAgHeaderWaits(AgHeaderWaits* waits) { ag_waits_ = waits; }
  // Unlocks a held buffer this transaction has not logged (XFS's brelse);
  // a logged one stays held until commit.
  void Release(const BufRef& buf);
  bool Holds(const BufRef& buf) const;
  // Logs bytes [first, last] of a held buffer.
  void LogRange(const BufRef& buf, std::uint32_t first, std::uint32_t last);

  // Runs after a successful Commit with the checkpoint sequence the changes
  // went into (e.g. to date busy extents).
  void OnCommit(std::function<void(std::uint64_t seq)> hook) { on_commit_.push_back(std::move(hook)); }
  // Runs after a successful Commit has put the changes in the CIL and
  // before the held buffers are unlocked: in-core state that must change
  // before anyone else sees the buffers (growfs publishes the new geometry
  // while it still holds the AG header whose length it changed).
  void OnCommitLocked(std::function<void()> hook) { on_commit_locked_.push_back(std::move(hook)); }

  // Work that must not run while the transaction holds what it holds now
  // (e.g. a free in an AG below one it holds, which only a try-lock could
  // take): Commit() commits the step so far, lets every buffer go, runs the
  // deferred work in the order given, and commits that.  A crash between the
  // two steps leaves the first step's changes without the deferred ones
  // (for frees: blocks leaked, never doubly used; fsck reports them).
  void Defer(std::function<Status(FsTransaction*)> work) { deferred_.push_back(std::move(work)); }
  // Runs before each step commits (Commit, Roll): logs in-core state that
  // only goes into buffers at commit time (dirty inodes).  Set once.
  void SetPrecommit(std::function<Status(FsTransaction*)> hook) { precommit_ = std::move(hook); }

  Result<std::uint64_t> Commit();
  // Commits this step and starts the next, keeping the buffers locked and
  // relogging them in the new step, so that a held buffer never pins the
  // log's tail while the next step waits for log space (XFS relogs held
  // items across a roll for the same reason).
  Status Roll();
  // Commits this step and starts the next with nothing held.
  Status RollReleasing();
  void Cancel();

  journal::Log* log() const { return log_; }
  journal::Transaction& tx() { return tx_; }

 private:
  FsTransaction(journal::Log* log, journal::Transaction tx) : log_(log), tx_(std::move(tx)) {}
  void UnlockAll();

  journal::Log* log_;
  journal::Transaction tx_;
  std::vector<BufRef> held_;
  std::vector<const journal::BufLogItem*> logged_;  // held buffers logged by this transaction
  std::vector<std::function<void(std::uint64_t)>> on_commit_;
  std::vector<std::function<void()>> on_commit_locked_;
  std::vector<std::function<Status(FsTransaction*)>> deferred_;
  std::function<Status(FsTransaction*)> precommit_;
  std::vector<std::pair<const journal::BufLogItem*, std::uint32_t>> held_ags_;  // AG headers held
  std::int64_t highest_ag_ = -1;  // the highest AG whose header it holds
  AgHeaderWaits* ag_waits_ = nullptr;
  bool done_ = false;
};

}  // namespace walfs::fs
