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
// flock locks belong to an open file description: the same process opening
// the image twice conflicts with itself, so each program takes the lock on
// exactly one descriptor.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/status.h"

namespace walfs {

inline constexpr int kDeadHolderWaitMs = 5000;

// flock(fd, LOCK_EX | LOCK_NB), waiting out a dead holder (above).  EBUSY
// with the holder's pid and name when another live process holds it.
Status LockImage(int fd, const std::string& path);

// The pid holding an flock lock on the file open at `fd`, from /proc/locks;
// -1 when none is listed.
pid_t FlockHolder(int fd);

}  // namespace walfs
