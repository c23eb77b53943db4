// Stale mounts: what `walfs IMAGE MOUNTPOINT` does when MOUNTPOINT is still
// covered by a dead FUSE mount -- one whose daemon was killed, so that every
// access to it fails with ENOTCONN ("Transport endpoint is not connected")
// until it is unmounted.  Mounting over it is impossible (the kernel cannot
// even look the directory up), so walfs says what it found and detaches it:
// umount2(MNT_DETACH) as root, `fusermount3 -uz` otherwise (it may unmount
// the caller's own FUSE mounts).  Several dead mounts stacked on one point
// are detached in turn.
//
//   Status s = ClearStaleMount(mountpoint, stderr);
//   if (!s.ok()) return Fail(s.message());  // says what to run by hand
#pragma once

#include <cstdio>
#include <string>

#include "base/status.h"

namespace walfs::tools {

// Does nothing unless stat(mountpoint) or statfs(mountpoint) fails with
// ENOTCONN (stat may be answered from the kernel's attribute cache for a
// second after the daemon died; statfs always reaches the daemon).  Each dead mount
// found is reported on `out` with what was done about it.  A mount that
// cannot be detached is an error whose message says what to run.
Status ClearStaleMount(const std::string& mountpoint, std::FILE* out);

}  // namespace walfs::tools
