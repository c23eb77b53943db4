// The trace marker: a line a user writes to a mount's .walfs/trace_marker
// appears in the trace among the journal's records, as ftrace's
// trace_marker does, so a benchmark's phases ("fio: start randwrite") can be
// found in the timeline:
//
//   echo "phase 2: rm -rf" > /mnt/w/.walfs/trace_marker
//   walfs-trace print ... | grep user_marker
//   rm-4711 [001] 812.345678: user_marker: text=phase\x202:\x20rm\x20-rf len=15
//
// Each line is a `user_marker` record (caller_pid, text: 32 bytes, len: the
// line's whole length); a longer line continues in the next records, 32
// bytes each, so `len` tells where a line ends.  Written whenever tracing is
// on, whatever the enable bits (as ftrace's is), and subject to the event's
// filter; at most kMaxMarkerBytes of one write are kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace walfs::tracing {

inline constexpr std::size_t kMaxMarkerBytes = 4096;
inline constexpr std::size_t kMarkerTextBytes = 32;

// Records every line of `text` (a trailing newline ends the last; empty
// lines are skipped) for the process `caller_pid`.  Returns the records written.
std::size_t WriteMarker(std::uint32_t caller_pid, std::string_view text);

}  // namespace walfs::tracing
