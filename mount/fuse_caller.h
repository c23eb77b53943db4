// Who sent a FUSE request, as the handlers need to know it: the uid, gid and
// umask the kernel puts in every request, and, read from /proc only when a
// rule asks, the caller's supplementary groups and capabilities.
#pragma once

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <cstdint>
#include <vector>

#include "fs/filesystem.h"
#include "mount/setid_kill.h"

namespace walfs::mount {

// uid, fsgid and umask (no groups: fs::Caller's groups are filled only where
// a rule needs them).
fs::Caller CallerOf(fuse_req_t req);

// The caller's supplementary groups (none if the kernel's record of them
// cannot be read: the caller then counts as a member of its own group only).
std::vector<std::uint32_t> GroupsOf(fuse_req_t req);

// Whether process `pid` holds capability `cap` (linux/capability.h's number)
// in its effective set, from /proc/PID/status.  False when pid is 0 (a
// caller in another pid namespace) or the file cannot be read: the caller
// then counts as unprivileged, as the stricter answer.
bool ProcessHasCapability(pid_t pid, int cap);

// The set-id rules' view of the request's caller (mount/setid_kill.h).
// Valid while the request is: answer it after the handler has used it.
SetidCaller SetidCallerOf(fuse_req_t req);

}  // namespace walfs::mount
