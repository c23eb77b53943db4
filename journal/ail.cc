#include "journal/ail.h"

#include <pthread.h>

#include "base/check.h"
#include "journal/log_events.h"
#include "journal/log_reader.h"

namespace walfs::journal {

namespace {
constexpr std::size_t kMaxPushesPerPass = 1000;
constexpr std::int64_t kIdleWaitNs = 50'000'000;      // xfsaild's idle timeout
constexpr std::int64_t kProgressWaitNs = 10'000'000;  // let started writeback finish
}  // namespace

std::string_view PushResultName(PushResult r) {
  switch (r) {
    case PushResult::kSuccess: return "success";
    case PushResult::kPinned: return "pinned";
    case PushResult::kLocked: return "locked";
    case PushResult::kFlushing: return "flushing";
  }
  return "?";
}

Ail::Ail(const AilOptions& options)
    : options_(options), head_(options.initial_head), last_tail_(options.initial_head) {
  WALFS_CHECK(options.space != nullptr && options.log_sectors > 0);
}

Ail::~Ail() {
  Stop();
  MutexLock l(&mu_);
  items_.clear();
}

void Ail::Start() {
  MutexLock l(&mu_);
  if (pusher_.joinable()) return;
  stop_ = false;
  pusher_ = std::thread([this] { PusherMain(); });
}

void Ail::Stop() {
  {
    MutexLock l(&mu_);
    stop_ = true;
    pusher_cv_.SignalAll();
  }
  if (pusher_.joinable()) pusher_.join();
}

std::uint64_t Ail::Bytes(Lsn from, Lsn to) const {
  return SectorsBetween(from, to, options_.log_sectors) * kLogSectorSize;
}

Lsn Ail::TailLocked() const { return items_.empty() ? head_ : items_.front().ail_lsn(); }

// Applies a tail move to LogSpace.  Called with mu_ held so that moves are
// applied in order; LogSpace::MoveTail takes only grant-head locks.
void Ail::MoveTailLocked(Lsn old_tail) {
  const Lsn tail = TailLocked();
  WALFS_CHECK(old_tail == last_tail_);
  if (tail <= old_tail) return;
  options_.space->MoveTail(static_cast<std::int64_t>(Bytes(old_tail, tail)));
  last_tail_ = tail;
  ++stats_.tail_moves;
}

void Ail::Insert(std::span<LogItem* const> items, Lsn lsn) {
  MutexLock l(&mu_);
  InsertLocked(items, lsn);
  MoveTailLocked(last_tail_);
}

void Ail::InsertLocked(std::span<LogItem* const> items, Lsn lsn) {
  WALFS_CHECK_MSG(lsn <= head_ || items_.empty() || lsn >= items_.back().ail_lsn_,
                  "AIL insert behind its head");
  for (LogItem* item : items) {
    if (item->in_ail()) items_.erase(items_.iterator_to(*item));  // relogged: moves forward
    item->ail_lsn_ = lsn;
    // Checkpoints complete in LSN order, so the right place is nearly always
    // the end: search from the back.
    auto pos = items_.end();
    while (pos != items_.begin() && std::prev(pos)->ail_lsn_ > lsn) --pos;
    items_.insert(pos, *item);
  }
}

void Ail::AdvanceHeadLocked(Lsn head) {
  if (head <= head_) return;
  options_.space->ReturnSpace(static_cast<std::int64_t>(Bytes(head_, head)));
  head_ = head;
}

void Ail::InsertCheckpoint(std::span<LogItem* const> items, Lsn start, Lsn head) {
  MutexLock l(&mu_);
  WALFS_CHECK_MSG(start <= head, "checkpoint starts after its commit record");
  AdvanceHeadLocked(head);
  InsertLocked(items, start);
  MoveTailLocked(last_tail_);
}

void Ail::AdvanceHead(Lsn head) {
  MutexLock l(&mu_);
  AdvanceHeadLocked(head);
  MoveTailLocked(last_tail_);  // an empty AIL's tail is its head
}

void Ail::Delete(LogItem* item) {
  MutexLock l(&mu_);
  WALFS_CHECK_MSG(item->in_ail(), "deleting an item that is not in the AIL");
  items_.erase(items_.iterator_to(*item));
  item->ail_lsn_ = kNullLsn;
  MoveTailLocked(last_tail_);
  if (items_.empty()) empty_cv_.SignalAll();
}

bool Ail::DeleteIfLsn(LogItem* item, Lsn flushed_lsn) {
  MutexLock l(&mu_);
  if (!item->in_ail() || item->ail_lsn_ != flushed_lsn) return false;
  items_.erase(items_.iterator_to(*item));
  item->ail_lsn_ = kNullLsn;
  MoveTailLocked(last_tail_);
  if (items_.empty()) empty_cv_.SignalAll();
  return true;
}

void Ail::RemoveAll() {
  MutexLock l(&mu_);
  while (!items_.empty()) {
    LogItem& item = items_.front();
    items_.pop_front();
    item.ail_lsn_ = kNullLsn;
  }
  empty_cv_.SignalAll();
}

void Ail::PushAll() {
  MutexLock l(&mu_);
  ++stats_.push_all_requests;
  if (push_all_ && kicked_) return;
  push_all_ = true;
  kicked_ = true;
  pusher_cv_.Signal();
}

bool Ail::WaitEmpty() {
  MutexLock l(&mu_);
  while (!items_.empty() && !shutdown_) {
    push_all_ = true;
    kicked_ = true;
    pusher_cv_.Signal();
    empty_cv_.WaitFor(&mu_, kIdleWaitNs);
  }
  return items_.empty();
}

void Ail::Shutdown() {
  MutexLock l(&mu_);
  shutdown_ = true;
  empty_cv_.SignalAll();
  pusher_cv_.SignalAll();
}

// Everything when asked to push all; otherwise enough of the oldest items
// to bring free space back to a quarter of the log (xlog_grant_push_ail).
Lsn Ail::ComputeTargetLocked() const {
  if (push_all_) return head_;
  const std::int64_t quarter = options_.space->log_bytes() / 4;
  const std::int64_t free = options_.space->reserve_head().FreeBytes();
  if (free >= quarter) return kNullLsn;
  const std::uint64_t sectors =
      static_cast<std::uint64_t>(quarter - free + kLogSectorSize - 1) / kLogSectorSize;
  const Lsn target = AdvanceLsn(TailLocked(), sectors, options_.log_sectors);
  return target < head_ ? target : head_;
}

void Ail::PusherMain() {
  pthread_setname_np(pthread_self(), "walfs-ail");  // its role in traces, top and ps
  MutexLock l(&mu_);
  bool forced = false;  // the last pass forced the log
  while (!stop_) {
    // A kick from now on (even during a log force below) starts another pass.
    kicked_ = false;
    if (shutdown_) {
      // The log is down: nothing may be written in place any more (an item
      // may hold changes that never reached the log).
      pusher_cv_.WaitFor(&mu_, kIdleWaitNs);
      continue;
    }
    const Lsn target = ComputeTargetLocked();
    stats_.target = target;
    std::size_t count = 0, pushed = 0, pinned = 0;
    // Push() runs with the lock held (as iop_push does under ail_lock): it
    // must not block, and writeback completion calls Delete() later, from
    // another thread.
    for (LogItem& item : items_) {
      if (target == kNullLsn || item.ail_lsn_ > target || count >= kMaxPushesPerPass) break;
      ++count;
      ++stats_.pushes;
      switch (item.Push()) {
        case PushResult::kSuccess: ++pushed; ++stats_.pushed; break;
        case PushResult::kPinned: ++pinned; ++stats_.pinned; break;
        case PushResult::kLocked: ++stats_.locked; break;
        case PushResult::kFlushing: ++stats_.flushing; break;
      }
    }
    if (count > 0) WALFS_TRACE(kTraceAilPush, target, pushed, pinned, count - pushed - pinned);
    if (pinned > 0 && options_.force_log && !forced) {
      // Pinned items wait for their checkpoint to reach the disk: force the
      // log and push again.  If they are pinned again at once (relogged into
      // the next checkpoint), back off before forcing again, so that a hot
      // item does not turn every pass into a checkpoint (xfsaild's stuck
      // back-off).
      ++stats_.log_forces;
      forced = true;
      mu_.Unlock();
      options_.force_log();
      mu_.Lock();
      continue;
    }
    forced = false;
    const bool done = items_.empty() || target == kNullLsn || items_.front().ail_lsn_ > target;
    if (done) push_all_ = false;
    ++stats_.sleeps;
    // Back off like xfsaild: idle when the target is reached, briefly when
    // writeback is under way, longer when every item was busy.
    const std::int64_t wait = done ? kIdleWaitNs
                              : pushed > 0 ? kProgressWaitNs
                                           : options_.stuck_backoff_ms * 1'000'000;
    if (!kicked_) pusher_cv_.WaitFor(&mu_, wait);
  }
}

Lsn Ail::tail_lsn() const {
  MutexLock l(&mu_);
  return TailLocked();
}

Lsn Ail::head_lsn() const {
  MutexLock l(&mu_);
  return head_;
}

AilStats Ail::Stats() const {
  MutexLock l(&mu_);
  AilStats s = stats_;
  s.items = items_.size();
  s.tail = TailLocked();
  s.head = head_;
  return s;
}

}  // namespace walfs::journal
