// Ticket: one transaction's claim on log space (XFS's xlog_ticket).
//
// A ticket carries a unit reservation (`unit_res` bytes, the most one
// transaction of its type can write to the log), what is left of it in the
// current transaction (`curr_res`), and for permanent (rolling) transactions
// a count of pre-reserved rolls (`cnt`, initially `ocnt`).  LogSpace charges
// and returns grant space on the ticket's behalf; see log_space.h.
//
// Locking: the fields of the first group belong to the thread running the
// transaction.  `flags_`, `signals_` and the queue hook are written only under
// the lock of the grant head whose queue the ticket is on (a ticket waits on
// at most one head at a time).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include <boost/intrusive/list_hook.hpp>
#include <boost/smart_ptr/intrusive_ptr.hpp>

#include "base/wait_token.h"

namespace walfs::journal {

enum TicketFlag : std::uint32_t {
  kTicketPermanent = 1u << 0,  // XLOG_TIC_PERM_RESERV: a rolling transaction
  kTicketWaking = 1u << 1,     // a waker has signalled it and it has not run yet
  // Rolled at cnt 0: the next step's unit is charged to the reserve head but
  // not yet granted on the write head (Regrant pending).
  kTicketWriteUnitOwed = 1u << 2,
};

// "PERM|WAKING" style rendering for traces and logprint.
std::string TicketFlagsString(std::uint32_t flags);

class Ticket : public boost::intrusive::list_base_hook<
                   boost::intrusive::link_mode<boost::intrusive::safe_link>> {
 public:
  Ticket(std::uint32_t tid, std::int32_t unit_res, std::int32_t cnt, bool permanent);
  Ticket(const Ticket&) = delete;
  Ticket& operator=(const Ticket&) = delete;

  std::uint32_t tid() const { return tid_; }
  std::int32_t unit_res() const { return unit_res_; }
  std::int32_t curr_res() const { return curr_res_; }
  std::int32_t cnt() const { return cnt_; }
  std::int32_t ocnt() const { return ocnt_; }
  bool permanent() const { return (flags_ & kTicketPermanent) != 0; }

  // Records that the transaction wrote `bytes` to the log.  Returns false
  // (and consumes nothing) on an overrun: the reservation table under-
  // estimated this transaction type, which the caller treats as fatal for
  // the log (XFS prints the ticket and shuts down).
  [[nodiscard]] bool Consume(std::int32_t bytes);
  // Gives back bytes consumed earlier in this step: a relogged item
  // formatted smaller than before (the CIL's negative length delta).
  void Refund(std::int32_t bytes);

  // Bytes this ticket must find free on the reserve head before it may be
  // granted: every pre-reserved roll of a permanent ticket (XFS's
  // xlog_ticket_reservation for l_reserve_head).
  std::int64_t ReserveHeadNeed() const {
    return permanent() ? std::int64_t{unit_res_} * cnt_ : unit_res_;
  }
  // On the write head a ticket only ever waits for one unit (Regrant at cnt 0).
  std::int64_t WriteHeadNeed() const { return unit_res_; }

  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 private:
  friend class LogSpace;
  friend class GrantHead;
  ~Ticket() = default;

  // Owned by the transaction's thread.
  std::uint32_t tid_;
  const std::int32_t unit_res_;
  std::int32_t curr_res_;
  std::int32_t cnt_;
  const std::int32_t ocnt_;

  // Guarded by the lock of the grant head the ticket waits on.
  std::uint32_t flags_;
  std::uint32_t signals_ = 0;        // signals since the waiter last ran
  std::int64_t need_ = 0;            // bytes it waits for on that head
  std::int64_t enqueued_at_ns_ = 0;
  WaitToken* waiter_ = nullptr;      // token of the thread sleeping on it

  std::atomic<std::uint32_t> refs_{1};
};

inline void intrusive_ptr_add_ref(Ticket* t) { t->Ref(); }
inline void intrusive_ptr_release(Ticket* t) { t->Unref(); }
using TicketRef = boost::intrusive_ptr<Ticket>;

}  // namespace walfs::journal
