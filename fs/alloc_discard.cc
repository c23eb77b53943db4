// Allocator's online discard (-o discard; docs/fs.md, "Discard"): freed runs
// are discarded once the checkpoint that freed them is on disk, and stay
// busy until then and until their discard has returned.
#include <pthread.h>

#include <algorithm>
#include <utility>

#include "base/messages.h"
#include "fs/alloc.h"

namespace walfs::fs {

Allocator::~Allocator() { StopOnlineDiscard(); }

void Allocator::StartOnlineDiscard(DiscardFn discard) {
  const std::uint64_t committed = log_->cil().committed_seq();
  {
    MutexLock l(&mu_);
    if (online_discard_) return;
    online_discard_ = std::move(discard);
    durable_seq_ = committed;
    discard_stop_ = false;
  }
  discarder_ = std::thread([this] { DiscardMain(); });
  // Called on the log's completion thread once a commit record is durable:
  // only note it and wake the discarder.
  log_->cil().SetCommittedHook([this](std::uint64_t seq) {
    MutexLock l(&mu_);
    durable_seq_ = std::max(durable_seq_, seq);
    discard_cv_.SignalAll();
  });
}

void Allocator::StopOnlineDiscard() {
  if (!discarder_.joinable()) return;
  // After this returns the hook is never called again (Cil::SetCommittedHook).
  log_->cil().SetCommittedHook(nullptr);
  const std::uint64_t committed = log_->cil().committed_seq();
  {
    MutexLock l(&mu_);
    durable_seq_ = std::max(durable_seq_, committed);  // the last checkpoints' runs too
    discard_stop_ = true;
    discard_cv_.SignalAll();
  }
  discarder_.join();
  MutexLock l(&mu_);
  online_discard_ = nullptr;
  // What is left was freed by checkpoints not on disk: ordinary busy runs now.
  for (auto& [agno, runs] : busy_)
    for (auto& [agblock, busy] : runs) busy.discard = false;
  discard_queue_.clear();
}

bool Allocator::DurableQueuedLocked() const {
  return std::any_of(discard_queue_.begin(), discard_queue_.end(),
                     [this](const QueuedDiscard& q) NO_THREAD_SAFETY_ANALYSIS { return q.seq <= durable_seq_; });
}

void Allocator::DiscardMain() {
  pthread_setname_np(pthread_self(), "walfs-discard");
  mu_.Lock();
  for (;;) {
    // Every queued run whose freeing checkpoint is on disk.  Commits of one
    // sequence may queue out of order, so the whole queue is looked at.
    std::vector<QueuedDiscard> batch;
    auto durable = std::stable_partition(discard_queue_.begin(), discard_queue_.end(),
                                         [this](const QueuedDiscard& q) NO_THREAD_SAFETY_ANALYSIS {
                                           return q.seq > durable_seq_;
                                         });
    batch.assign(durable, discard_queue_.end());
    discard_queue_.erase(durable, discard_queue_.end());
    if (batch.empty()) {
      if (discard_stop_) break;
      discard_cv_.Wait(&mu_);
      continue;
    }
    discards_in_flight_ = batch.size();
    const DiscardFn discard = online_discard_;
    // The runs stay busy (kDiscarding) meanwhile: nobody allocates them,
    // and nothing but this thread removes their entries.
    mu_.Unlock();
    std::vector<Status> results;
    results.reserve(batch.size());
    for (const QueuedDiscard& q : batch) results.push_back(discard(sb_->AgStart(q.agno) + q.agblock, q.count));
    mu_.Lock();
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const QueuedDiscard& q = batch[i];
      busy_[q.agno].erase(q.agblock);
      if (results[i].ok()) {
        ++stats_.online_discards;
        stats_.online_discard_blocks += q.count;
      } else if (stats_.online_discard_errors++ == 0) {
        Message(Severity::kWarning, "discard of blocks {}+{} failed ({}); freed blocks are not given back to the device",
                sb_->AgStart(q.agno) + q.agblock, q.count, results[i].ToString());
      }
    }
    discards_in_flight_ = 0;
    discard_cv_.SignalAll();
  }
  mu_.Unlock();
}

void Allocator::WaitForDiscards() {
  const std::uint64_t committed = log_->cil().committed_seq();
  MutexLock l(&mu_);
  if (!online_discard_) return;
  // The force that preceded this may have returned before its committed
  // hook ran.
  if (committed > durable_seq_) {
    durable_seq_ = committed;
    discard_cv_.SignalAll();
  }
  while (!discard_stop_ && (DurableQueuedLocked() || discards_in_flight_ > 0)) discard_cv_.Wait(&mu_);
}

}  // namespace walfs::fs
