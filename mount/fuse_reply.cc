#include "mount/fuse_reply.h"

#include "base/messages.h"
#include "mount/fuse_events.h"

namespace walfs::mount {

int ErrnoOf(const Status& s) {
  const int e = s.ToErrno();
  return e > 0 ? e : EIO;
}

void LogSerious(const Status& s) {
  switch (s.code()) {
    case StatusCode::kCorruption:
    case StatusCode::kShutdown:
    case StatusCode::kIoError:
      Message(Severity::kError, "{}", s.ToString());
      return;
    default:
      return;
  }
}

void FailErrno(fuse_req_t req, int err) {
  SetRepliedErrno(err);
  fuse_reply_err(req, err);
}

void ReplyErr(fuse_req_t req, const Status& s) {
  LogSerious(s);
  FailErrno(req, ErrnoOf(s));
}

void ReplyStatus(fuse_req_t req, const Status& s) {
  if (s.ok()) return (void)fuse_reply_err(req, 0);
  ReplyErr(req, s);
}

}  // namespace walfs::mount
