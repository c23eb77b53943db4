// Transaction: one atomic change to the metadata (XFS's xfs_trans), with a
// ticket from the reservation table.
//
//   WALFS_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(log, TransType::kTruncate));
//   buf->Lock(); ...change it...; buf->LogRange(a, b); tx.Join(buf);
//   WALFS_RETURN_IF_ERROR(tx.Roll());          // a rolling step: commit, regrant
//   ... next step: join what it changes ...
//   WALFS_ASSIGN_OR_RETURN(std::uint64_t seq, tx.Commit());
//   buf->Unlock();
//
// Begin may wait for log space.  Commit hands the joined items to the CIL
// (the log is written later, by a checkpoint) and returns the unused part of
// the reservation; CommitSync also forces the log (fsync, O_SYNC).  Roll
// commits a step of a permanent transaction and regrants its ticket for the
// next.  Cancel returns the reservation; cancelling a transaction that
// joined items (dirty) shuts the log down, as XFS does, because the
// in-memory metadata no longer matches anything the log can reproduce.  A
// Transaction that is destroyed live is cancelled.
//
// The caller holds each joined item's lock from its change until Commit or
// Roll returns; the CIL formats items during the call.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "journal/log_item.h"
#include "journal/reservation.h"
#include "journal/ticket.h"

namespace walfs::journal {

class Log;

class Transaction {
 public:
  static Result<Transaction> Begin(Log* log, TransType type);
  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  ~Transaction();

  // Logs the item's changes at commit.  Joining twice is harmless.
  void Join(LogItem* item);
  bool dirty() const { return !items_.empty(); }
  TransType type() const { return type_; }
  Ticket* ticket() const { return ticket_.get(); }

  // Commits into the CIL; returns the checkpoint sequence to force for
  // durability.  The transaction is finished afterwards, even on error.
  Result<std::uint64_t> Commit();
  Result<std::uint64_t> CommitSync();
  // Commits this step and starts the next with the same ticket (permanent
  // transactions only).  May wait for log space.
  Status Roll();
  void Cancel();

 private:
  Transaction(Log* log, TransType type, TicketRef ticket);
  Result<std::uint64_t> CommitStep();

  Log* log_;
  TransType type_;
  TicketRef ticket_;  // null once finished
  std::vector<LogItem*> items_;
};

}  // namespace walfs::journal
