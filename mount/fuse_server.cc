#include "mount/fuse_server.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/block_device_fault_command.h"
#include "base/messages.h"
#include "journal/wake_mode.h"
#include "fs/posix_acl.h"
#include "mount/bdi_limit.h"
#include "mount/fuse_caller.h"
#include "mount/fuse_events.h"
#include "mount/fuse_reply.h"
#include "mount/growfs_ioctl.h"
#include "mount/setid_kill.h"
#include "mount/sync_file.h"
#include "tracing/tracer.h"

namespace walfs::mount {

namespace {

FuseServer* Server(fuse_req_t req) { return static_cast<FuseServer*>(fuse_req_userdata(req)); }

// A handle of a walfs file that writes through the kernel's cache carries
// this in fi->fh, so that its RELEASE is counted off (WritebackGuard).
constexpr std::uint64_t kCachedWriterHandle = 1;

bool IsReservedName(fuse_ino_t parent, const char* name) {
  return parent == FUSE_ROOT_ID && ControlDir::kName == name;
}

struct stat ControlStat(const ControlDir::Attr& a) {
  struct stat st {};
  st.st_ino = a.ino;
  st.st_mode = a.mode;
  st.st_nlink = a.nlink;
  st.st_size = static_cast<off_t>(a.size);
  st.st_uid = a.uid;
  st.st_gid = a.gid;
  st.st_blksize = 4096;
  const timespec t{a.time_ns / 1'000'000'000, a.time_ns % 1'000'000'000};
  st.st_atim = st.st_mtim = st.st_ctim = t;
  return st;
}

fuse_entry_param Entry(FuseServer* s, struct stat st) {
  st.st_ino = s->ToFuse(st.st_ino);
  return s->options().Entry(st);
}

void ReplyEntry(fuse_req_t req, const Result<struct stat>& r) {
  if (!r.ok()) return ReplyErr(req, r.status());
  fuse_entry_param e = Entry(Server(req), *r);
  fuse_reply_entry(req, &e);
}

void ReplyAttr(fuse_req_t req, Result<struct stat> r) {
  if (!r.ok()) return ReplyErr(req, r.status());
  FuseServer* s = Server(req);
  r->st_ino = s->ToFuse(r->st_ino);
  fuse_reply_attr(req, &*r, s->options().attr_timeout);
}

// ---- namespace ----

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  FuseServer* s = Server(req);
  if (IsReservedName(parent, name) || ControlDir::IsControlIno(parent)) {
    Result<ControlDir::Attr> a = s->control().Lookup(parent, name);
    if (!a.ok()) return ReplyErr(req, a.status());
    const fuse_entry_param e = KernelPolicy::UncachedEntry(ControlStat(*a));
    return (void)fuse_reply_entry(req, &e);
  }
  Result<struct stat> r = s->fs()->Lookup(s->ToFs(parent), name);
  if (!r.ok() && r.status().ToErrno() == ENOENT && s->options().negative_timeout > 0) {
    SetRepliedErrno(ENOENT);
    const fuse_entry_param e = s->options().NegativeEntry();
    return (void)fuse_reply_entry(req, &e);
  }
  ReplyEntry(req, r);
}

void Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  FuseServer* s = Server(req);
  if (!ControlDir::IsControlIno(ino)) s->fs()->Forget(s->ToFs(ino), nlookup);
  fuse_reply_none(req);
}

void ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  FuseServer* s = Server(req);
  for (size_t i = 0; i < count; ++i)
    if (!ControlDir::IsControlIno(forgets[i].ino)) s->fs()->Forget(s->ToFs(forgets[i].ino), forgets[i].nlookup);
  fuse_reply_none(req);
}

void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  FuseServer* s = Server(req);
  if (ControlDir::IsControlIno(ino)) {
    Result<ControlDir::Attr> a = s->control().GetAttr(ino);
    if (!a.ok()) return ReplyErr(req, a.status());
    struct stat st = ControlStat(*a);
    return (void)fuse_reply_attr(req, &st, 0);
  }
  // A write(2) through the cache asks for the mode first, naming its file,
  // when walfs invalidated it: in low space that is where a write the space
  // left could not hold is refused (mount/writeback_guard.h).
  if (fi != nullptr && fi->fh == kCachedWriterHandle && s->writeback().low_space()) {
    s->NoteSpace();
    if (s->writeback().low_space()) {
      if (!s->writeback().AdmitCachedWrite(s->fs()->AvailableBytes())) return (void)FailErrno(req, ENOSPC);
      ReplyAttr(req, s->fs()->GetAttr(s->ToFs(ino)));
      s->InvalidateAttr(ino);  // so that the next write(2) asks again
      return;
    }
  }
  ReplyAttr(req, s->fs()->GetAttr(s->ToFs(ino)));
}

void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info*) {
  FuseServer* s = Server(req);
  if (ControlDir::IsControlIno(ino)) {
    if (to_set & FUSE_SET_ATTR_SIZE) {
      Status st = s->control().Truncate(ino, fuse_req_ctx(req)->uid);
      if (!st.ok()) return ReplyErr(req, st);
    }
    Result<ControlDir::Attr> a = s->control().GetAttr(ino);
    if (!a.ok()) return ReplyErr(req, a.status());
    struct stat st = ControlStat(*a);
    return (void)fuse_reply_attr(req, &st, 0);
  }
  std::uint32_t mask = 0;
  if (to_set & FUSE_SET_ATTR_MODE) mask |= fs::kSetMode;
  if (to_set & FUSE_SET_ATTR_UID) mask |= fs::kSetUid;
  if (to_set & FUSE_SET_ATTR_GID) mask |= fs::kSetGid;
  if (to_set & FUSE_SET_ATTR_SIZE) mask |= fs::kSetSize;
  if (to_set & FUSE_SET_ATTR_ATIME) mask |= fs::kSetAtime;
  if (to_set & FUSE_SET_ATTR_MTIME) mask |= fs::kSetMtime;
  if (to_set & FUSE_SET_ATTR_ATIME_NOW) mask |= fs::kSetAtimeNow;
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) mask |= fs::kSetMtimeNow;
  if (to_set & FUSE_SET_ATTR_CTIME) mask |= fs::kSetCtime;
  const std::uint64_t fino = s->ToFs(ino);
  if (s->session_io().killpriv_v2()) {  // mount/setid_kill.h: the kernel left it to walfs
    const bool changes_owner = (mask & (fs::kSetUid | fs::kSetGid)) && !(mask & fs::kSetMode);
    // The kernel flags a chown of a regular file too, whoever asks (even
    // with CAP_FSETID): there the flag means "apply the chown rule", which
    // follows.  Only a truncate's flag says the caller lacks CAP_FSETID.
    if (SessionIo::KillSuidgid() && (!changes_owner || (mask & fs::kSetSize))) {
      if (Result<bool> k = DropPrivilegesForWrite(s->fs(), fino, SetidCallerOf(req)); !k.ok())
        return ReplyErr(req, k.status());
    }
    if (changes_owner) {
      std::uint32_t new_gid = attr->st_gid;
      if (!(mask & fs::kSetGid)) {
        Result<struct stat> cur = s->fs()->GetAttr(fino);
        if (!cur.ok()) return ReplyErr(req, cur.status());
        new_gid = cur->st_gid;
      }
      if (Status k = DropPrivilegesForChown(s->fs(), fino, new_gid, SetidCallerOf(req)); !k.ok())
        return ReplyErr(req, k);
    }
  }
  Result<struct stat> r = s->fs()->SetAttr(fino, *attr, mask);
  if (r.ok() && (mask & fs::kSetSize) && r->st_size == 0) s->writeback().Clear(ino);
  ReplyAttr(req, std::move(r));
}

void Readlink(fuse_req_t req, fuse_ino_t ino) {
  FuseServer* s = Server(req);
  Result<std::string> r = s->fs()->Readlink(s->ToFs(ino));
  if (!r.ok()) return ReplyErr(req, r.status());
  fuse_reply_readlink(req, r->c_str());
}

void Mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  FuseServer* s = Server(req);
  if (IsReservedName(parent, name) || ControlDir::IsControlIno(parent)) return (void)FailErrno(req, EPERM);
  ReplyEntry(req, s->fs()->Mknod(CallerOf(req), s->ToFs(parent), name, mode, static_cast<std::uint32_t>(rdev)));
}

void Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  FuseServer* s = Server(req);
  if (IsReservedName(parent, name) || ControlDir::IsControlIno(parent)) return (void)FailErrno(req, EPERM);
  ReplyEntry(req, s->fs()->Mkdir(CallerOf(req), s->ToFs(parent), name, mode));
}

void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  FuseServer* s = Server(req);
  if (IsReservedName(parent, name) || ControlDir::IsControlIno(parent)) return (void)FailErrno(req, EPERM);
  Status st = s->fs()->Unlink(s->ToFs(parent), name);
  ReplyStatus(req, st);
}

void Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  FuseServer* s = Server(req);
  if (IsReservedName(parent, name) || ControlDir::IsControlIno(parent)) return (void)FailErrno(req, EPERM);
  Status st = s->fs()->Rmdir(s->ToFs(parent), name);
  ReplyStatus(req, st);
}

void Symlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name) {
  FuseServer* s = Server(req);
  if (IsReservedName(parent, name) || ControlDir::IsControlIno(parent)) return (void)FailErrno(req, EPERM);
  ReplyEntry(req, s->fs()->Symlink(CallerOf(req), s->ToFs(parent), name, link));
}

void Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent, const char* newname,
            unsigned int flags) {
  FuseServer* s = Server(req);
  if (IsReservedName(parent, name) || IsReservedName(newparent, newname) || ControlDir::IsControlIno(parent) ||
      ControlDir::IsControlIno(newparent))
    return (void)FailErrno(req, EPERM);
  Status st = s->fs()->Rename(s->ToFs(parent), name, s->ToFs(newparent), newname, flags, CallerOf(req));
  ReplyStatus(req, st);
}

void Link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char* newname) {
  FuseServer* s = Server(req);
  if (IsReservedName(newparent, newname) || ControlDir::IsControlIno(newparent) || ControlDir::IsControlIno(ino))
    return (void)FailErrno(req, EPERM);
  ReplyEntry(req, s->fs()->Link(s->ToFs(ino), s->ToFs(newparent), newname));
}

// ---- files ----

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
  // One buffer per worker thread, kept between requests (not zeroed: Read
  // fills every byte it returns).
  thread_local std::unique_ptr<char[]> buf;
  thread_local size_t capacity = 0;
  if (capacity < size) {
    buf = std::make_unique_for_overwrite<char[]>(size);
    capacity = size;
  }
  Result<std::size_t> n = s->fs()->Read(s->ToFs(ino), static_cast<std::uint64_t>(off), size, buf.get());
  if (!n.ok()) return ReplyErr(req, n.status());
  fuse_reply_buf(req, buf.get(), *n);
}

std::int64_t BlocksOf(FuseServer* s, fuse_ino_t ino) {
  Result<struct stat> st = s->fs()->GetAttr(s->ToFs(ino));
  return st.ok() ? static_cast<std::int64_t>(st->st_blocks) : -1;
}

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

// WALFS_IOC_GROWFS (walfs-growfs MNT; mount/growfs_ioctl.h): the geometry
// for anyone, a grow for root only (as FITRIM, below).  The grow runs on
// this FUSE worker thread; the others go on serving, and allocating.
void Growfs(fuse_req_t req, FuseServer* s, const void* in_buf, size_t in_bufsz, size_t out_bufsz) {
  if (in_bufsz < sizeof(GrowfsArgs) || out_bufsz < sizeof(GrowfsArgs)) return (void)FailErrno(req, EINVAL);
  GrowfsArgs args{};
  std::memcpy(&args, in_buf, sizeof args);  // the ABI struct, not an on-disk one
  fs::GrowReport r;
  if (args.flags & kGrowfsQuery) {
    r = s->fs()->Geometry();
  } else {
    if (fuse_req_ctx(req)->uid != 0) return (void)FailErrno(req, EPERM);
    Result<fs::GrowReport> grown = s->fs()->Grow(args.new_bytes);
    if (!grown.ok()) return ReplyErr(req, grown.status());
    r = *grown;
  }
  args.block_size = r.block_size;
  args.old_blocks = r.old_blocks;
  args.new_blocks = r.new_blocks;
  args.old_ag_count = r.old_ag_count;
  args.new_ag_count = r.new_ag_count;
  args.ag_blocks = r.ag_blocks;
  args.log_blocks = r.log_blocks;
  args.data_start = r.data_start;
  args.unused_blocks = r.unused_blocks;
  args.device_bytes = r.device_bytes;
  args.steps = r.steps;
  fuse_reply_ioctl(req, 0, &args, sizeof args);
}

// FITRIM (fstrim MNT), the other ioctl walfs answers (docs/fs.md, "Discard"):
// a restricted ioctl, so the kernel copies the struct fstrim_range in and
// out by the command's encoding, and on a directory only because INIT
// granted FUSE_CAP_IOCTL_DIR.  The kernel asks CAP_SYS_ADMIN of FITRIM on
// its own filesystems; FUSE passes the ioctl on unchecked with nothing but
// the caller's ids, so walfs lets only root trim.  Every other command is
// ENOTTY, as from a filesystem without ioctls.
// struct fstrim_range is three u64s for 32-bit callers too, so
// FUSE_IOCTL_COMPAT needs nothing of its own.
void Ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void*, fuse_file_info*, unsigned /*flags*/,
           const void* in_buf, size_t in_bufsz, size_t out_bufsz) {
  FuseServer* s = Server(req);
  if (ControlDir::IsControlIno(ino)) return (void)FailErrno(req, ENOTTY);
  if (cmd == static_cast<unsigned int>(kIocGrowfs)) return Growfs(req, s, in_buf, in_bufsz, out_bufsz);
  if (cmd != FITRIM) return (void)FailErrno(req, ENOTTY);
  if (fuse_req_ctx(req)->uid != 0) return (void)FailErrno(req, EPERM);  // first, as ext4 and XFS check
  if (in_bufsz < sizeof(fstrim_range) || out_bufsz < sizeof(fstrim_range)) return (void)FailErrno(req, EINVAL);
  fstrim_range range{};
  std::memcpy(&range, in_buf, sizeof range);  // the kernel's ABI struct, not an on-disk one
  Result<std::uint64_t> trimmed = s->fs()->Trim(range.start, range.len, range.minlen);
  if (!trimmed.ok()) return ReplyErr(req, trimmed.status());
  range.len = *trimmed;  // what fstrim prints
  fuse_reply_ioctl(req, 0, &range, sizeof range);
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

// ---- directories ----

void OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  FuseServer* s = Server(req);
  if (s->options().skip_opendir) return (void)fuse_reply_err(req, ENOSYS);  // the kernel stops asking
  if (ControlDir::IsControlIno(ino)) return (void)fuse_reply_open(req, fi);
  Result<struct stat> st = s->fs()->GetAttr(s->ToFs(ino));
  if (!st.ok()) return ReplyErr(req, st.status());
  if (!S_ISDIR(st->st_mode)) return (void)FailErrno(req, ENOTDIR);
  fuse_reply_open(req, fi);
}

// A control directory, listed from entry `off` on (its cookies are entry
// indexes + 1).  readdirplus entries carry their attributes, uncached.
void ControlReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus) {
  FuseServer* s = Server(req);
  Result<std::vector<ControlDir::DirEntry>> es = s->control().ReadDir(ino);
  if (!es.ok()) return ReplyErr(req, es.status());
  std::vector<char> buf(size);
  size_t used = 0;
  for (size_t i = static_cast<size_t>(off); i < es->size(); ++i) {
    const ControlDir::DirEntry& de = (*es)[i];
    const struct stat st = ControlStat(de.attr);
    const auto next = static_cast<off_t>(i + 1);
    size_t n;
    if (plus) {
      const fuse_entry_param e = KernelPolicy::UncachedEntry(st);
      n = fuse_add_direntry_plus(req, buf.data() + used, size - used, de.name.c_str(), &e, next);
    } else {
      n = fuse_add_direntry(req, buf.data() + used, size - used, de.name.c_str(), &st, next);
    }
    if (n > size - used) break;  // did not fit: nothing was added
    used += n;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void ReadDirCommon(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus) {
  FuseServer* s = Server(req);
  if (ControlDir::IsControlIno(ino)) return ControlReadDir(req, ino, size, off, plus);
  // The entries that fit, listed under the directory's lock; for
  // readdirplus each is looked up after the listing let the lock go (a
  // lookup takes the same lock).
  struct Item {
    std::string name;
    std::uint64_t child;
    std::uint32_t type;
    std::uint64_t next;
  };
  std::vector<Item> items;
  size_t need_total = 0;
  Status st = s->fs()->ReadDir(s->ToFs(ino), static_cast<std::uint64_t>(off),
                               [&](std::string_view name, std::uint64_t child, std::uint32_t type, std::uint64_t next) {
    const std::string n(name);
    const size_t need = plus ? fuse_add_direntry_plus(req, nullptr, 0, n.c_str(), nullptr, 0)
                             : fuse_add_direntry(req, nullptr, 0, n.c_str(), nullptr, 0);
    if (need_total + need > size) return false;
    need_total += need;
    items.push_back({n, child, type, next});
    return true;
  });
  if (!st.ok()) return ReplyErr(req, st);
  std::vector<char> buf(size);
  size_t used = 0;
  for (const Item& it : items) {
    if (!plus) {
      struct stat sst {};
      sst.st_ino = s->ToFuse(it.child);
      sst.st_mode = it.type << 12;
      used += fuse_add_direntry(req, buf.data() + used, size - used, it.name.c_str(), &sst,
                                static_cast<off_t>(it.next));
      continue;
    }
    fuse_entry_param e{};
    if (it.name == "." || it.name == "..") {
      e.attr.st_ino = s->ToFuse(it.child);
      e.attr.st_mode = S_IFDIR;
    } else {
      Result<struct stat> r = s->fs()->Lookup(s->ToFs(ino), it.name);
      if (!r.ok()) {
        if (r.status().ToErrno() == ENOENT) continue;  // removed since it was listed
        if (used == 0) return ReplyErr(req, r.status());
        break;
      }
      e = Entry(s, *r);
    }
    used += fuse_add_direntry_plus(req, buf.data() + used, size - used, it.name.c_str(), &e,
                                   static_cast<off_t>(it.next));
  }
  fuse_reply_buf(req, buf.data(), used);
}

void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  ReadDirCommon(req, ino, size, off, false);
}
void ReadDirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  ReadDirCommon(req, ino, size, off, true);
}
void ReleaseDir(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }
void FsyncDir(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi) { Fsync(req, ino, datasync, fi); }

void StatFs(fuse_req_t req, fuse_ino_t) {
  Result<struct statvfs> r = Server(req)->fs()->StatFs();
  if (!r.ok()) return ReplyErr(req, r.status());
  fuse_reply_statfs(req, &*r);
}

void Access(fuse_req_t req, fuse_ino_t, int) { fuse_reply_err(req, 0); }  // default_permissions decides

// ---- xattrs ----

void SetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size, int flags) {
  FuseServer* s = Server(req);
  if (ControlDir::IsControlIno(ino)) return (void)FailErrno(req, ENOTSUP);
  fs::Caller caller = CallerOf(req);
  if (fs::IsAclXattr(name)) caller.groups = GroupsOf(req);  // whether the setgid bit stays
  Status st = s->fs()->SetXattr(s->ToFs(ino), name, std::string_view(value, size), flags, caller);
  ReplyStatus(req, st);
}

void GetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  FuseServer* s = Server(req);
  if (ControlDir::IsControlIno(ino)) return (void)FailErrno(req, ENODATA);
  Result<std::string> v = s->fs()->GetXattr(s->ToFs(ino), name);
  if (!v.ok()) return ReplyErr(req, v.status());
  if (size == 0) return (void)fuse_reply_xattr(req, v->size());
  if (v->size() > size) return (void)FailErrno(req, ERANGE);
  fuse_reply_buf(req, v->data(), v->size());
}

void ListXattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  FuseServer* s = Server(req);
  std::string out;
  if (!ControlDir::IsControlIno(ino)) {
    Result<std::vector<std::string>> names = s->fs()->ListXattr(s->ToFs(ino));
    if (!names.ok()) return ReplyErr(req, names.status());
    for (const std::string& n : *names) {
      out.append(n);
      out.push_back('\0');
    }
  }
  if (size == 0) return (void)fuse_reply_xattr(req, out.size());
  if (out.size() > size) return (void)FailErrno(req, ERANGE);
  fuse_reply_buf(req, out.data(), out.size());
}

void RemoveXattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  FuseServer* s = Server(req);
  if (ControlDir::IsControlIno(ino)) return (void)FailErrno(req, ENODATA);
  Status st = s->fs()->RemoveXattr(s->ToFs(ino), name);
  ReplyStatus(req, st);
}

void Init(void* userdata, fuse_conn_info* conn) {
  auto* s = static_cast<FuseServer*>(userdata);
  s->options().Negotiate(conn);
  s->SetWritebackGranted((conn->want & FUSE_CAP_WRITEBACK_CACHE) != 0);
}


void Destroy(void* userdata) { static_cast<FuseServer*>(userdata)->control().InterruptReaders(); }

// A name field of an fs event (fuse_events.h): the name cut to
// kTraceNameBytes, then its whole length.
void PutTraceName(const char* name, std::uint64_t* f) {
  const std::string_view n = name != nullptr ? std::string_view(name) : std::string_view();
  tracing::PackChars(n, f, kTraceNameFields);
  f[kTraceNameFields] = n.size();
}

// Wraps a handler with its enter/exit trace events (one branch each when
// the events are off).  What the enter event says beyond caller and inode
// depends on the operation (fuse_events.h); everything that is not the
// handler's own work -- naming the caller, the enter event (whose first
// use on a thread allocates its ring) -- happens before the latency clock
// starts.
template <const FuseOpEvents* Ev, auto Handler>
struct Traced {
  template <typename First, typename... Rest>
  static void Call(fuse_req_t req, First first, Rest... rest) {
    std::uint64_t ino = 0;
    if constexpr (std::is_integral_v<First>) ino = static_cast<std::uint64_t>(first);
    if constexpr (Ev == &kFuseOp_symlink) ino = std::get<0>(std::tie(rest...));  // the directory
    // Requests on /.walfs files are not traced: a trace_pipe reader would
    // otherwise wake itself with the events of its own reads.
    if ((!Ev->enter.active() && !Ev->exit.active()) || ControlDir::IsControlIno(ino))
      return Handler(req, first, rest...);
    const auto pid = static_cast<std::uint32_t>(fuse_req_ctx(req)->pid);
    NoteCaller(pid);
    std::uint64_t f[tracing::kMaxFields] = {pid, ino};
    const auto args = std::tie(first, rest...);
    if constexpr (Ev == &kFuseOp_lookup || Ev == &kFuseOp_mknod || Ev == &kFuseOp_mkdir ||
                  Ev == &kFuseOp_unlink || Ev == &kFuseOp_rmdir || Ev == &kFuseOp_create ||
                  Ev == &kFuseOp_rename || Ev == &kFuseOp_setxattr || Ev == &kFuseOp_getxattr ||
                  Ev == &kFuseOp_removexattr) {
      PutTraceName(std::get<1>(args), &f[2]);  // the entry's or the attribute's name
    } else if constexpr (Ev == &kFuseOp_symlink || Ev == &kFuseOp_link) {
      PutTraceName(std::get<2>(args), &f[2]);  // the new entry's name
    } else if constexpr (Ev == &kFuseOp_read) {
      f[2] = static_cast<std::uint64_t>(std::get<2>(args));  // off
      f[3] = std::get<1>(args);                              // size
    } else if constexpr (Ev == &kFuseOp_write) {
      f[2] = static_cast<std::uint64_t>(std::get<3>(args));
      f[3] = std::get<2>(args);
    } else if constexpr (Ev == &kFuseOp_fallocate) {
      f[2] = static_cast<std::uint64_t>(std::get<2>(args));
      f[3] = static_cast<std::uint64_t>(std::get<3>(args));
      f[4] = static_cast<std::uint64_t>(std::get<1>(args));  // mode
    }
    TakeRepliedErrno();
    WALFS_TRACE(Ev->enter, f[0], f[1], f[2], f[3], f[4], f[5]);
    if constexpr (Ev == &kFuseOp_rename) {
      std::uint64_t to[tracing::kMaxFields] = {pid, std::get<2>(args)};
      PutTraceName(std::get<3>(args), &to[2]);
      WALFS_TRACE(kFuseRenameTo, to[0], to[1], to[2], to[3], to[4], to[5]);
    }
    const auto start = std::chrono::steady_clock::now();
    Handler(req, first, rest...);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    WALFS_TRACE(Ev->exit, pid, ino, TakeRepliedErrno(), ns);
  }
};

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops{};
  ops.init = Init;
  ops.destroy = Destroy;
  ops.lookup = Traced<&kFuseOp_lookup, Lookup>::Call;
  ops.forget = Traced<&kFuseOp_forget, Forget>::Call;
  ops.forget_multi = Traced<&kFuseOp_forget_multi, ForgetMulti>::Call;
  ops.getattr = Traced<&kFuseOp_getattr, GetAttr>::Call;
  ops.setattr = Traced<&kFuseOp_setattr, SetAttr>::Call;
  ops.readlink = Traced<&kFuseOp_readlink, Readlink>::Call;
  ops.mknod = Traced<&kFuseOp_mknod, Mknod>::Call;
  ops.mkdir = Traced<&kFuseOp_mkdir, Mkdir>::Call;
  ops.unlink = Traced<&kFuseOp_unlink, Unlink>::Call;
  ops.rmdir = Traced<&kFuseOp_rmdir, Rmdir>::Call;
  ops.symlink = Traced<&kFuseOp_symlink, Symlink>::Call;
  ops.rename = Traced<&kFuseOp_rename, Rename>::Call;
  ops.link = Traced<&kFuseOp_link, Link>::Call;
  ops.open = Traced<&kFuseOp_open, Open>::Call;
  ops.create = Traced<&kFuseOp_create, Create>::Call;
  ops.read = Traced<&kFuseOp_read, Read>::Call;
  ops.write = Traced<&kFuseOp_write, Write>::Call;
  ops.flush = Traced<&kFuseOp_flush, Flush>::Call;
  ops.release = Traced<&kFuseOp_release, Release>::Call;
  ops.fsync = Traced<&kFuseOp_fsync, Fsync>::Call;
  ops.opendir = Traced<&kFuseOp_opendir, OpenDir>::Call;
  ops.readdir = Traced<&kFuseOp_readdir, ReadDir>::Call;
  ops.readdirplus = Traced<&kFuseOp_readdirplus, ReadDirPlus>::Call;
  ops.releasedir = Traced<&kFuseOp_releasedir, ReleaseDir>::Call;
  ops.fsyncdir = Traced<&kFuseOp_fsyncdir, FsyncDir>::Call;
  ops.statfs = Traced<&kFuseOp_statfs, StatFs>::Call;
  ops.access = Traced<&kFuseOp_access, Access>::Call;
  ops.setxattr = Traced<&kFuseOp_setxattr, SetXattr>::Call;
  ops.getxattr = Traced<&kFuseOp_getxattr, GetXattr>::Call;
  ops.listxattr = Traced<&kFuseOp_listxattr, ListXattr>::Call;
  ops.removexattr = Traced<&kFuseOp_removexattr, RemoveXattr>::Call;
  ops.fallocate = Traced<&kFuseOp_fallocate, Fallocate>::Call;
  ops.lseek = Traced<&kFuseOp_lseek, Lseek>::Call;
  ops.copy_file_range = Traced<&kFuseOp_copy_file_range, CopyFileRange>::Call;
  ops.poll = Traced<&kFuseOp_poll, Poll>::Call;
  ops.ioctl = Traced<&kFuseOp_ioctl, Ioctl>::Call;
  return ops;
}

}  // namespace

FuseServer::FuseServer(fs::Filesystem* fs, const FuseServerOptions& options, std::string mount_options)
    : fs_(fs),
      options_(options),
      writeback_(options.writeback_reserve_bytes),
      session_io_({.killpriv_v2 = options.killpriv_v2,
                   .transport = options.transport == "dev"     ? SessionIo::Transport::kDev
                                : options.transport == "uring" ? SessionIo::Transport::kUring
                                                               : SessionIo::Transport::kAuto,
                   .uring_lanes = options.uring_lanes}),
      polls_([this](std::uint64_t fh) { return control_->Readable(fh); }) {
  ControlDir::Sources src;
  src.tracer = &tracing::Tracer::Get();
  src.stats = [this, fs] {
    return fs->StatsText() + session_io_.StatsText() +
           fmt::format("writeback_cache {}\nwriteback_reserve_bytes {}\nwriteback_lost {}\n",
                       writeback_granted() ? 1 : 0, writeback_.reserve_bytes(), writeback_.lost_writebacks()) +
           fmt::format("writeback_dirty_bound {}\nwriteback_gate_bytes {}\nwriteback_low_space {}\n"
                       "writeback_refused {}\n",
                       writeback_.dirty_bound(), writeback_.gate_bytes(), writeback_.low_space() ? 1 : 0,
                       writeback_.refused_writes()) +
           (push_ ? push_->StatsText() : std::string()) +
           fmt::format("fuse_polls {}\n", polls_received_.load(std::memory_order_relaxed));
  };
  src.get_grant_wake = [fs] { return std::string(journal::WakeModeName(fs->wake_mode())); };
  src.set_grant_wake = [fs](std::string_view v) -> Status {
    WALFS_ASSIGN_OR_RETURN(journal::WakeMode m, journal::ParseWakeMode(v));
    return fs->SetWakeMode(m);
  };
  src.parent_ino = FUSE_ROOT_ID;
  src.owner_uid = getuid();
  src.owner_gid = getgid();
  src.files.push_back({.name = "messages",
                       .read = [] { return Messages::Get().Text(); },
                       .write = {},
                       .help = "the mount's kernel-style log: mount, recovery, errors, shutdown",
                       .owner_reads_only = true});
  src.files.push_back(
      {.name = "mount_options",
       .read =
           [this, fs, text = std::move(mount_options)] {
             return fmt::format("{}wake={}\n{}transport_in_use={}\nfilesystem={}\n", text,
                                journal::WakeModeName(fs->wake_mode()), options_.OptionsText(),
                                session_io_.transport(), fs->Describe());
           },
       .write = {},
       .help = "every mount option in effect, defaults included, one name=value a line"});
  src.files.push_back(SyncControlFile([fs] { return fs->Sync(); }));
  src.files.back().anyone_writes = true;  // as sync(2), which any user may call
  if (FaultDevice* dev = fs->fault_device()) {
    // The last command applied, for reads of the file.
    struct Last {
      std::mutex mu;
      std::string command;
    };
    auto last = std::make_shared<Last>();
    src.files.push_back({.name = "fault",
                         .read =
                             [dev, last] {
                               std::lock_guard l(last->mu);
                               return FaultText(*dev, last->command);
                             },
                         .write =
                             [dev, last](std::string_view command) -> Status {
                               WALFS_RETURN_IF_ERROR(ApplyFaultCommand(dev, command));
                               Message(Severity::kWarning, "fault injection: {}", command);
                               std::lock_guard l(last->mu);
                               last->command = std::string(command);
                               return Status::Ok();
                             },
                         .snapshot = false,
                         .help = "testing (-o fault_injection): fail the image's I/O; read: what is armed"});
  }
  control_ = std::make_unique<ControlDir>(std::move(src));
}

FuseServer::~FuseServer() { StopPolling(); }

void FuseServer::InvalidateAttr(fuse_ino_t ino) {
  fuse_session* se = session_.load(std::memory_order_acquire);
  if (se == nullptr) return;
  // off < 0: the attributes only, no page cache; the kernel takes no inode
  // lock for it, so a handler may send it before it replies.
  const int rc = fuse_lowlevel_notify_inval_inode(se, ino, -1, 0);
  if (rc != 0 && rc != -ENOENT) Message(Severity::kWarning, "attribute invalidation of inode {}: {}", ino, strerror(-rc));
}

void FuseServer::NoteSpace() {
  if (!writeback_granted()) return;
  if (!writeback_.NoteAvailable(fs_->AvailableBytes())) return;
  const std::vector<std::uint64_t> writers = writeback_.CachedWriterInodes();
  Message(Severity::kWarning,
          "low space: below {} MiB free; {} file(s) open through the page cache now ask before each write, "
          "refused (ENOSPC) below {} MiB",
          writeback_.low_space_bytes() >> 20, writers.size(), writeback_.gate_bytes() >> 20);
  for (std::uint64_t ino : writers) InvalidateAttr(ino);
}

void FuseServer::LearnMount(const std::string& mountpoint) {
  Result<std::string> dev = MountDeviceNumber(mountpoint);
  Result<std::uint64_t> bound = dev.ok() ? BdiDirtyBound(*dev) : Result<std::uint64_t>(dev.status());
  if (bound.ok()) {
    writeback_.SetDirtyBound(*bound);
  } else {
    Message(Severity::kWarning, "the kernel's dirty-page bound for this mount is unknown ({}); assuming {} MiB",
            bound.status().message(), writeback_.dirty_bound() >> 20);
  }
  int push_ms = options_.writeback_cache ? options_.writeback_push_ms : 0;
  if (push_ms > 0 && !dev.ok()) {
    Message(Severity::kWarning, "writeback push off: this mount's device number is unknown ({})",
            dev.status().message());
    push_ms = 0;
  }
  push_ = std::make_unique<WritebackPush>(
      WritebackPush::Options{.mountpoint = mountpoint, .device = dev.ok() ? *dev : "", .interval_ms = push_ms});
  WritebackPush* push = push_.get();
  writeback_.SetWritersObserver([push](bool any) { push->SetWanted(any); });
  push->Start();
}

void FuseServer::StopWritebackPush() {
  if (push_) push_->RequestStop();
}

void FuseServer::JoinWritebackPush() {
  if (push_) push_->Join();
}

void FuseServer::WriteBackCached(fuse_ino_t ino, off_t from) {
  fuse_session* se = session_.load(std::memory_order_acquire);
  if (se == nullptr) return;
  // off >= 0: the kernel invalidates the pages from `from` on, and writes
  // each dirty one back first (invalidate_inode_pages2_range launders dirty
  // folios), through WRITE requests that other workers serve; the notify
  // returns once that is done.
  const int rc = fuse_lowlevel_notify_inval_inode(se, ino, from, 0);
  if (rc != 0 && rc != -ENOENT)
    Message(Severity::kWarning, "write-back of cached pages of inode {}: {}", ino, strerror(-rc));
}

const fuse_lowlevel_ops& FuseServer::Operations() {
  static const fuse_lowlevel_ops ops = MakeOps();
  return ops;
}

}  // namespace walfs::mount
