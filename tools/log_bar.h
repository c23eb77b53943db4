// The log as `walfs-trace top` draws it: one line of WIDTH cells for the
// circular log laid out from its tail.  '#' is written log not yet freed
// (tail_space_bytes: from the tail to the head), '=' space granted to
// transactions that have not yet written it (the larger grant head), '.'
// free space, and '|' the AIL push target inside the written part: the
// AIL writes items back until the tail reaches it, so the cells left of
// '|' are what the AIL is freeing now.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace walfs::tracing {

// Bytes of log from TAIL to TARGET, LSNs as "cycle:sector" (the stats'
// form), in a log of LOG_BYTES: 0 when TARGET is not past TAIL, either
// does not parse, or the log's size is unknown.
std::uint64_t BytesPastTail(std::string_view tail, std::string_view target, std::uint64_t log_bytes);

struct LogPicture {
  double size = 0;         // log_bytes
  double tail_space = 0;   // tail_space_bytes
  double grant = 0;        // the larger grant head, bytes
  double target_past_tail = 0;  // BytesPastTail(log_tail, ail_target)
};

// WIDTH cells; all '?' when the log's size is unknown.
std::string LogBar(const LogPicture& log, int width);

}  // namespace walfs::tracing
