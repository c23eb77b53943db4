#include "journal/transaction.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "journal/log.h"

namespace walfs::journal {

Result<Transaction> Transaction::Begin(Log* log, TransType type) {
  WALFS_RETURN_IF_ERROR(log->status());
  const TransResv& r = log->table().Get(type);
  WALFS_ASSIGN_OR_RETURN(TicketRef tic, log->space().Reserve(r.unit_bytes, r.log_count, r.permanent));
  return Transaction(log, type, std::move(tic));
}

Transaction::Transaction(Log* log, TransType type, TicketRef ticket)
    : log_(log), type_(type), ticket_(std::move(ticket)) {}

Transaction::Transaction(Transaction&& other) noexcept
    : log_(other.log_),
      type_(other.type_),
      ticket_(std::move(other.ticket_)),
      items_(std::move(other.items_)) {
  other.ticket_.reset();
  other.items_.clear();
}

Transaction::~Transaction() {
  if (ticket_) Cancel();
}

void Transaction::Join(LogItem* item) {
  if (std::find(items_.begin(), items_.end(), item) == items_.end()) items_.push_back(item);
}

Result<std::uint64_t> Transaction::CommitStep() {
  if (!ticket_) return Status::Internal("transaction already finished");
  if (items_.empty()) return log_->cil().current_seq();
  Result<std::uint64_t> seq = log_->cil().Commit(ticket_.get(), items_);
  items_.clear();
  return seq;
}

Result<std::uint64_t> Transaction::Commit() {
  Result<std::uint64_t> seq = CommitStep();
  if (ticket_) {
    log_->space().TicketUngrant(ticket_.get());
    ticket_.reset();
  }
  return seq;
}

Result<std::uint64_t> Transaction::CommitSync() {
  WALFS_ASSIGN_OR_RETURN(std::uint64_t seq, Commit());
  WALFS_RETURN_IF_ERROR(log_->Force(seq));
  return seq;
}

Status Transaction::Roll() {
  if (!ticket_) return Status::Internal("transaction already finished");
  if (!ticket_->permanent())
    return Status::InvalidArgument(
        fmt::format("a {} transaction does not roll", TransTypeName(type_)));
  Result<std::uint64_t> seq = CommitStep();
  if (!seq.ok()) {
    log_->space().TicketUngrant(ticket_.get());
    ticket_.reset();
    return seq.status();
  }
  log_->space().TicketRegrant(ticket_.get());
  Status s = log_->space().Regrant(ticket_.get());
  if (!s.ok()) {
    log_->space().TicketUngrant(ticket_.get());
    ticket_.reset();
  }
  return s;
}

void Transaction::Cancel() {
  if (!ticket_) return;
  const bool dirty = !items_.empty();
  items_.clear();
  log_->space().TicketUngrant(ticket_.get());
  ticket_.reset();
  if (dirty)
    log_->Shutdown(Status::Internal(fmt::format(
        "a dirty {} transaction was cancelled: its changes cannot be logged",
        TransTypeName(type_))));
}

}  // namespace walfs::journal
