#include "mount/fuse_events.h"

namespace walfs::mount {

using tracing::EventKind;

#define WALFS_DEFINE_FUSE_OP(op)                                                              \
  WALFS_TRACE_EVENT(kFuseEnter_##op, "fs", #op "_enter", EventKind::kBegin, {"ino"});          \
  WALFS_TRACE_EVENT(kFuseExit_##op, "fs", #op "_exit", EventKind::kEnd, {"ino"}, {"err"},      \
                    {"latency_ns"});                                                          \
  const FuseOpEvents kFuseOp_##op{kFuseEnter_##op, kFuseExit_##op};
WALFS_FUSE_OPS(WALFS_DEFINE_FUSE_OP)
#undef WALFS_DEFINE_FUSE_OP

namespace {
thread_local int replied_errno = 0;
}  // namespace

void SetRepliedErrno(int err) { replied_errno = err; }
int TakeRepliedErrno() {
  const int e = replied_errno;
  replied_errno = 0;
  return e;
}

}  // namespace walfs::mount
