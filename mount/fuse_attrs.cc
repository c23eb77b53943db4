// The FUSE handlers of attributes: GETATTR and SETATTR (with the set-id
// rules the kernel leaves to walfs under KILLPRIV_V2: mount/setid_kill.h),
// STATFS, ACCESS and the xattr requests; and the replies every family
// sends an inode's attributes in (Entry, ReplyEntry, ReplyAttr, ControlStat).
#include <sys/stat.h>

#include <string>
#include <vector>

#include "fs/posix_acl.h"
#include "mount/fuse_caller.h"
#include "mount/fuse_events.h"
#include "mount/fuse_handlers.h"
#include "mount/fuse_reply.h"
#include "mount/setid_kill.h"

namespace walfs::mount::handlers {

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

void StatFs(fuse_req_t req, fuse_ino_t) {
  Result<struct statvfs> r = Server(req)->fs()->StatFs();
  if (!r.ok()) return ReplyErr(req, r.status());
  fuse_reply_statfs(req, &*r);
}

void Access(fuse_req_t req, fuse_ino_t, int) { fuse_reply_err(req, 0); }  // default_permissions decides

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

}  // namespace walfs::mount::handlers
