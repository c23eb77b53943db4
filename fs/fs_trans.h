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

#include <cstdint>
#include <functional>
#include <vector>

#include "base/status.h"
#include "fs/buf_cache.h"
#include "journal/log.h"
#include "journal/transaction.h"

namespace walfs::fs {

class FsTransaction {
 public:
  static Result<FsTransaction> Begin(journal::Log* log, journal::TransType type);
  FsTransaction(FsTransaction&& other) noexcept = default;
  FsTransaction& operator=(FsTransaction&&) = delete;
  ~FsTransaction();  // cancels (and unlocks) a live transaction

  // Locks the buffer for this transaction (no-op if it already holds it).
  void Hold(const BufRef& buf);
  // The same without waiting: false if another transaction holds it.
  bool TryHold(const BufRef& buf);
  bool Holds(const BufRef& buf) const;
  // Logs bytes [first, last] of a held buffer.
  void LogRange(const BufRef& buf, std::uint32_t first, std::uint32_t last);

  // Runs after a successful Commit with the checkpoint sequence the changes
  // went into (e.g. to date busy extents).
  void OnCommit(std::function<void(std::uint64_t seq)> hook) { on_commit_.push_back(std::move(hook)); }

  Result<std::uint64_t> Commit();
  Status Roll();
  void Cancel();

  journal::Log* log() const { return log_; }
  journal::Transaction& tx() { return tx_; }

 private:
  FsTransaction(journal::Log* log, journal::Transaction tx) : log_(log), tx_(std::move(tx)) {}
  void UnlockAll();

  journal::Log* log_;
  journal::Transaction tx_;
  std::vector<BufRef> held_;
  std::vector<std::function<void(std::uint64_t)>> on_commit_;
  bool done_ = false;
};

}  // namespace walfs::fs
