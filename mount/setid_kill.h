// What FUSE_HANDLE_KILLPRIV_V2 (mount/session_io.h) leaves to walfs: the
// kernel no longer clears set-user-ID, set-group-ID and file capabilities
// itself, so walfs does it, by the rules of the kernel's VFS (fs/attr.c,
// fs/open.c), so that a walfs mount and a kernel filesystem agree in every
// case (the table in tests/fuse/setid_table_test.cc runs both and compares):
//
//  - A write, a truncate or a truncating open by a caller without
//    CAP_FSETID: the kernel flags those requests (SessionIo::KillSuidgid());
//    setattr_should_drop_suidgid() then clears S_ISUID, and S_ISGID when the
//    file is group-executable or the writer is not in the file's group.
//  - A chown or chgrp of anything but a directory, by anyone (root too, Linux
//    since 2.2.13; chown_common() sets ATTR_KILL_SUID | ATTR_KILL_PRIV and
//    setattr_should_drop_sgid()): S_ISUID is cleared; S_ISGID when the file is
//    group-executable, or when the caller is neither in the file's old group
//    nor holds CAP_FSETID; and, since clearing a bit makes the change a mode
//    change too, setattr_copy_mode() clears S_ISGID of a caller who is neither
//    in the new group nor holds CAP_FSETID.  The file's security.capability
//    goes too.  Fifos, sockets and device nodes are no exception.
//
// A write by a caller with CAP_FSETID is not flagged, so it keeps a
// security.capability xattr; the kernel removes that itself on a cached write
// (file_remove_privs asks for the xattr and removes it through REMOVEXATTR).
#pragma once

#include <cstdint>
#include <functional>

#include "base/status.h"
#include "fs/filesystem.h"

namespace walfs::mount {

// Who asks, as far as the set-id rules care.  Each answer is computed only
// when a rule needs it (membership reads the caller's groups from /proc).
struct SetidCaller {
  std::function<bool(std::uint32_t gid)> in_group;  // the fsgid or a supplementary group
  std::function<bool()> has_fsetid;                 // CAP_FSETID in the effective set
};

// The mode after a write, truncate or truncating open the kernel flagged
// (the writer lacks CAP_FSETID).  Directories and non-set-id modes unchanged.
std::uint32_t ModeAfterFlaggedWrite(std::uint32_t mode, std::uint32_t file_gid, const SetidCaller& c);

// The mode after a chown or chgrp of a file that had `mode` and group
// `old_gid` and gets group `new_gid` (the same when only the owner changes).
std::uint32_t ModeAfterChown(std::uint32_t mode, std::uint32_t old_gid, std::uint32_t new_gid,
                             const SetidCaller& c);

// Applies a flagged write's rule to ino: the mode (a setattr, when it
// changes) and security.capability (removed when present, regular files).
// Returns whether the mode changed: a reply that carries no attributes
// (WRITE, OPEN) leaves the old mode in the kernel's attribute cache, so the
// caller must invalidate it.
Result<bool> DropPrivilegesForWrite(fs::Filesystem* fs, std::uint64_t ino, const SetidCaller& c);

// Applies the chown rule to ino before its owner or group changes to
// new_gid: the set-id bits and security.capability.  Directories keep both.
Status DropPrivilegesForChown(fs::Filesystem* fs, std::uint64_t ino, std::uint32_t new_gid,
                              const SetidCaller& c);

}  // namespace walfs::mount
