// The mount's trace events (subsystem "fs"): every FUSE operation's entry
// and exit, "<op>_enter" (kBegin: ino) and "<op>_exit" (kEnd: ino, err,
// latency_ns), so exporters pair them into durations.  `ino` is the
// request's first inode argument (the parent for namespace operations; the
// count for forget_multi); `err` is the errno replied (0: success).
#pragma once

#include "tracing/event.h"

namespace walfs::mount {

#define WALFS_FUSE_OPS(X)                                                                        \
  X(lookup) X(forget) X(forget_multi) X(getattr) X(setattr) X(readlink) X(mknod) X(mkdir)       \
  X(unlink) X(rmdir) X(symlink) X(rename) X(link) X(open) X(create) X(read) X(write) X(flush)   \
  X(release) X(fsync) X(opendir) X(readdir) X(readdirplus) X(releasedir) X(fsyncdir) X(statfs)  \
  X(access) X(setxattr) X(getxattr) X(listxattr) X(removexattr) X(fallocate) X(lseek)           \
  X(copy_file_range) X(poll) X(ioctl)

struct FuseOpEvents {
  tracing::EventDef& enter;
  tracing::EventDef& exit;
};

#define WALFS_DECLARE_FUSE_OP(op) extern const FuseOpEvents kFuseOp_##op;
WALFS_FUSE_OPS(WALFS_DECLARE_FUSE_OP)
#undef WALFS_DECLARE_FUSE_OP

// The errno the current thread's request was answered with (set by the
// adapter's reply helpers; 0 for a success).
void SetRepliedErrno(int err);
int TakeRepliedErrno();

}  // namespace walfs::mount
