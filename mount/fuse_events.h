// The mount's trace events (subsystem "fs"): every FUSE operation's entry
// and exit, "<op>_enter" (kBegin) and "<op>_exit" (kEnd), so exporters pair
// them into durations.  Each names who asked and for what:
//
//   caller_pid  the process the kernel sent the request for (fuse_req_ctx);
//               the text format prints it where ftrace puts TASK-PID, and the
//               daemon's worker thread as `worker=comm-tid`
//   ino         the request's first inode (the directory for namespace
//               operations; the count for forget_multi; 0 for symlink)
//
// and, by the operation's shape:
//
//   plain      <op>_enter: caller_pid ino
//   name       <op>_enter: caller_pid ino name name_len   (lookup mknod mkdir unlink
//              rmdir symlink link create rename: the entry's name, or link's and
//              symlink's new name; setxattr getxattr removexattr: the
//              attribute's name; cut to kTraceNameBytes, name_len the whole
//              length, so a cut name shows as name_len > 24)
//   io         <op>_enter: caller_pid ino off len          (read write)
//   fallocate  <op>_enter: caller_pid ino off len mode
//   every op   <op>_exit:  caller_pid ino err latency_ns  (err: the errno replied, 0 on
//              success; latency_ns: handler start to reply, no trace work in it)
//
// rename's destination follows its enter event as rename_to (caller_pid,
// newparent, name, name_len).  fs_task (caller_pid, comm, tgid) names a
// process: a worker writes it before the first request it serves for that
// pid, and again when its note of the pid is a second old (pids are reused).
// caller_pid 0 is a request the kernel made on its own (a release after the
// last close, writeback): no fs_task, printed as <kernel>-0.
#pragma once

#include <cstddef>

#include "tracing/event.h"

namespace walfs::mount {

#define WALFS_FUSE_OPS(X)                                                                     \
  X(lookup, name) X(forget, plain) X(forget_multi, plain) X(getattr, plain)                   \
  X(setattr, plain) X(readlink, plain) X(mknod, name) X(mkdir, name) X(unlink, name)          \
  X(rmdir, name) X(symlink, name) X(rename, name) X(link, name) X(open, plain)                \
  X(create, name) X(read, io) X(write, io) X(flush, plain) X(release, plain) X(fsync, plain)  \
  X(opendir, plain) X(readdir, plain) X(readdirplus, plain) X(releasedir, plain)              \
  X(fsyncdir, plain) X(statfs, plain) X(access, plain) X(setxattr, name)                      \
  X(getxattr, name) X(listxattr, plain) X(removexattr, name) X(fallocate, fallocate)          \
  X(lseek, plain) X(copy_file_range, plain) X(poll, plain) X(ioctl, plain)

// A name field is three kChars fields: 24 bytes.
inline constexpr int kTraceNameFields = 3;
inline constexpr std::size_t kTraceNameBytes = 8 * kTraceNameFields;

struct FuseOpEvents {
  tracing::EventDef& enter;
  tracing::EventDef& exit;
};

#define WALFS_DECLARE_FUSE_OP(op, shape) extern const FuseOpEvents kFuseOp_##op;
WALFS_FUSE_OPS(WALFS_DECLARE_FUSE_OP)
#undef WALFS_DECLARE_FUSE_OP

extern tracing::EventDef kFuseRenameTo;
extern tracing::EventDef kFuseTask;

// The errno the current thread's request was answered with (set by the
// adapter's reply helpers; 0 for a success).
void SetRepliedErrno(int err);
int TakeRepliedErrno();

// Writes fs_task for `pid` unless this thread wrote it less than a second
// ago (the comm is read from /proc/PID/comm, the tgid from /proc/PID/status).
void NoteCaller(std::uint32_t pid);

}  // namespace walfs::mount
