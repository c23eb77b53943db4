// `walfs-trace top MNT`: the journal of a mounted walfs, live.  Every
// interval it reads MNT/.walfs/stats (and, when the mount's fs events are
// on, the new records of MNT/.walfs/trace, a snapshot that consumes
// nothing, so it runs beside `walfs-trace record`) and shows what changed:
//
//   FUSE requests per second and the busiest opcodes (count, req/s, p50 and
//   p99: of this interval from the trace when fs exit events are on, else
//   since mount from the stats); the log as a bar (tail space and grant
//   heads against its size, the AIL's push target; tools/log_bar.h) with
//   head and tail; the AIL's items, its target and how far it has to go,
//   its pushes and tail moves per second; grant-head
//   sleeps per second and wakes per sleep; CIL pushes, log writes and
//   forces per second and the force waits; cached buffers; and, from the
//   trace, the busiest callers.
//
// On a terminal each frame replaces the last (ANSI home and clear); in a
// pipe frames are plain lines, one blank line apart.  Exit 0 after
// --iterations frames or SIGINT/SIGTERM, 1 when MNT is not a walfs mount or
// its stats cannot be read (one line on stderr).
#pragma once

#include <string>

namespace walfs::tracing {

struct TopOptions {
  std::string mount;
  double interval_s = 1.0;
  int iterations = 0;  // 0: until interrupted
};

int RunTop(const TopOptions& options);

}  // namespace walfs::tracing
