#include "fs/fs_trans.h"

#include <algorithm>

#include "base/check.h"
#include "base/clock.h"
#include "base/stat_counter.h"

namespace walfs::fs {

Result<FsTransaction> FsTransaction::Begin(journal::Log* log, journal::TransType type) {
  WALFS_ASSIGN_OR_RETURN(journal::Transaction tx, journal::Transaction::Begin(log, type));
  return FsTransaction(log, std::move(tx));
}

FsTransaction::FsTransaction(FsTransaction&& other) noexcept
    : log_(other.log_),
      tx_(std::move(other.tx_)),
      held_(std::move(other.held_)),
      logged_(std::move(other.logged_)),
      on_commit_(std::move(other.on_commit_)),
      on_commit_locked_(std::move(other.on_commit_locked_)),
      deferred_(std::move(other.deferred_)),
      precommit_(std::move(other.precommit_)),
      held_ags_(std::move(other.held_ags_)),
      highest_ag_(other.highest_ag_),
      ag_waits_(other.ag_waits_),
      done_(other.done_) {
  other.done_ = true;
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

bool FsTransaction::HoldAgHeader(const BufRef& agh, std::uint32_t agno) {
  if (Holds(agh)) return true;
  if (static_cast<std::int64_t>(agno) >= highest_ag_) {
    if (!TryHold(agh)) {  // another transaction has it: wait, counted
      const std::int64_t start = ag_waits_ != nullptr ? MonotonicNanos() : 0;
      Hold(agh);
      if (ag_waits_ != nullptr) {
        Inc(&ag_waits_->waits);
        Inc(&ag_waits_->wait_ns, static_cast<std::uint64_t>(MonotonicNanos() - start));
      }
    }
  } else if (!TryHold(agh)) {
    return false;
  }
  held_ags_.emplace_back(agh.get(), agno);
  highest_ag_ = std::max<std::int64_t>(highest_ag_, agno);
  return true;
}

void FsTransaction::Release(const BufRef& buf) NO_THREAD_SAFETY_ANALYSIS {
  if (std::find(logged_.begin(), logged_.end(), buf.get()) != logged_.end()) return;
  auto it = std::find_if(held_.begin(), held_.end(), [&](const BufRef& b) { return b.get() == buf.get(); });
  if (it == held_.end()) return;
  (*it)->Unlock();
  held_.erase(it);
  // An AG header let go no longer bounds the order of later waits.
  std::erase_if(held_ags_, [&](const auto& h) { return h.first == buf.get(); });
  highest_ag_ = -1;
  for (const auto& [item, agno] : held_ags_) highest_ag_ = std::max<std::int64_t>(highest_ag_, agno);
}

void FsTransaction::LogRange(const BufRef& buf, std::uint32_t first,
                             std::uint32_t last) NO_THREAD_SAFETY_ANALYSIS {
  WALFS_CHECK_MSG(Holds(buf), "logging a buffer the transaction does not hold");
  buf->LogRange(first, last);
  tx_.Join(buf.get());
  if (std::find(logged_.begin(), logged_.end(), buf.get()) == logged_.end())
    logged_.push_back(buf.get());
}

void FsTransaction::UnlockAll() NO_THREAD_SAFETY_ANALYSIS {
  for (BufRef& b : held_) b->Unlock();
  held_.clear();
}

Result<std::uint64_t> FsTransaction::Commit() {
  WALFS_CHECK(!done_);
  while (!deferred_.empty()) {
    WALFS_RETURN_IF_ERROR(RollReleasing());
    auto work = std::move(deferred_);
    deferred_.clear();
    for (auto& w : work) {
      Status s = w(this);
      if (!s.ok()) {
        Cancel();
        return s;
      }
    }
  }
  if (precommit_) {
    Status s = precommit_(this);
    if (!s.ok()) {
      Cancel();
      return s;
    }
  }
  done_ = true;
  Result<std::uint64_t> seq = tx_.Commit();
  if (seq.ok())
    for (auto& hook : on_commit_locked_) hook();
  UnlockAll();
  if (seq.ok())
    for (auto& hook : on_commit_) hook(*seq);
  return seq;
}

Status FsTransaction::Roll() {
  WALFS_CHECK(!done_);
  if (precommit_) {
    Status s = precommit_(this);
    if (!s.ok()) {
      Cancel();
      return s;
    }
  }
  // Relog what we keep locked: each held buffer with changes not yet on
  // disk goes into this step's commit (Format() carries every dirty chunk),
  // moving it forward in the log before the next step waits for space.
  for (const BufRef& b : held_) tx_.Join(b.get());
  Status s = tx_.Roll();
  if (!s.ok()) {
    done_ = true;
    UnlockAll();
  }
  return s;
}

Status FsTransaction::RollReleasing() {
  WALFS_CHECK(!done_);
  if (precommit_) {
    Status s = precommit_(this);
    if (!s.ok()) {
      Cancel();
      return s;
    }
  }
  Status s = tx_.Roll();
  // The step is committed (or failed): nothing needs the locks any more.
  UnlockAll();
  logged_.clear();
  held_ags_.clear();
  highest_ag_ = -1;
  if (!s.ok()) done_ = true;
  return s;
}

void FsTransaction::Cancel() {
  if (done_) return;
  done_ = true;
  tx_.Cancel();
  UnlockAll();
}

}  // namespace walfs::fs
