// LogSpace: log-space reservation for the journal, XFS's byte-count grant
// heads (Linux 6.11+) with tickets for rolling transactions.
//
// Usage, for a permanent (rolling) transaction of two steps:
//
//   auto space = LogSpace::Create({.log_bytes = ..., .min_log_bytes = ...});
//   Result<TicketRef> tic = space->Reserve(unit, /*cnt=*/2, /*permanent=*/true);
//   tic->Consume(bytes_written);          // as the transaction logs
//   space->TicketRegrant(tic->get());     // commit of step 1: roll
//   space->Regrant(tic->get());           // step 2 begins (may wait at cnt 0)
//   ...
//   space->TicketUngrant(tic->get());     // commit of the last step
//
// Space accounting (docs/reservation.md):
//   free(head) = log_bytes - tail_space - head.grant, clamped at 0.
// A grant head counts space held by live tickets plus space written to the
// log but not yet handed to the AIL.  ReturnSpace() is called when a
// checkpoint's items enter the AIL: the written bytes move from the grant
// heads into tail_space (the span between the log tail and the AIL head).
// MoveTail() is called when writeback moves the tail: tail_space shrinks and
// waiters are woken.
//
// Thread safety: every method may be called from any thread; a Ticket is
// used by one transaction thread at a time.  Every call must have returned
// before the LogSpace is destroyed: Shutdown() wakes waiters but does not
// wait for them to leave.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "base/cpu.h"
#include "base/status.h"
#include "journal/grant_head.h"
#include "journal/ticket.h"
#include "journal/wake_mode.h"

namespace walfs::journal {

struct LogSpaceOptions {
  std::int64_t log_bytes = 0;
  // The smallest log the reservation table allows (3 × the largest
  // reservation, ReservationTable::MinLogBytes()).  Create() refuses less.
  std::int64_t min_log_bytes = 0;
  WakeMode wake_mode = WakeMode::kWakeQueue;
  HeadLockKind head_lock = HeadLockKind::kMutex;
  // Called with no lock held before every grant-head sleep, to push the AIL
  // so that the tail moves (xfs_ail_push_all).  May be empty.  It must only
  // kick the pusher: it must not block, and must never wait on the calling
  // thread's WaitToken (that would consume the grant wake meant for it).
  // The `{}` keeps GCC quiet when a designated initializer leaves this out
  // (-Wmissing-field-initializers, GCC PR 96868); it is empty either way.
  std::function<void()> push_tail{};
};

struct LogSpaceStats {
  std::int64_t log_bytes = 0;
  std::int64_t tail_space = 0;
  bool shutdown = false;
  WakeMode wake_mode = WakeMode::kWakeQueue;
  HeadLockKind head_lock = HeadLockKind::kMutex;
  std::uint64_t reserves = 0;
  std::uint64_t regrants = 0;           // Regrant calls
  std::uint64_t regrant_waits = 0;      // Regrant calls at cnt 0 (write head)
  std::uint64_t ticket_regrants = 0;
  std::uint64_t ticket_ungrants = 0;
  std::uint64_t tail_pushes = 0;
  std::int64_t live_tickets = 0;
  GrantHeadStats reserve_head;
  GrantHeadStats write_head;
};

class LogSpace {
 public:
  // Refuses (InvalidArgument) a log smaller than options.min_log_bytes.
  static Result<std::unique_ptr<LogSpace>> Create(LogSpaceOptions options);
  ~LogSpace();
  LogSpace(const LogSpace&) = delete;
  LogSpace& operator=(const LogSpace&) = delete;

  // xfs_log_reserve: a new ticket with `unit_bytes` per step and `cnt`
  // pre-reserved steps if permanent.  Charges unit×cnt to both heads,
  // waiting on the reserve head.
  Result<TicketRef> Reserve(std::int32_t unit_bytes, std::int32_t cnt, bool permanent);

  // xfs_log_regrant: starts the next step of a rolling transaction.  Returns
  // at once while pre-reserved steps remain (cnt > 0); otherwise waits on the
  // write head for one unit.
  Status Regrant(Ticket* tic);

  // xfs_log_ticket_regrant, at the commit of a rolling step: returns the
  // unused part of the step, uses up one pre-reserved step and, at cnt 0,
  // re-charges one unit to the reserve head.  Wakes waiters.
  void TicketRegrant(Ticket* tic);

  // xfs_log_ticket_ungrant, at the final commit or cancel: returns all the
  // space the ticket still holds.  Wakes waiters.
  void TicketUngrant(Ticket* tic);

  // xfs_log_space_wake: wakes waiters on both heads that fit now.
  void SpaceWake();

  // A checkpoint of `bytes` written bytes entered the AIL: they move from the
  // grant heads into tail_space (xlog_grant_return_space).  Frees nothing,
  // but wakes waiters that checked while the move was half done.
  void ReturnSpace(std::int64_t bytes);

  // Writeback moved the tail by `bytes`: tail_space shrinks and waiters wake.
  void MoveTail(std::int64_t bytes);

  // Grant space taken or given back without a ticket: the log writer's
  // record overhead beyond what its fund covered (xlog_sync's round-off
  // without a ticket), and the unused part of that fund.  Charging never
  // waits; returning wakes waiters.
  void ChargeUnreserved(std::int64_t bytes);
  void ReturnUnused(std::int64_t bytes);
  // Refuses all further reservations and wakes every waiter with Shutdown.
  void Shutdown();
  bool IsShutdown() const { return shutdown_.load(std::memory_order_seq_cst); }

  WakeMode wake_mode() const { return wake_mode_.load(std::memory_order_relaxed); }
  void set_wake_mode(WakeMode mode) { wake_mode_.store(mode, std::memory_order_relaxed); }
  HeadLockKind head_lock() const { return head_lock_; }
  std::int64_t log_bytes() const { return log_bytes_; }
  std::int64_t tail_space() const { return tail_space_.load(std::memory_order_seq_cst); }

  GrantHead& reserve_head() { return reserve_head_; }
  GrantHead& write_head() { return write_head_; }

  // free = log_bytes - tail_space - grant, clamped at 0.
  std::int64_t FreeBytesGiven(std::int64_t grant) const {
    const std::int64_t free = log_bytes_ - tail_space_.load(std::memory_order_seq_cst) - grant;
    return free > 0 ? free : 0;
  }
  void PushTail();

  LogSpaceStats Stats() const;
  void ResetStats();

 private:
  explicit LogSpace(const LogSpaceOptions& options);

  const std::int64_t log_bytes_;
  const HeadLockKind head_lock_;
  const std::function<void()> push_tail_;
  std::atomic<WakeMode> wake_mode_;
  std::atomic<bool> shutdown_{false};
  std::atomic<std::uint32_t> next_tid_{1};

  // Owned by the AIL side; written before grant space is returned so that a
  // reader never over-estimates free space (ReturnSpace()).
  alignas(kCacheLineSize) std::atomic<std::int64_t> tail_space_{0};

  GrantHead reserve_head_;
  GrantHead write_head_;

  struct alignas(kCacheLineSize) Counters {
    std::atomic<std::uint64_t> reserves{0};
    std::atomic<std::uint64_t> regrants{0};
    std::atomic<std::uint64_t> regrant_waits{0};
    std::atomic<std::uint64_t> ticket_regrants{0};
    std::atomic<std::uint64_t> ticket_ungrants{0};
    std::atomic<std::uint64_t> tail_pushes{0};
    std::atomic<std::int64_t> live_tickets{0};
  };
  Counters counters_;
};

}  // namespace walfs::journal
