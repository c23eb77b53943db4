// The FUSE handlers of the namespace: LOOKUP and FORGET, the creating and
// removing requests (MKNOD, MKDIR, SYMLINK, LINK, UNLINK, RMDIR, RENAME),
// READLINK, and the directory requests (OPENDIR, READDIR, READDIRPLUS,
// RELEASEDIR, FSYNCDIR).  /.walfs's names are the control directory's.
#include <sys/stat.h>

#include <string>
#include <vector>

#include "mount/fuse_caller.h"
#include "mount/fuse_events.h"
#include "mount/fuse_handlers.h"
#include "mount/fuse_reply.h"

namespace walfs::mount::handlers {

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

void OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  FuseServer* s = Server(req);
  if (s->options().skip_opendir) return (void)fuse_reply_err(req, ENOSYS);  // the kernel stops asking
  if (ControlDir::IsControlIno(ino)) return (void)fuse_reply_open(req, fi);
  Result<struct stat> st = s->fs()->GetAttr(s->ToFs(ino));
  if (!st.ok()) return ReplyErr(req, st.status());
  if (!S_ISDIR(st->st_mode)) return (void)FailErrno(req, ENOTDIR);
  fuse_reply_open(req, fi);
}

namespace {

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

}  // namespace

void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  ReadDirCommon(req, ino, size, off, false);
}
void ReadDirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  ReadDirCommon(req, ino, size, off, true);
}
void ReleaseDir(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }
void FsyncDir(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi) { Fsync(req, ino, datasync, fi); }

}  // namespace walfs::mount::handlers
