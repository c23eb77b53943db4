#include "journal/log_space.h"

#include <fmt/format.h>

#include "base/check.h"
#include "base/stat_counter.h"
#include "journal/journal_events.h"

namespace walfs::journal {

Result<std::unique_ptr<LogSpace>> LogSpace::Create(LogSpaceOptions options) {
  if (options.log_bytes <= 0)
    return Status::InvalidArgument(
        fmt::format("log size must be positive, not {} bytes", options.log_bytes));
  if (options.log_bytes < options.min_log_bytes)
    return Status::InvalidArgument(fmt::format(
        "log of {} bytes is too small: the minimum is {} bytes (3 x the largest "
        "reservation, {} bytes)",
        options.log_bytes, options.min_log_bytes, options.min_log_bytes / 3));
  return std::unique_ptr<LogSpace>(new LogSpace(options));
}

LogSpace::LogSpace(const LogSpaceOptions& options)
    : log_bytes_(options.log_bytes),
      head_lock_(options.head_lock),
      push_tail_(options.push_tail),
      wake_mode_(options.wake_mode),
      reserve_head_("reserve", this, options.head_lock),
      write_head_("write", this, options.head_lock) {}

LogSpace::~LogSpace() = default;

Result<TicketRef> LogSpace::Reserve(std::int32_t unit_bytes, std::int32_t cnt,
                                    bool permanent) {
  if (unit_bytes <= 0 || cnt < 1 || (!permanent && cnt != 1))
    return Status::InvalidArgument(fmt::format(
        "bad reservation: unit {} bytes, count {}, {}", unit_bytes, cnt,
        permanent ? "permanent" : "not permanent"));
  if (std::int64_t{unit_bytes} * cnt > log_bytes_)
    return Status::NoSpace(fmt::format("reservation of {} x {} bytes exceeds the {}-byte log",
                                       cnt, unit_bytes, log_bytes_));
  if (IsShutdown()) return Status::Shutdown("log is shut down");
  Inc(&counters_.reserves);

  TicketRef tic(new Ticket(next_tid_.fetch_add(1, std::memory_order_relaxed), unit_bytes,
                           cnt, permanent),
                /*add_ref=*/false);
  WALFS_TRACE(kTraceReserve, tic->tid(), unit_bytes, cnt, permanent);
  const std::int64_t need = tic->ReserveHeadNeed();
  WALFS_RETURN_IF_ERROR(reserve_head_.Grant(tic.get(), need));
  // The write head is charged the same without a check: it never holds more
  // than the reserve head, which has just been checked.
  write_head_.Add(need);
  counters_.live_tickets.fetch_add(1, std::memory_order_relaxed);
  return tic;
}

Status LogSpace::Regrant(Ticket* tic) {
  if (IsShutdown()) return Status::Shutdown("log is shut down");
  Inc(&counters_.regrants);
  // A new transaction on the same ticket gets a tid of its own: recovery
  // groups records by tid, so two live transactions must never share one
  // (XFS's "+1 per roll" could collide with our sequential tids).
  tic->tid_ = next_tid_.fetch_add(1, std::memory_order_relaxed);
  tic->curr_res_ = tic->unit_res_;
  WALFS_TRACE(kTraceRegrant, tic->tid(), tic->cnt_, tic->cnt_ == 0);
  if (tic->cnt_ > 0) return Status::Ok();

  // Every pre-reserved step is used: wait for one unit on the write head.
  // (TicketRegrant already re-charged that unit to the reserve head.)
  Inc(&counters_.regrant_waits);
  WALFS_CHECK(tic->flags_ & kTicketWriteUnitOwed);
  WALFS_RETURN_IF_ERROR(write_head_.Grant(tic, tic->WriteHeadNeed()));
  tic->flags_ &= ~kTicketWriteUnitOwed;
  return Status::Ok();
}

void LogSpace::TicketRegrant(Ticket* tic) {
  Inc(&counters_.ticket_regrants);
  if (tic->cnt_ > 0) --tic->cnt_;
  WALFS_TRACE(kTraceTicketRegrant, tic->tid(), tic->cnt_, tic->curr_res_);
  reserve_head_.Sub(tic->curr_res_);
  write_head_.Sub(tic->curr_res_);
  tic->curr_res_ = tic->unit_res_;
  // Out of pre-reserved steps: the reserve head keeps a unit charged for the
  // next step, taken without waiting (XFS overcommits the reserve head here
  // so that a rolling transaction cannot deadlock against new reservations).
  if (tic->cnt_ == 0) {
    reserve_head_.Add(tic->unit_res_);
    tic->flags_ |= kTicketWriteUnitOwed;
  }
  // XFS does not wake here; walfs does, since the unused part of the step may
  // be exactly what the first waiter needs (docs/reservation.md).
  SpaceWake();
}

void LogSpace::TicketUngrant(Ticket* tic) {
  Inc(&counters_.ticket_ungrants);
  if (tic->cnt_ > 0) --tic->cnt_;
  std::int64_t bytes = tic->curr_res_;
  if (tic->cnt_ > 0) {
    // Only a permanent ticket pre-reserves further steps.
    WALFS_CHECK(tic->permanent());
    bytes += std::int64_t{tic->unit_res_} * tic->cnt_;
  }
  WALFS_TRACE(kTraceTicketUngrant, tic->tid(), bytes);
  reserve_head_.Sub(bytes);
  // After a roll at cnt 0 whose Regrant failed or never ran, the current
  // step's unit was charged to the reserve head only.
  if (tic->flags_ & kTicketWriteUnitOwed) {
    WALFS_CHECK(tic->cnt_ == 0);
    write_head_.Sub(bytes - tic->curr_res_);
    tic->flags_ &= ~kTicketWriteUnitOwed;
  } else {
    write_head_.Sub(bytes);
  }
  tic->curr_res_ = 0;
  tic->cnt_ = 0;
  counters_.live_tickets.fetch_sub(1, std::memory_order_relaxed);
  SpaceWake();
}

void LogSpace::SpaceWake() {
  if (IsShutdown()) return;
  // Write head first, as XFS does: a regranting transaction holds resources
  // that new reservations may be waiting for.
  write_head_.Wake();
  reserve_head_.Wake();
}

void LogSpace::ReturnSpace(std::int64_t bytes) {
  WALFS_CHECK(bytes >= 0);
  // Tail space first, then the grant heads: in between, free space is under-
  // rather than over-estimated (the XFS smp_wmb in xlog_cil_ail_insert).
  tail_space_.fetch_add(bytes, std::memory_order_seq_cst);
  reserve_head_.Sub(bytes);
  write_head_.Sub(bytes);
  WALFS_TRACE(kTraceReturnSpace, bytes, tail_space());
  WALFS_TRACE(kTraceGrantBytes, reserve_head_.grant(), write_head_.grant(), tail_space(), log_bytes_);
  // Free space is unchanged, but a waiter that checked inside the window
  // above saw it `bytes` too small and may have gone to sleep: wake it.
  SpaceWake();
}

void LogSpace::MoveTail(std::int64_t bytes) {
  WALFS_CHECK(bytes >= 0);
  const std::int64_t before = tail_space_.fetch_sub(bytes, std::memory_order_seq_cst);
  // The tail cannot pass the AIL head.
  WALFS_CHECK_MSG(before >= bytes, "tail moved past the head");
  WALFS_TRACE(kTraceMoveTail, bytes, before - bytes);
  WALFS_TRACE(kTraceGrantBytes, reserve_head_.grant(), write_head_.grant(), before - bytes, log_bytes_);
  SpaceWake();
}

void LogSpace::ChargeUnreserved(std::int64_t bytes) {
  WALFS_CHECK(bytes >= 0);
  reserve_head_.Add(bytes);
  write_head_.Add(bytes);
}

void LogSpace::ReturnUnused(std::int64_t bytes) {
  WALFS_CHECK(bytes >= 0);
  reserve_head_.Sub(bytes);
  write_head_.Sub(bytes);
  SpaceWake();
}

void LogSpace::Shutdown() {
  if (shutdown_.exchange(true, std::memory_order_seq_cst)) return;
  WALFS_TRACE(kTraceShutdown);
  reserve_head_.WakeAllForShutdown();
  write_head_.WakeAllForShutdown();
}

void LogSpace::PushTail() {
  Inc(&counters_.tail_pushes);
  if (push_tail_) push_tail_();
}

LogSpaceStats LogSpace::Stats() const {
  LogSpaceStats s;
  auto ld = [](const auto& a) { return a.load(std::memory_order_relaxed); };
  s.log_bytes = log_bytes_;
  s.tail_space = tail_space();
  s.shutdown = IsShutdown();
  s.wake_mode = wake_mode();
  s.head_lock = head_lock_;
  s.reserves = ld(counters_.reserves);
  s.regrants = ld(counters_.regrants);
  s.regrant_waits = ld(counters_.regrant_waits);
  s.ticket_regrants = ld(counters_.ticket_regrants);
  s.ticket_ungrants = ld(counters_.ticket_ungrants);
  s.tail_pushes = ld(counters_.tail_pushes);
  s.live_tickets = ld(counters_.live_tickets);
  s.reserve_head = reserve_head_.Stats();
  s.write_head = write_head_.Stats();
  return s;
}

void LogSpace::ResetStats() {
  for (auto* c : {&counters_.reserves, &counters_.regrants, &counters_.regrant_waits,
                  &counters_.ticket_regrants, &counters_.ticket_ungrants,
                  &counters_.tail_pushes})
    c->store(0, std::memory_order_relaxed);
  reserve_head_.ResetStats();
  write_head_.ResetStats();
}

}  // namespace walfs::journal
