// The FUSE handlers of file data: OPEN and CREATE (choosing, near a full
// disk, to bypass the kernel's cache: mount/writeback_guard.h), READ,
// WRITE, FLUSH, RELEASE, FSYNC, FALLOCATE, LSEEK, COPY_FILE_RANGE and POLL.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "base/messages.h"
#include "mount/fuse_caller.h"
#include "mount/fuse_events.h"
#include "mount/fuse_handlers.h"
#include "mount/fuse_reply.h"
#include "mount/setid_kill.h"

namespace walfs::mount::handlers {

namespace {

// A file opened for writing near a full disk bypasses the kernel's cache, so
// that write(2) itself gets ENOSPC (mount/writeback_guard.h).
void MaybeWriteThrough(FuseServer* s, fuse_ino_t ino, fuse_file_info* fi) {
  if ((fi->flags & O_ACCMODE) == O_RDONLY || !s->writeback_granted()) return;
  if (s->writeback().WriteThrough(s->fs()->AvailableBytes())) {
    fi->direct_io = 1;
    return;
  }
  fi->fh = kCachedWriterHandle;
  s->writeback().CachedWriterOpened(ino);
  // Low space may have begun between the check above and the count: the
  // NoteSpace that began it then did not see this file, so have its first
  // write ask here (NoteSpace sets the flag before it lists the writers).
  if (s->writeback().low_space()) s->InvalidateAttr(ino);
}

}  // namespace

void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  FuseServer* s = Server(req);
  if (ControlDir::IsControlIno(ino)) {
    Result<ControlDir::Opened> o = s->control().Open(ino, fi->flags, fuse_req_ctx(req)->uid);
    if (!o.ok()) return ReplyErr(req, o.status());
    fi->fh = o->handle;
    fi->direct_io = 1;
    fi->nonseekable = o->nonseekable;
    return (void)fuse_reply_open(req, fi);
  }
  if ((fi->flags & O_ACCMODE) != O_RDONLY && s->fs()->read_only()) return (void)FailErrno(req, EROFS);
  Result<struct stat> st = s->fs()->GetAttr(s->ToFs(ino));
  if (!st.ok()) return ReplyErr(req, st.status());
  if (S_ISDIR(st->st_mode)) return (void)FailErrno(req, EISDIR);
  // With FUSE_CAP_ATOMIC_O_TRUNC (libfuse's default) the kernel leaves
  // O_TRUNC to open.
  if ((fi->flags & O_TRUNC) && SessionIo::KillSuidgid()) {
    Result<bool> k = DropPrivilegesForWrite(s->fs(), s->ToFs(ino), SetidCallerOf(req));
    if (!k.ok()) return ReplyErr(req, k.status());
    if (*k) s->InvalidateAttr(ino);
  }
  if ((fi->flags & O_TRUNC) && S_ISREG(st->st_mode) && st->st_size != 0) {
    struct stat attr {};
    Result<struct stat> t = s->fs()->SetAttr(s->ToFs(ino), attr, fs::kSetSize);
    if (!t.ok()) return ReplyErr(req, t.status());
  }
  fi->keep_cache = 1;
  MaybeWriteThrough(s, ino, fi);
  if (fuse_reply_open(req, fi) != 0 && fi->fh == kCachedWriterHandle) s->writeback().CachedWriterReleased(ino);
}

void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  FuseServer* s = Server(req);
  if (ControlDir::IsControlIno(parent)) return (void)FailErrno(req, EPERM);
  // O_TMPFILE arrives as a create (mount/session_io.h); its name is "/".
  const bool tmpfile = SessionIo::Tmpfile();
  if (!tmpfile && IsReservedName(parent, name)) return (void)FailErrno(req, EPERM);
  Result<struct stat> r = tmpfile ? s->fs()->TmpFile(CallerOf(req), s->ToFs(parent), mode)
                                  : s->fs()->Mknod(CallerOf(req), s->ToFs(parent), name, S_IFREG | (mode & 07777), 0);
  if (!r.ok()) return ReplyErr(req, r.status());
  fuse_entry_param e = Entry(s, *r);
  MaybeWriteThrough(s, e.ino, fi);
  if (fuse_reply_create(req, &e, fi) != 0 && fi->fh == kCachedWriterHandle)
    s->writeback().CachedWriterReleased(e.ino);
}

void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  FuseServer* s = Server(req);
  if (ControlDir::IsControlIno(ino)) {
    // A blocked trace_pipe read gives up (EINTR) once the kernel forwards a
    // signal to its reader (FUSE_INTERRUPT); ControlDir asks between waits.
    Result<std::string> r = s->control().Read(fi->fh, static_cast<std::uint64_t>(off), size,
                                              (fi->flags & O_NONBLOCK) != 0,
                                              [req] { return fuse_req_interrupted(req) != 0; });
    if (!r.ok()) return ReplyErr(req, r.status());
    return (void)fuse_reply_buf(req, r->data(), r->size());
  }
  // Read straight into the ring entry the reply goes back in, when the
  // request came on a ring (no copy after the read); else into one buffer
  // per worker thread, kept between requests (not zeroed: Read fills every
  // byte it returns).
  char* into = SessionIo::ReplyBuffer(size).data();
  if (into == nullptr) {
    thread_local std::unique_ptr<char[]> buf;
    thread_local size_t capacity = 0;
    if (capacity < size) {
      buf = std::make_unique_for_overwrite<char[]>(size);
      capacity = size;
    }
    into = buf.get();
  }
  Result<std::size_t> n = s->fs()->Read(s->ToFs(ino), static_cast<std::uint64_t>(off), size, into);
  if (!n.ok()) return ReplyErr(req, n.status());
  fuse_reply_buf(req, into, *n);
}

namespace {

std::int64_t BlocksOf(FuseServer* s, fuse_ino_t ino) {
  Result<struct stat> st = s->fs()->GetAttr(s->ToFs(ino));
  return st.ok() ? static_cast<std::int64_t>(st->st_blocks) : -1;
}

}  // namespace

void Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  FuseServer* s = Server(req);
  if (ControlDir::IsControlIno(ino)) {
    Result<std::size_t> n = s->control().Write(fi->fh, static_cast<std::uint64_t>(off), std::string_view(buf, size),
                                               static_cast<std::uint32_t>(fuse_req_ctx(req)->pid));
    if (!n.ok()) return ReplyErr(req, n.status());
    return (void)fuse_reply_write(req, *n);
  }
  if (SessionIo::KillSuidgid()) {
    Result<bool> k = DropPrivilegesForWrite(s->fs(), s->ToFs(ino), SetidCallerOf(req));
    if (!k.ok()) return ReplyErr(req, k.status());
    if (*k) s->InvalidateAttr(ino);  // the WRITE reply carries no mode
  }
  // A write-back from the kernel's cache may allocate blocks the kernel
  // does not account for (it keeps size and times itself, not st_blocks).
  const bool writeback = fi->writepage != 0;
  const std::int64_t blocks_before = writeback ? BlocksOf(s, ino) : 0;
  // The kernel's direct-I/O path makes a short reply EIO (fuse_get_res_by_io);
  // its buffered one passes it on.
  const fs::NoSpaceWrite at_enospc =
      (fi->flags & O_DIRECT) && !writeback ? fs::NoSpaceWrite::kWhole : fs::NoSpaceWrite::kShort;
  Result<std::size_t> n = s->fs()->Write(s->ToFs(ino), static_cast<std::uint64_t>(off), buf, size, at_enospc);
  if (writeback && n.ok() && BlocksOf(s, ino) != blocks_before) s->InvalidateAttr(ino);
  if (writeback && (!n.ok() || *n < size)) {
    // The kernel's cache writing back data whose write(2) already returned
    // success: only fsync can still tell (WritebackGuard).
    const int err = n.ok() ? ENOSPC : ErrnoOf(n.status());
    if (s->writeback().Lost(ino, err))  // once per file: a full disk fails many write-backs
      Message(Severity::kWarning, "inode {}: write-back of {} bytes at {} failed ({}); every fsync of it reports {}",
              s->ToFs(ino), size, off, strerror(err), strerrorname_np(err));
  }
  s->NoteSpace();
  if (!n.ok()) return ReplyErr(req, n.status());
  fuse_reply_write(req, *n);
}

void Flush(fuse_req_t req, fuse_ino_t, fuse_file_info*) {
  fuse_reply_err(req, Server(req)->options().skip_flush ? ENOSYS : 0);  // ENOSYS: the kernel stops asking
}

void Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  if (ControlDir::IsControlIno(ino)) {
    Server(req)->polls().Forget(fi->fh);
    Server(req)->control().Release(fi->fh);
  } else if (fi->fh == kCachedWriterHandle) {
    Server(req)->writeback().CachedWriterReleased(ino);
  }
  fuse_reply_err(req, 0);
}

void Fsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info*) {
  FuseServer* s = Server(req);
  if (ControlDir::IsControlIno(ino)) return (void)fuse_reply_err(req, 0);
  Status st = s->fs()->Fsync(s->ToFs(ino), datasync != 0);
  if (st.ok()) {
    if (const int lost = s->writeback().LostErrno(ino)) return (void)FailErrno(req, lost);
  }
  ReplyStatus(req, st);
}

void Fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length, fuse_file_info*) {
  FuseServer* s = Server(req);
  if (ControlDir::IsControlIno(ino)) return (void)FailErrno(req, EOPNOTSUPP);
  if (offset < 0 || length <= 0) return (void)FailErrno(req, EINVAL);
  Status st = s->fs()->Fallocate(s->ToFs(ino), mode, static_cast<std::uint64_t>(offset), static_cast<std::uint64_t>(length));
  s->NoteSpace();
  ReplyStatus(req, st);
}

void Lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info*) {
  FuseServer* s = Server(req);
  if (ControlDir::IsControlIno(ino)) return (void)FailErrno(req, ESPIPE);
  if (off < 0) return (void)FailErrno(req, EINVAL);
  // The kernel does not write its cache back before it asks (fuse_lseek),
  // and the image alone would call dirty cached data a hole: a copy of a
  // file being written (cp, tar --sparse, rsync) would lose it.  While
  // anyone writes the file through the cache, have the kernel write its
  // pages from `off` on back first (mount/writeback_guard.h).
  if (s->writeback().HasCachedWriters(ino)) {
    // With one worker nobody would serve the write-back's WRITEs: refuse
    // instead, and the kernel stops asking and calls every byte before
    // its size data (fuse_lseek's ENOSYS fallback), never a hole.
    if (!s->other_workers_serve()) return (void)FailErrno(req, ENOSYS);
    s->WriteBackCached(ino, off);
  }
  Result<std::uint64_t> r = s->fs()->Lseek(s->ToFs(ino), static_cast<std::uint64_t>(off), whence);
  if (!r.ok()) return ReplyErr(req, r.status());
  fuse_reply_lseek(req, static_cast<off_t>(*r));
}

void CopyFileRange(fuse_req_t req, fuse_ino_t ino_in, off_t off_in, fuse_file_info*, fuse_ino_t ino_out,
                   off_t off_out, fuse_file_info*, size_t len, int flags) {
  FuseServer* s = Server(req);
  if (flags != 0) return (void)FailErrno(req, EINVAL);
  if (ControlDir::IsControlIno(ino_in) || ControlDir::IsControlIno(ino_out)) return (void)FailErrno(req, EXDEV);
  std::vector<char> buf(std::min<size_t>(len, 1 << 20));
  size_t done = 0;
  while (done < len) {
    const size_t want = std::min(buf.size(), len - done);
    Result<std::size_t> n = s->fs()->Read(s->ToFs(ino_in), static_cast<std::uint64_t>(off_in) + done, want, buf.data());
    if (!n.ok()) return ReplyErr(req, n.status());
    if (*n == 0) break;
    Result<std::size_t> w = s->fs()->Write(s->ToFs(ino_out), static_cast<std::uint64_t>(off_out) + done, buf.data(), *n);
    if (!w.ok()) {
      if (done > 0) break;
      return ReplyErr(req, w.status());
    }
    done += *w;
    if (*n < want) break;
  }
  fuse_reply_write(req, done);
}

void Poll(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, fuse_pollhandle* ph) {
  FuseServer* s = Server(req);
  s->CountPoll();
  if (!s->options().trace_poll) {  // the kernel stops asking (FuseServerOptions::trace_poll)
    if (ph != nullptr) fuse_pollhandle_destroy(ph);
    return (void)fuse_reply_err(req, ENOSYS);
  }
  unsigned events = POLLOUT | POLLWRNORM;
  const bool readable = !ControlDir::IsControlIno(ino) || s->control().Readable(fi->fh);
  if (readable) events |= POLLIN | POLLRDNORM;
  if (ph != nullptr) {
    if (readable)
      fuse_pollhandle_destroy(ph);
    else
      s->polls().Watch(fi->fh, ph);  // notified when data arrives
  }
  fuse_reply_poll(req, events);
}

}  // namespace walfs::mount::handlers
