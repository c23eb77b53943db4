// Reassembling transactions from the ops of the log, in log order — the
// first half of recovery (XFS's xlog_recover_process_data): ops are grouped
// by tid; an op body split across records (CONTINUE / WAS_CONT) is joined;
// a transaction counts only once its COMMIT op is read.  What the items mean
// is the replay's business, not this file's.
//
//   TransactionAssembler tx;
//   while (reader.Next(&rec)) WALFS_RETURN_IF_ERROR(tx.AddRecord(rec.lsn, rec.record.payload));
//   for (const CommittedTransaction& t : tx.committed()) Replay(t);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "journal/log_format.h"
#include "journal/lsn.h"

namespace walfs::journal {

struct LoggedItem {
  ItemType type = ItemType::kNone;
  std::string body;
};

struct CommittedTransaction {
  std::uint32_t tid = 0;
  Lsn start_lsn = kNullLsn;   // record holding its START op
  Lsn commit_lsn = kNullLsn;  // record holding its COMMIT op
  std::vector<LoggedItem> items;
};

class TransactionAssembler {
 public:
  // Adds every op of one record's payload.  Corruption for a malformed
  // payload, a second START for an open tid, a continuation with nothing to
  // continue, or an item type this reader must understand but does not.
  Status AddRecord(Lsn lsn, std::string_view payload);

  // Committed transactions, in commit order.
  const std::vector<CommittedTransaction>& committed() const { return committed_; }
  // Transactions started but not committed (dropped by recovery).
  std::size_t open() const { return open_.size(); }
  // Ops of transactions whose START lies before the tail (ignored, as XFS does).
  std::uint64_t orphan_ops() const { return orphan_ops_; }
  // Ops of skippable item types this reader does not know.
  std::uint64_t skipped_ops() const { return skipped_ops_; }
  // Clean-unmount ops seen.
  std::uint64_t unmount_ops() const { return unmount_ops_; }

 private:
  struct Open {
    CommittedTransaction tx;
    bool continuing = false;  // the last item's body continues in the next record
    bool skipping = false;    // ... and that item is one we skip
  };
  std::map<std::uint32_t, Open> open_;
  std::vector<CommittedTransaction> committed_;
  std::uint64_t orphan_ops_ = 0;
  std::uint64_t skipped_ops_ = 0;
  std::uint64_t unmount_ops_ = 0;
};

}  // namespace walfs::journal
