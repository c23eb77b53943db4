// The walfs daemon under test: started as `walfs IMAGE MNT -f [-o OPTS]` (a child, so
// its pid is known and SIGKILL reaches it), waited for until its mount shows
// up in /proc/self/mountinfo, and unmounted cleanly at the end of a round.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/status.h"

namespace walfs::bench::killtest {

struct Setup {
  std::string bin_dir;  // walfs, mkfs.walfs, fsck.walfs, walfs-aim
  std::string image;
  std::string mnt;
  std::string daemon_log;  // every daemon's stdout and stderr, appended
  std::string mount_options;  // passed as `-o OPTS` when not empty
  // "dev" or "uring": passed as transport=, and a mount that serves through
  // another transport is refused (unmounted, an error).  "": the mount's choice.
  std::string transport;
};

struct Daemon {
  pid_t pid = -1;
  double mount_ms = 0;     // spawn to mount visible: open, log recovery, FUSE mount
  std::string output;      // what it printed while mounting (recovery summary, stale mount)
};

// Starts the daemon and waits (up to `timeout_s`) for a live fuse.walfs
// mount at the mountpoint (a dead one left there does not count), serving
// through setup.transport when that is set.
Result<Daemon> StartDaemon(const Setup& setup, int timeout_s);

// umount (fusermount3 -u when not root), then the daemon must exit 0 within
// `timeout_s`.
Status UnmountAndWait(const Setup& setup, Daemon* daemon, int timeout_s);

}  // namespace walfs::bench::killtest
