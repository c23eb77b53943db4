#include "journal/ticket.h"

#include "base/check.h"

namespace walfs::journal {

Ticket::Ticket(std::uint32_t tid, std::int32_t unit_res, std::int32_t cnt, bool permanent)
    : tid_(tid),
      unit_res_(unit_res),
      curr_res_(unit_res),
      cnt_(cnt),
      ocnt_(cnt),
      flags_(permanent ? kTicketPermanent : 0u) {
  // A ticket reserves something, and only rolling tickets pre-reserve rolls.
  WALFS_CHECK(unit_res > 0);
  WALFS_CHECK(cnt >= 1);
  WALFS_CHECK(permanent || cnt == 1);
}

bool Ticket::Consume(std::int32_t bytes) {
  WALFS_CHECK(bytes >= 0);
  if (bytes > curr_res_) return false;
  curr_res_ -= bytes;
  return true;
}

void Ticket::Refund(std::int32_t bytes) {
  WALFS_CHECK(bytes >= 0);
  curr_res_ += bytes;
}

std::string TicketFlagsString(std::uint32_t flags) {
  std::string s;
  auto add = [&](std::uint32_t bit, const char* name) {
    if ((flags & bit) == 0) return;
    if (!s.empty()) s += '|';
    s += name;
  };
  add(kTicketPermanent, "PERM");
  add(kTicketWaking, "WAKING");
  add(kTicketWriteUnitOwed, "WRITE_OWED");
  return s.empty() ? "0" : s;
}

}  // namespace walfs::journal
