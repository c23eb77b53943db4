#include "fs/fs_trans.h"

#include <algorithm>

#include "base/check.h"

namespace walfs::fs {

Result<FsTransaction> FsTransaction::Begin(journal::Log* log, journal::TransType type) {
  WALFS_ASSIGN_OR_RETURN(journal::Transaction tx, journal::Transaction::Begin(log, type));
  return FsTransaction(log, std::move(tx));
}

FsTransaction::~FsTransaction() {
  if (!done_) Cancel();
}

bool FsTransaction::Holds(const BufRef& buf) const {
  return std::any_of(held_.begin(), held_.end(),
                     [&](const BufRef& b) { return b.get() == buf.get(); });
}

void FsTransaction::Hold(const BufRef& buf) NO_THREAD_SAFETY_ANALYSIS {
  WALFS_CHECK(!done_ && buf);
  if (Holds(buf)) return;
  buf->Lock();
  held_.push_back(buf);
}

bool FsTransaction::TryHold(const BufRef& buf) NO_THREAD_SAFETY_ANALYSIS {
  WALFS_CHECK(!done_ && buf);
  if (Holds(buf)) return true;
  if (!buf->TryLock()) return false;
  held_.push_back(buf);
  return true;
}

void FsTransaction::LogRange(const BufRef& buf, std::uint32_t first,
                             std::uint32_t last) NO_THREAD_SAFETY_ANALYSIS {
  WALFS_CHECK_MSG(Holds(buf), "logging a buffer the transaction does not hold");
  buf->LogRange(first, last);
  tx_.Join(buf.get());
}

void FsTransaction::UnlockAll() NO_THREAD_SAFETY_ANALYSIS {
  for (BufRef& b : held_) b->Unlock();
  held_.clear();
}

Result<std::uint64_t> FsTransaction::Commit() {
  WALFS_CHECK(!done_);
  done_ = true;
  Result<std::uint64_t> seq = tx_.Commit();
  UnlockAll();
  if (seq.ok())
    for (auto& hook : on_commit_) hook(*seq);
  return seq;
}

Status FsTransaction::Roll() {
  WALFS_CHECK(!done_);
  Status s = tx_.Roll();
  if (!s.ok()) {
    done_ = true;
    UnlockAll();
  }
  return s;
}

void FsTransaction::Cancel() {
  if (done_) return;
  done_ = true;
  tx_.Cancel();
  UnlockAll();
}

}  // namespace walfs::fs
