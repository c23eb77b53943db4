// `walfs-trace list FILE|MNT`: the events a trace file or a mounted walfs
// has, one line each, with their fields, as `trace-cmd list -e -F` and
// `perf list` do:
//
//   fs/write_enter        begin    caller_pid ino off len
//   journal/grant_sleep   on       head tid need free queued mode
//
// For a file, from the catalogue it carries (its kind: instant, begin, end,
// counter); for a mount, from MNT/.walfs/events/*/*/format, with whether the
// event is enabled now.  A run of 8-byte string fields of one name prints as
// one, with its size: `name[24]`.
#pragma once

#include <string>

namespace walfs::tracing {

// Prints the list; the exit status (0, or 1 with a one-line reason on
// stderr: unreadable file, not a walfs mount).
int ListEvents(const std::string& file_or_mount);

}  // namespace walfs::tracing
