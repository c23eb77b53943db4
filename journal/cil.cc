#include "journal/cil.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "base/check.h"
#include "base/clock.h"
#include "base/coding.h"
#include "journal/log_events.h"

namespace walfs::journal {

namespace {
constexpr std::int64_t kMaxPushBytes = std::int64_t{32} << 20;
}  // namespace

std::int64_t Cil::CheckpointOverhead(std::int64_t item_bytes, std::uint32_t payload) {
  // START, TRANS_HEADER and COMMIT ops, and per record: the header sector,
  // up to a sector of padding and a split op header.  The records a
  // checkpoint spans: one per `payload` bytes, plus the one it starts in
  // partway and the one its commit record may spill into.
  const std::int64_t fixed = 3 * std::int64_t{kOpHeaderSize} + kTransHeaderBytes;
  const std::int64_t records = (item_bytes + fixed + payload - 1) / payload + 1;
  return fixed + records * LogWriter::kRecordOverhead;
}

Cil::Cil(const CilOptions& options)
    : options_(options),
      push_bytes_(options.push_bytes > 0
                      ? options.push_bytes
                      : std::min(options.space->log_bytes() / 8, kMaxPushBytes)),
      next_tid_(options.first_tid) {
  WALFS_CHECK(options.writer && options.ail && options.space);
  MutexLock l(&mu_);
  ctx_ = std::make_unique<Ctx>();
  ctx_->seq = 1;
  ctx_->tid = next_tid_++;
  stats_.push_bytes = push_bytes_;
}

Cil::~Cil() { Stop(); }

void Cil::Start() {
  MutexLock l(&mu_);
  if (started_) return;
  started_ = true;
  pusher_ = std::thread([this] { PushMain(); });
}

void Cil::Stop() {
  {
    MutexLock l(&mu_);
    stop_ = true;
    // Nobody will push any more: forcers and throttled committers must not
    // wait for it.
    if (status_.ok()) status_ = Status::Shutdown("the log's checkpoint thread has stopped");
    push_cv_.SignalAll();
    state_cv_.SignalAll();
  }
  if (pusher_.joinable()) pusher_.join();
}

Result<std::uint64_t> Cil::Commit(Ticket* tic, std::span<LogItem* const> items) {
  // Format outside the lock: the committing thread holds the items' locks.
  std::vector<std::pair<LogItem*, std::string>> formatted;
  formatted.reserve(items.size());
  for (LogItem* item : items) {
    std::string body;
    if (item->Format(&body)) formatted.emplace_back(item, std::move(body));
  }
  const std::uint32_t payload = options_.writer->payload_capacity();
  MutexLock l(&mu_);
  if (!status_.ok()) return status_;
  Ctx& c = *ctx_;
  // Nothing to log: no charge (an empty context is never pushed, so any
  // overhead charged for it would never be written or returned).
  if (formatted.empty()) return c.seq;
  // Price the change before touching the context.
  std::int64_t delta = 0;
  for (const auto& [item, body] : formatted) {
    const std::int64_t bytes = kOpHeaderSize + static_cast<std::int64_t>(body.size());
    if (item->cil_seq_ == c.seq)
      delta -= kOpHeaderSize + static_cast<std::int64_t>(c.entries[item->cil_index_].body.size());
    delta += bytes;
  }
  const std::int64_t item_bytes = c.item_bytes + delta;
  const std::int64_t fund = std::max(c.fund, CheckpointOverhead(item_bytes, payload));
  const std::int64_t charge = delta + (fund - c.fund);
  if (charge > 0) {
    if (charge > INT32_MAX || !tic->Consume(static_cast<std::int32_t>(charge))) {
      Status s = Status::Internal(fmt::format(
          "transaction tid {} overran its log reservation: it logged {} bytes with {} of its "
          "{}-byte unit left",
          tic->tid(), charge, tic->curr_res(), tic->unit_res()));
      mu_.Unlock();
      Fail(s);
      mu_.Lock();
      return s;
    }
  } else if (charge < 0) {
    tic->Refund(static_cast<std::int32_t>(-charge));
  }
  if (c.entries.empty() && (options_.push_interval_ns > 0 || options_.lazy_push_ns > 0)) {
    c.first_commit_ns = MonotonicNanos();
    // One wake-up per context: the push thread sleeps out the delay, and
    // every commit meanwhile joins this context.
    if (options_.lazy_push_ns > 0) push_cv_.Signal();
  }
  for (auto& [item, body] : formatted) {
    if (item->cil_seq_ == c.seq) {
      c.entries[item->cil_index_].body = std::move(body);
      ++stats_.relogs;
    } else {
      item->cil_seq_ = c.seq;
      item->cil_index_ = c.entries.size();
      item->pins_.fetch_add(1, std::memory_order_acq_rel);
      c.entries.push_back(Entry{item, std::move(body)});
    }
  }
  c.item_bytes = item_bytes;
  c.fund = fund;
  ++stats_.commits;
  const std::uint64_t seq = c.seq;
  const std::int64_t used = c.item_bytes + c.fund;
  WALFS_TRACE(kTraceCilCommit, seq, formatted.size(), charge, used);
  if (used >= push_bytes_ && push_target_ < seq) {
    // xlog_cil_push_background
    push_target_ = seq;
    ++stats_.background_pushes;
    push_cv_.Signal();
  }
  if (used >= 2 * push_bytes_ && started_) {
    // Throttle: wait until the push has swapped this context out, so the
    // CIL cannot outgrow the log (xc_push_wait).
    ++stats_.throttles;
    const std::int64_t t0 = MonotonicNanos();
    while (status_.ok() && ctx_->seq == seq) state_cv_.Wait(&mu_);
    WALFS_TRACE(kTraceCilThrottle, seq, used, MonotonicNanos() - t0);
  }
  return seq;
}

void Cil::PushAsync() {
  MutexLock l(&mu_);
  if (!status_.ok()) return;
  if (ctx_->entries.empty()) {
    if (committed_seq_ < pushed_seq_ && !flush_wanted_) {
      flush_wanted_ = true;
      push_cv_.Signal();
    }
    return;
  }
  if (push_target_ < ctx_->seq) push_target_ = ctx_->seq;
  push_urgent_ = true;
  push_cv_.Signal();
}

Status Cil::Force(std::uint64_t seq) {
  Lsn lsn;
  {
    MutexLock l(&mu_);
    ++stats_.forces;
    if (seq == 0 || seq > ctx_->seq) seq = ctx_->seq;
    if (seq == ctx_->seq && ctx_->entries.empty()) {
      // Nothing new: what was committed before is in earlier sequences.
      ++stats_.empty_forces;
      seq = ctx_->seq - 1;
    }
    if (committed_seq_ >= seq) return Status::Ok();
    if (!status_.ok()) return status_;
    if (push_target_ < seq) {
      push_target_ = seq;
      ++stats_.forced_pushes;
    }
    // Push it here unless a push is under way (every context swapped out
    // before is then pushed: `seq` is still the current one), else wait for
    // that push, which may be ours (everyone forcing a sequence shares one
    // push and one log write).  Pushing on the forcer's thread saves the
    // two thread hand-offs of asking the push thread and being told.
    while (status_.ok() && pushed_seq_ < seq) {
      if (!pushing_) {
        ++stats_.inline_pushes;
        PushLocked();
        continue;
      }
      state_cv_.Wait(&mu_);
    }
    if (pushed_seq_ < seq) return status_;
    if (committed_seq_ >= seq) return Status::Ok();
    lsn = pushed_lsn_;  // the commit record of `seq` or a later checkpoint
  }
  WALFS_RETURN_IF_ERROR(options_.writer->Force(lsn));
  MutexLock l(&mu_);
  // The writer ran the commit callbacks before reporting the record durable.
  while (status_.ok() && committed_seq_ < seq) state_cv_.Wait(&mu_);
  return committed_seq_ >= seq ? Status::Ok() : status_;
}

void Cil::PushMain() {
  pthread_setname_np(pthread_self(), "walfs-cil");  // its role in traces, top and ps
  MutexLock l(&mu_);
  const std::int64_t interval = options_.push_interval_ns;
  const std::int64_t lazy_delay = options_.lazy_push_ns;
  for (;;) {
    bool lazy = false;
    while (!stop_ && status_.ok() && (pushing_ || push_target_ < ctx_->seq)) {
      if (flush_wanted_ && !pushing_) {
        // A grant-head sleeper's kick, or the timed push, with nothing new
        // to push: make the lazily written checkpoints durable (pushing_
        // keeps pushes out).
        flush_wanted_ = false;
        ++stats_.kick_flushes;
        pushing_ = true;
        const Lsn lsn = pushed_lsn_;
        mu_.Unlock();
        (void)options_.writer->Force(lsn);  // a failure fails the log through the writer
        mu_.Lock();
        pushing_ = false;
        state_cv_.SignalAll();
        continue;
      }
      if (interval <= 0 && lazy_delay <= 0) {
        push_cv_.Wait(&mu_);
        continue;
      }
      // xfs_log_worker.  Without a lazy push, commits do not wake this
      // thread (that would be a wake-up per checkpoint, i.e. per fsync): it
      // looks every interval, and a context found non-empty is pushed
      // `interval` after its first commit -- later by up to one push when a
      // forcer was pushing (the thread then sleeps a whole interval, as it
      // is not told the push ended).  With one, the first commit into an
      // empty context wakes it, and so does the end of a push that leaves
      // a non-empty context behind.
      // The interval bounds what a power cut loses, so it runs from the
      // first commit of everything not yet durable: lazily written
      // checkpoints (lazy_first_ns_) as well as the current context.
      const std::int64_t now = MonotonicNanos();
      const std::int64_t flush_left =
          interval > 0 && lazy_first_ns_ > 0 ? lazy_first_ns_ + interval - now : INT64_MAX;
      if (!pushing_ && ctx_->entries.empty() && flush_left <= 0) {
        flush_wanted_ = true;
        ++stats_.timed_pushes;
        continue;
      }
      if (!pushing_ && !ctx_->entries.empty()) {
        const std::int64_t timed_left = std::min(
            flush_left, interval > 0 ? ctx_->first_commit_ns + interval - now : INT64_MAX);
        const std::int64_t lazy_left =
            lazy_delay > 0 ? ctx_->first_commit_ns + lazy_delay - now : INT64_MAX;
        if (timed_left <= 0) {
          push_target_ = ctx_->seq;
          ++stats_.timed_pushes;
          break;
        }
        if (lazy_left <= 0) {
          push_target_ = ctx_->seq;
          ++stats_.lazy_pushes;
          lazy = true;
          break;
        }
        push_cv_.WaitFor(&mu_, std::min(timed_left, lazy_left));
      } else if (interval > 0) {
        push_cv_.WaitFor(&mu_, std::min(interval, std::max<std::int64_t>(flush_left, 1)));
      } else {
        push_cv_.Wait(&mu_);
      }
    }
    if (stop_ || !status_.ok()) return;
    if (ctx_->entries.empty()) {
      // Forced with nothing to write (the forcer accounted for that).
      push_target_ = ctx_->seq - 1;
      continue;
    }
    // A lazy push only when nothing else asked for this one.
    PushLocked(lazy && !push_urgent_);
  }
}

void Cil::PushLocked(bool lazy) {
  WALFS_CHECK(!pushing_ && !ctx_->entries.empty());
  const bool urgent = push_urgent_;
  push_urgent_ = false;
  pushing_ = true;
  // Swap in a fresh context (xlog_cil_push_work); committers may go on.
  std::shared_ptr<Ctx> old(ctx_.release());
  ctx_ = std::make_unique<Ctx>();
  ctx_->seq = old->seq + 1;
  ctx_->tid = next_tid_++;
  if (next_tid_ == 0) next_tid_ = 1;
  state_cv_.SignalAll();  // throttled committers
  ++stats_.pushes;
  stats_.checkpoint_items += old->entries.size();
  const auto bytes = static_cast<std::uint64_t>(old->item_bytes);
  stats_.checkpoint_bytes += bytes;
  stats_.max_checkpoint_bytes = std::max(stats_.max_checkpoint_bytes, bytes);
  WALFS_TRACE(kTraceCilPush, old->seq, old->entries.size(), bytes, urgent ? 0 : 1);
  const std::uint64_t seq = old->seq;
  const std::int64_t first_commit_ns = old->first_commit_ns;
  if (lazy) {
    if (lazy_first_ns_ == 0) lazy_first_ns_ = first_commit_ns;
    lazy_seq_ = seq;
  } else {
    // A durable push makes every checkpoint before it durable too.
    lazy_first_ns_ = 0;
  }
  mu_.Unlock();
  Result<Lsn> commit_lsn = WriteCheckpoint(std::move(old), lazy);
  if (commit_lsn.ok()) {
    // Get the commit record out rather than leave it in a half-filled
    // iclog: the AIL can only push (and the tail move) once it is on disk.
    // A lazy push only writes it; a force of it later flushes.
    Status s = lazy ? options_.writer->WriteOut(*commit_lsn) : options_.writer->Force(*commit_lsn);
    if (lazy && s.ok()) lazy_ns_.Record(MonotonicNanos() - first_commit_ns);
    // A failure has already failed the writer and, through it, the log.
  }
  mu_.Lock();
  pushing_ = false;
  // The push thread sleeps while a push is under way: wake it only when
  // there is more to push (a wake-up per fsync otherwise), or a lazy push
  // to time (the context's first commit found the push under way).
  if (push_target_ >= ctx_->seq || flush_wanted_ ||
      (options_.lazy_push_ns > 0 && !ctx_->entries.empty()))
    push_cv_.Signal();
  state_cv_.SignalAll();  // forcers waiting for it, pushed or failed
  if (!commit_lsn.ok()) {
    if (status_.ok()) {
      mu_.Unlock();
      Fail(commit_lsn.status());
      mu_.Lock();
    }
    return;
  }
  pushed_seq_ = seq;
  pushed_lsn_ = *commit_lsn;
}

Result<Lsn> Cil::WriteCheckpoint(std::shared_ptr<Ctx> ctx, bool lazy) {
  std::string header;
  PutFixed64(&header, ctx->seq);
  PutFixed32(&header, static_cast<std::uint32_t>(ctx->entries.size()));
  PutFixed32(&header, static_cast<std::uint32_t>(ctx->item_bytes));
  std::vector<LogOp> ops;
  ops.reserve(ctx->entries.size() + 3);
  ops.push_back(LogOp{ctx->tid, kOpStart, ItemType::kNone, {}});
  ops.push_back(LogOp{ctx->tid, 0, ItemType::kTransHeader, header});
  for (const Entry& e : ctx->entries) ops.push_back(LogOp{ctx->tid, 0, e.item->type(), e.body});
  ops.push_back(LogOp{ctx->tid, kOpCommit, ItemType::kNone, {}});
  Ctx* raw = ctx.get();
  Result<WriteResult> res = options_.writer->Write(
      ops, raw->item_bytes + raw->fund, /*commit=*/true,
      [this, ctx](const Status& s, const WriteResult& r) { Committed(ctx, s, r); }, lazy);
  if (!res.ok()) {
    // Nothing of it will be written: fail its items as the callback would.
    Committed(ctx, res.status(), WriteResult{});
    return res.status();
  }
  return res->end_lsn;
}

// xlog_cil_committed: the checkpoint's commit record is durable (or never
// will be): a lazily written one waits for the force or preflush that makes
// it stable, its items pinned meanwhile.  Runs on the log's completion thread, in sequence order.
void Cil::Committed(const std::shared_ptr<Ctx>& ctx, const Status& s, const WriteResult& res) {
  std::vector<LogItem*> items;
  items.reserve(ctx->entries.size());
  for (const Entry& e : ctx->entries) items.push_back(e.item);
  if (s.ok()) {
    options_.ail->InsertCheckpoint(items, res.start_lsn, res.end_lsn);
  }
  for (LogItem* item : items) {
    item->Unpinned(!s.ok());
    item->pins_.fetch_sub(1, std::memory_order_acq_rel);
  }
  WALFS_TRACE(kTraceCilCommitted, ctx->seq, res.start_lsn, res.end_lsn);
  {
    MutexLock l(&mu_);
    if (s.ok()) {
      committed_seq_ = std::max(committed_seq_, ctx->seq);
      if (committed_seq_ >= lazy_seq_) lazy_first_ns_ = 0;  // nothing lazily written is unstable
      ++stats_.committed;
    } else {
      ++stats_.aborted;
      if (status_.ok()) status_ = s;
    }
    state_cv_.SignalAll();
    if (!s.ok()) push_cv_.SignalAll();  // the push thread stops
  }
  if (s.ok()) {
    MutexLock l(&hook_mu_);
    if (committed_hook_) committed_hook_(ctx->seq);
  }
}

void Cil::SetCommittedHook(std::function<void(std::uint64_t seq)> hook) {
  MutexLock l(&hook_mu_);
  committed_hook_ = std::move(hook);
}

void Cil::Fail(const Status& why) {
  bool first;
  {
    MutexLock l(&mu_);
    first = status_.ok();
  }
  Shutdown(why);
  if (first && options_.on_error) options_.on_error(why);
}

// Refuses further commits and aborts the current context: its items will
// never reach the log, so they are unpinned as aborted.
void Cil::Shutdown(const Status& why) {
  std::vector<Entry> entries;
  {
    MutexLock l(&mu_);
    if (status_.ok()) status_ = why;
    entries = std::move(ctx_->entries);
    ctx_->entries.clear();
    ctx_->item_bytes = 0;
    ctx_->seq += 1;  // items still carrying the old seq are not in the new context
    state_cv_.SignalAll();
    push_cv_.SignalAll();
  }
  for (Entry& e : entries) {
    e.item->Unpinned(true);
    e.item->pins_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

std::uint64_t Cil::current_seq() const {
  MutexLock l(&mu_);
  return ctx_->seq;
}

std::uint64_t Cil::committed_seq() const {
  MutexLock l(&mu_);
  return committed_seq_;
}

CilStats Cil::Stats() const {
  MutexLock l(&mu_);
  CilStats s = stats_;
  s.seq = ctx_->seq;
  s.items = ctx_->entries.size();
  s.space_used = ctx_->item_bytes + ctx_->fund;
  s.committed_seq = committed_seq_;
  s.written_seq = pushed_seq_;
  s.lazy_p50_ns = lazy_ns_.Percentile(0.5);
  s.lazy_p99_ns = lazy_ns_.Percentile(0.99);
  s.lazy_max_ns = lazy_ns_.Max();
  s.lazy_written = lazy_ns_.Count();
  return s;
}

}  // namespace walfs::journal
