// What FUSE_HANDLE_KILLPRIV_V2 (mount/session_io.h) leaves to walfs: the
// kernel no longer clears set-user-ID, set-group-ID and file capabilities
// itself, so walfs does it, as the kernel's VFS would:
//  - on a write or truncate by a caller without CAP_FSETID (the kernel flags
//    those requests: SessionIo::KillSuidgid());
//  - on every chown of a non-directory, by anyone (Linux since 2.2.13).
// A write by a caller with CAP_FSETID is not flagged, so such a write keeps a
// security.capability xattr that the kernel's VFS would have removed (the
// same as virtiofs).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "fs/filesystem.h"

namespace walfs::mount {

// `mode` with its set-id privileges dropped: S_ISUID always; S_ISGID only
// when the file is group-executable (without that bit S_ISGID marks
// mandatory locking, not privilege).
std::uint32_t ModeWithoutSetid(std::uint32_t mode);

// Drops ino's set-id bits (a setattr of the mode, when they are set) and its
// security.capability xattr (when it has one).  Returns whether the mode
// changed: a reply that carries no attributes (WRITE, OPEN) leaves the old
// mode in the kernel's attribute cache, so the caller must invalidate it.
Result<bool> DropPrivileges(fs::Filesystem* fs, std::uint64_t ino);

}  // namespace walfs::mount
