// The image lock: keeps two walfs programs off one image at a time.
//
// The mount daemon (Filesystem::Mount), mkfs.walfs and fsck.walfs take an
// exclusive flock(2) on the image they open and hold it for as long as they
// use it; a second one is refused with EBUSY and a message naming the holder:
//
//   WALFS_RETURN_IF_ERROR(LockImage(fd, path));
//   // "/img is in use by pid 4242 (walfs), which holds its lock: is it
//   //  mounted? Unmount it first: Device or resource busy"
//
// The kernel drops an flock lock when the last reference to the open file
// goes, so a daemon killed with SIGKILL frees the image by itself.  "Last
// reference" can trail the process's death by a little: a killed daemon's
// io_uring instance is torn down by a kernel worker, which holds the file
// until its requests are cancelled.  So a lock whose holder (as /proc/locks
// names it) no longer runs is waited for, up to kDeadHolderWaitMs, rather
// than reported.  A live holder is reported at once.
//
// A daemon whose mount is gone (umount returned) still holds the lock while
// it writes its last changes back and closes the log, which can take
// seconds; `umount m && fsck.walfs img` must not fail on that.  So the
// daemon marks itself (MarkImageClosing: its main thread's name, which
// /proc/PID/comm shows, becomes kClosingComm), and a lock held by a process
// so marked is waited for, up to closing_holder_ms, saying so once.  Between
// the unmount and the mark there is a moment (the daemon's loop noticing its
// session ended), so a live holder is refused only once it has held the lock
// for live_holder_ms of the caller's trying.
//
// flock locks belong to an open file description: the same process opening
// the image twice conflicts with itself, so each program takes the lock on
// exactly one descriptor.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <string>

#include "base/status.h"

namespace walfs {

inline constexpr int kDeadHolderWaitMs = 5000;
inline constexpr int kClosingHolderWaitMs = 60000;
inline constexpr int kLiveHolderWaitMs = 500;
inline constexpr char kClosingComm[] = "walfs-closing";  // at most 15 characters

struct LockWait {
  int dead_holder_ms = kDeadHolderWaitMs;
  int closing_holder_ms = kClosingHolderWaitMs;
  int live_holder_ms = kLiveHolderWaitMs;
  std::FILE* notices = stderr;  // "waiting for pid N ..." once; nullptr: silent
};

// flock(fd, LOCK_EX | LOCK_NB), waiting out a dead holder and a closing
// daemon (above).  EBUSY with the holder's pid and name when another live
// process holds it.
Status LockImage(int fd, const std::string& path, const LockWait& wait = {});

// Names the calling thread kClosingComm: called by the daemon's main thread
// once its mount is gone, before the last writeback.
void MarkImageClosing();

// The pid holding an flock lock on the file open at `fd`, from /proc/locks;
// -1 when none is listed.
pid_t FlockHolder(int fd);

}  // namespace walfs
