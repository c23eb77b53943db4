// Reply helpers shared by every FUSE handler: the one place a Status becomes
// an errno (STYLE.md rule 7), and the one place a failure is judged serious
// enough for the message log.  Every handler replies exactly once, through
// these or a fuse_reply_* call of its own.
//
//   Result<struct stat> r = fs->GetAttr(ino);
//   if (!r.ok()) return ReplyErr(req, r.status());
#pragma once

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "base/status.h"

namespace walfs::mount {

// The errno the kernel is given for a failed Status (EIO when it has none).
int ErrnoOf(const Status& s);

// Failures that mean the filesystem is damaged or failing (corruption, a
// shutdown, a device I/O error) go to the message log; the answers POSIX
// callers expect (ENOENT, EEXIST, ENOSPC, ENXIO, EROFS, ...) do not.
void LogSerious(const Status& s);

// Replies `err` and records it for the request's exit trace event.
void FailErrno(fuse_req_t req, int err);
void ReplyErr(fuse_req_t req, const Status& s);
// 0 for OK, else as ReplyErr.
void ReplyStatus(fuse_req_t req, const Status& s);

}  // namespace walfs::mount
