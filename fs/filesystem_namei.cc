// The namespace operations: lookup, create (mknod, mkdir, symlink, the
// FUSE create and O_TMPFILE), readlink, unlink and rmdir, link, rename (with
// RENAME_NOREPLACE, RENAME_EXCHANGE and RENAME_WHITEOUT) and readdir --
// XFS's xfs_inode.c namespace half.  Each locks the inodes it changes in
// ascending inode order and runs as one rolling transaction (fs/fs_op.h).
#include "fs/filesystem.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <algorithm>
#include <mutex>
#include <shared_mutex>

#include <fmt/format.h>

#include "fs/fs_op.h"

namespace walfs::fs {

using format::ForkFormat;
using format::InodeCore;
using journal::TransType;

namespace {
constexpr std::uint32_t kMaxLinks = 65000;

Status CheckName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return Errno(EINVAL, "invalid name");
  if (name.size() > format::kMaxNameLen) return Errno(ENAMETOOLONG, "name longer than 255 bytes");
  if (name.find('/') != std::string_view::npos || name.find('\0') != std::string_view::npos)
    return Errno(EINVAL, "name with '/' or NUL");
  return Status::Ok();
}

bool IsDir(const InodeCore& c) { return S_ISDIR(c.mode); }


// Exclusive locks on several inodes in ascending inode order (the one order
// every operation uses), each once.
class InodeLocks {
 public:
  explicit InodeLocks(std::vector<InodeRef> ips) : ips_(std::move(ips)) {
    std::sort(ips_.begin(), ips_.end(), [](const InodeRef& a, const InodeRef& b) { return a->ino < b->ino; });
    ips_.erase(std::unique(ips_.begin(), ips_.end(),
                           [](const InodeRef& a, const InodeRef& b) { return a->ino == b->ino; }),
               ips_.end());
    for (const InodeRef& ip : ips_) ip->rw.lock();
  }
  ~InodeLocks() { Release(); }
  // Unlocks them all now.
  void Release() {
    for (auto it = ips_.rbegin(); it != ips_.rend(); ++it) (*it)->rw.unlock();
    ips_.clear();
  }
  InodeLocks(const InodeLocks&) = delete;
  InodeLocks& operator=(const InodeLocks&) = delete;

 private:
  std::vector<InodeRef> ips_;
};
}  // namespace

Result<struct stat> Filesystem::Lookup(std::uint64_t parent, std::string_view name) {
  if (name.size() > format::kMaxNameLen) return Errno(ENAMETOOLONG, "name longer than 255 bytes");
  WALFS_ASSIGN_OR_RETURN(InodeRef dp, Iget(parent));
  // The lookup count is taken before the directory lets go: an unlink (which
  // needs the directory exclusively) and the forget after it cannot free the
  // inode between finding the name and counting the reference.
  std::shared_lock l(dp->rw);
  const InodeCore dc = dp->Core();
  if (!IsDir(dc)) return Errno(ENOTDIR, "not a directory");
  std::uint64_t target;
  if (name == ".") {
    target = parent;
  } else if (name == "..") {
    target = dirs_->Parent(dc);
  } else {
    WALFS_ASSIGN_OR_RETURN(std::optional<DirTarget> t, dirs_->Lookup(dc, name));
    if (!t) return Errno(ENOENT, fmt::format("no \"{}\"", name));
    target = t->ino;
  }
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(target));
  icache_->AddLookup(ip);
  return StatOf(ip->Core());
}

Result<struct stat> Filesystem::Mknod(const Caller& c, std::uint64_t parent, std::string_view name,
                                      std::uint32_t mode, std::uint32_t rdev) {
  switch (mode & S_IFMT) {
    case S_IFREG: case S_IFCHR: case S_IFBLK: case S_IFIFO: case S_IFSOCK: break;
    case 0: mode |= S_IFREG; break;
    default: return Errno(EINVAL, "mknod of a directory or symlink");
  }
  return CreateNode(c, parent, name, mode, rdev, {});
}

Result<struct stat> Filesystem::Mkdir(const Caller& c, std::uint64_t parent, std::string_view name,
                                      std::uint32_t mode) {
  return CreateNode(c, parent, name, S_IFDIR | (mode & 07777), 0, {});
}

Result<struct stat> Filesystem::Symlink(const Caller& c, std::uint64_t parent, std::string_view name,
                                        std::string_view target) {
  if (target.empty() || target.size() >= 4096 || target.size() > sb_.block_size)
    return Errno(target.empty() ? ENOENT : ENAMETOOLONG, "symlink target length");
  return CreateNode(c, parent, name, S_IFLNK | 0777, 0, target);
}

Result<struct stat> Filesystem::CreateNode(const Caller& c, std::uint64_t parent, std::string_view name,
                                           std::uint32_t mode, std::uint32_t rdev,
                                           std::string_view symlink) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  WALFS_RETURN_IF_ERROR(CheckName(name));
  WALFS_ASSIGN_OR_RETURN(InodeRef dp, Iget(parent));
  InodeRef ip;
  {
    InodeLocks locks({dp});
    InodeCore dc = dp->Core();
    if (!IsDir(dc)) return Errno(ENOTDIR, "not a directory");
    if (dc.nlink == 0) return Errno(ENOENT, "directory was removed");
    WALFS_ASSIGN_OR_RETURN(std::optional<DirTarget> exists, dirs_->Lookup(dc, name));
    if (exists) return Errno(EEXIST, fmt::format("\"{}\" exists", name));
    const bool dir = S_ISDIR(mode);
    if (dir && dc.nlink >= kMaxLinks) return Errno(EMLINK, "too many subdirectories");
    const bool remote_link = S_ISLNK(mode) && symlink.size() > kDataForkRoom;
    // The umask, or the directory's default ACL (one xattr leaf more).
    WALFS_ASSIGN_OR_RETURN(const NewInodeAcls acls, NewInodeAclsLocked(c, parent, dc, mode));
    mode = acls.mode;
    const TransType type = dir ? (acls.any() ? TransType::kMkdirAcl : TransType::kMkdir)
                           : S_ISLNK(mode) ? TransType::kSymlink
                           : acls.any()    ? TransType::kCreateAcl
                                           : TransType::kCreate;
    Op op(this);
    WALFS_RETURN_IF_ERROR(op.Begin(type, sb_.blocks_per_chunk() + 2 * 3 + 1 + (remote_link ? 1 : 0) + (acls.any() ? 1 : 0)));

    const format::Timestamp now = Now();
    InodeCore n;
    n.mode = static_cast<std::uint16_t>(mode);
    n.uid = c.uid;
    n.gid = (dc.mode & S_ISGID) ? dc.gid : c.gid;
    if (dir && (dc.mode & S_ISGID)) n.mode |= S_ISGID;
    n.nlink = dir ? 2 : 1;
    n.atime = n.mtime = n.ctime = n.crtime = now;
    n.literal.assign(format::kLiteralSize, '\0');
    n.rdev = rdev;
    n.ino = 1;  // Pick sets it; non-zero keeps the inode "in use" for the checks
    if (dir) {
      DirIndex::InitLocal(&n, parent);
    } else if (S_ISREG(mode)) {
      FileMap::InitEmpty(&n);
    } else if (S_ISLNK(mode)) {
      n.size = symlink.size();
      if (!remote_link) {
        n.format = ForkFormat::kLocal;
        std::copy(symlink.begin(), symlink.end(), n.literal.begin());
      } else {
        FileMap::InitEmpty(&n);
      }
    } else {
      n.format = ForkFormat::kNone;
    }
    const std::uint32_t ag = dir ? ialloc_->NextDirectoryAg() : ialloc_->AgOf(parent);
    WALFS_ASSIGN_OR_RETURN(std::uint64_t ino, ialloc_->Pick(op.tx(), ag, &n));
    // Unseen by anyone until the directory entry below: no lock needed.
    WALFS_RETURN_IF_ERROR(InheritAclsLocked(op, ino, &n, acls));
    if (remote_link) {
      WALFS_ASSIGN_OR_RETURN(format::Extent e, alloc_->Alloc(op.tx(), {.goal = ino / sb_.inodes_per_block()}));
      std::string block(sb_.block_size, '\0');
      std::copy(symlink.begin(), symlink.end(), block.begin());
      // The target is on disk before the transaction that points at it.
      WALFS_RETURN_IF_ERROR(device_->Write(e.disk_block * sb_.block_size, block.data(), block.size()));
      e.file_block = 0;
      WALFS_RETURN_IF_ERROR(maps_->Map(op.tx(), &n, e));
      n.nblocks = 1;
    }
    ip = icache_->Insert(n);
    op.Dirty(ip);
    WALFS_RETURN_IF_ERROR(dirs_->Add(op.tx(), &dc, name, DirTarget{ino, DirentType(mode)}));
    if (dir) dc.nlink += 1;
    dc.mtime = dc.ctime = now;
    StoreCore(dp, dc);
    op.Dirty(dp);
    WALFS_RETURN_IF_ERROR(op.Commit().status());
  }
  counters_.creates.fetch_add(1, std::memory_order_relaxed);
  icache_->AddLookup(ip);
  return StatOf(ip->Core());
}

Result<std::string> Filesystem::Readlink(std::uint64_t ino) {
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  std::shared_lock l(ip->rw);
  const InodeCore c = ip->Core();
  if (!S_ISLNK(c.mode)) return Errno(EINVAL, "not a symlink");
  if (c.format == ForkFormat::kLocal) return c.literal.substr(0, c.size);
  WALFS_ASSIGN_OR_RETURN(std::vector<format::Extent> es, maps_->Overlapping(c, 0, 1));
  if (es.empty()) return Status::Corruption(fmt::format("symlink {} has no target block", ino));
  std::string out(c.size, '\0');
  WALFS_RETURN_IF_ERROR(device_->Read(es.front().disk_block * sb_.block_size, out.data(), out.size()));
  return out;
}

Status Filesystem::Unlink(std::uint64_t parent, std::string_view name) { return RemoveName(parent, name, false); }
Status Filesystem::Rmdir(std::uint64_t parent, std::string_view name) { return RemoveName(parent, name, true); }

Status Filesystem::RemoveName(std::uint64_t parent, std::string_view name, bool dir) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  if (name == ".") return Errno(EINVAL, "rmdir of \".\"");
  if (name == "..") return Errno(ENOTEMPTY, "rmdir of \"..\"");
  WALFS_ASSIGN_OR_RETURN(InodeRef dp, Iget(parent));
  for (int attempt = 0;; ++attempt) {
    std::optional<DirTarget> t;
    {
      std::shared_lock l(dp->rw);
      const InodeCore dc = dp->Core();
      if (!IsDir(dc)) return Errno(ENOTDIR, "not a directory");
      WALFS_ASSIGN_OR_RETURN(t, dirs_->Lookup(dc, name));
    }
    if (!t) return Errno(ENOENT, fmt::format("no \"{}\"", name));
    WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(t->ino));
    InodeLocks locks({dp, ip});
    InodeCore dc = dp->Core();
    // The name may have moved while nothing was locked: look again.
    WALFS_ASSIGN_OR_RETURN(std::optional<DirTarget> again, dirs_->Lookup(dc, name));
    if (!again || again->ino != t->ino) continue;
    InodeCore c = ip->Core();
    if (dir && !IsDir(c)) return Errno(ENOTDIR, "not a directory");
    if (!dir && IsDir(c)) return Errno(EISDIR, "is a directory");
    if (dir) {
      WALFS_ASSIGN_OR_RETURN(bool empty, dirs_->Empty(c));
      if (!empty) return Errno(ENOTEMPTY, "directory not empty");
    }
    Op op(this);
    WALFS_RETURN_IF_ERROR(op.Begin(TransType::kRemove, 0));
    const format::Timestamp now = Now();
    c.nlink = dir ? 0 : c.nlink - std::min<std::uint32_t>(c.nlink, 1);
    c.ctime = now;
    StoreCore(ip, c);
    op.Dirty(ip);
    // The unlinked list first: its AG header is the first one this
    // transaction takes (a directory block it frees may be in a lower AG).
    if (c.nlink == 0) WALFS_RETURN_IF_ERROR(AddUnlinked(op, ip));
    WALFS_RETURN_IF_ERROR(dirs_->Remove(op.tx(), &dc, name));
    if (dir) dc.nlink -= 1;
    dc.mtime = dc.ctime = now;
    StoreCore(dp, dc);
    op.Dirty(dp);
    WALFS_RETURN_IF_ERROR(op.Commit().status());
    counters_.removes.fetch_add(1, std::memory_order_relaxed);
    if (c.nlink == 0 && icache_->Unused(ip)) {
      locks.Release();  // Inactivate takes the inode's lock itself
      WALFS_RETURN_IF_ERROR(Inactivate(ip));
      const std::uint64_t ino = ip->ino;
      ip.reset();
      icache_->Evict(ino);
    }
    return Status::Ok();
  }
}

Result<struct stat> Filesystem::Link(std::uint64_t ino, std::uint64_t new_parent, std::string_view new_name) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  WALFS_RETURN_IF_ERROR(CheckName(new_name));
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  WALFS_ASSIGN_OR_RETURN(InodeRef dp, Iget(new_parent));
  {
    InodeLocks locks({ip, dp});
    InodeCore c = ip->Core();
    InodeCore dc = dp->Core();
    if (!IsDir(dc)) return Errno(ENOTDIR, "not a directory");
    if (dc.nlink == 0) return Errno(ENOENT, "directory was removed");
    if (IsDir(c)) return Errno(EPERM, "hard link to a directory");
    const bool first_name = c.nlink == 0;  // an O_TMPFILE inode's
    if (first_name && !ip->linkable.load()) return Errno(ENOENT, "file was removed");
    if (c.nlink >= kMaxLinks) return Errno(EMLINK, "too many links");
    WALFS_ASSIGN_OR_RETURN(std::optional<DirTarget> exists, dirs_->Lookup(dc, new_name));
    if (exists) return Errno(EEXIST, fmt::format("\"{}\" exists", new_name));
    Op op(this);
    WALFS_RETURN_IF_ERROR(op.Begin(TransType::kLink, 2 * 3 + 1));
    const format::Timestamp now = Now();
    if (first_name) {
      // Off the unlinked list first, as xfs_link does for a tmpfile: its AG
      // header is then held before any block the new name may take.
      WALFS_RETURN_IF_ERROR(RemoveUnlinked(op, ip));
      c = ip->Core();
    }
    WALFS_RETURN_IF_ERROR(dirs_->Add(op.tx(), &dc, new_name, DirTarget{ino, DirentType(c.mode)}));
    dc.mtime = dc.ctime = now;
    StoreCore(dp, dc);
    op.Dirty(dp);
    c.nlink += 1;
    c.ctime = now;
    StoreCore(ip, c);
    op.Dirty(ip);
    WALFS_RETURN_IF_ERROR(op.Commit().status());
    if (first_name) ip->linkable.store(false);
  }
  icache_->AddLookup(ip);
  return StatOf(ip->Core());
}

Result<struct stat> Filesystem::TmpFile(const Caller& c, std::uint64_t parent, std::uint32_t mode) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  WALFS_ASSIGN_OR_RETURN(InodeRef dp, Iget(parent));
  InodeRef ip;
  {
    InodeLocks locks({dp});
    const InodeCore dc = dp->Core();
    if (!IsDir(dc)) return Errno(ENOTDIR, "not a directory");
    if (dc.nlink == 0) return Errno(ENOENT, "directory was removed");
    // The umask, or the directory's default ACL, as for any create.
    WALFS_ASSIGN_OR_RETURN(const NewInodeAcls acls, NewInodeAclsLocked(c, parent, dc, S_IFREG | (mode & 07777)));
    WALFS_ASSIGN_OR_RETURN(ip, CreateUnlinked(c, dp, acls.mode, 0, &acls));
  }
  ip->linkable.store(true);
  counters_.creates.fetch_add(1, std::memory_order_relaxed);
  icache_->AddLookup(ip);
  return StatOf(ip->Core());
}

Status Filesystem::Rename(std::uint64_t parent, std::string_view name, std::uint64_t new_parent,
                          std::string_view new_name, std::uint32_t flags, const Caller& caller) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) return Errno(EINVAL, "unknown rename flags");
  if ((flags & RENAME_EXCHANGE) && (flags & (RENAME_NOREPLACE | RENAME_WHITEOUT)))
    return Errno(EINVAL, "EXCHANGE with NOREPLACE or WHITEOUT");
  WALFS_RETURN_IF_ERROR(CheckName(name));
  WALFS_RETURN_IF_ERROR(CheckName(new_name));
  WALFS_ASSIGN_OR_RETURN(InodeRef sp, Iget(parent));
  WALFS_ASSIGN_OR_RETURN(InodeRef dp, Iget(new_parent));
  for (;;) {
    std::optional<DirTarget> src, dst;
    {
      InodeLocks locks({sp, dp});
      const InodeCore sc = sp->Core(), dc = dp->Core();
      if (!IsDir(sc) || !IsDir(dc)) return Errno(ENOTDIR, "not a directory");
      WALFS_ASSIGN_OR_RETURN(src, dirs_->Lookup(sc, name));
      WALFS_ASSIGN_OR_RETURN(dst, dirs_->Lookup(dc, new_name));
    }
    if (!src) return Errno(ENOENT, fmt::format("no \"{}\"", name));
    WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(src->ino));
    InodeRef tp;
    if (dst) {
      WALFS_ASSIGN_OR_RETURN(tp, Iget(dst->ino));
    }
    std::vector<InodeRef> all{sp, dp, ip};
    if (tp) all.push_back(tp);
    // A directory moving to another parent: no other such rename may run,
    // so the ancestry checked below cannot change (the VFS's rename lock).
    static std::mutex cross_dir_mu;
    std::unique_lock<std::mutex> cross(cross_dir_mu, std::defer_lock);
    if (sp != dp) cross.lock();
    InodeLocks locks(all);
    {
      const InodeCore sc = sp->Core(), dc = dp->Core();
      WALFS_ASSIGN_OR_RETURN(std::optional<DirTarget> src2, dirs_->Lookup(sc, name));
      WALFS_ASSIGN_OR_RETURN(std::optional<DirTarget> dst2, dirs_->Lookup(dc, new_name));
      const bool same = src2 && src2->ino == src->ino &&
                        (dst2 ? dst && dst2->ino == dst->ino : !dst);
      if (!same) continue;  // raced a change: resolve again
    }
    // The whiteout is made first, in a transaction of its own, and only
    // linked by the rename's (XFS's xfs_rename_alloc_whiteout): the name
    // change stays one transaction, and a crash between the two leaves an
    // unlinked inode that the next mount frees.
    InodeRef wip;
    if (flags & RENAME_WHITEOUT) {
      WALFS_ASSIGN_OR_RETURN(wip, CreateUnlinked(caller, sp, S_IFCHR, 0));
    }
    Status st;
    {
      Op op(this);
      st = RenameLocked(op, sp, name, dp, new_name, flags, wip);
    }
    if (wip && wip->Core().nlink == 0) {  // the rename failed or had nothing to do
      locks.Release();
      // If this fails too, the next mount frees it from the unlinked list.
      Status freed = Inactivate(wip);
      if (st.ok()) st = freed;
    }
    return st;
  }
}

Result<InodeRef> Filesystem::CreateUnlinked(const Caller& c, const InodeRef& dp, std::uint32_t mode,
                                            std::uint32_t rdev, const NewInodeAcls* acls) {
  const InodeCore dc = dp->Core();
  const bool inherits = acls != nullptr && acls->any();
  Op op(this);
  WALFS_RETURN_IF_ERROR(
      op.Begin(inherits ? TransType::kCreateAcl : TransType::kCreate, sb_.blocks_per_chunk() + (inherits ? 1 : 0)));
  const format::Timestamp now = Now();
  InodeCore n;
  n.mode = static_cast<std::uint16_t>(mode);
  n.uid = c.uid;
  n.gid = (dc.mode & S_ISGID) ? dc.gid : c.gid;
  n.nlink = 0;
  n.atime = n.mtime = n.ctime = n.crtime = now;
  n.literal.assign(format::kLiteralSize, '\0');
  n.rdev = rdev;
  n.ino = 1;  // Pick sets it; non-zero keeps the inode "in use" for the checks
  if (S_ISREG(mode))
    FileMap::InitEmpty(&n);
  else
    n.format = ForkFormat::kNone;
  WALFS_RETURN_IF_ERROR(ialloc_->Pick(op.tx(), ialloc_->AgOf(dp->ino), &n).status());  // sets n.ino
  // Unseen by anyone yet: no lock needed.
  if (inherits) WALFS_RETURN_IF_ERROR(InheritAclsLocked(op, n.ino, &n, *acls));
  InodeRef ip = icache_->Insert(n);
  op.Dirty(ip);
  // Its AG header is held already (Pick took it), so the order holds.
  WALFS_RETURN_IF_ERROR(AddUnlinked(op, ip));
  WALFS_RETURN_IF_ERROR(op.Commit().status());
  return ip;
}

Status Filesystem::RenameLocked(Op& op, const InodeRef& sp, std::string_view name, const InodeRef& dp,
                                std::string_view new_name, std::uint32_t flags, const InodeRef& wip) {
  InodeCore sc = sp->Core();
  WALFS_ASSIGN_OR_RETURN(std::optional<DirTarget> src, dirs_->Lookup(sc, name));
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(src->ino));
  std::optional<DirTarget> dst;
  {
    const InodeCore dc = dp->Core();
    WALFS_ASSIGN_OR_RETURN(dst, dirs_->Lookup(dc, new_name));
  }
  InodeRef tp;
  if (dst) {
    WALFS_ASSIGN_OR_RETURN(tp, Iget(dst->ino));
  }
  if (tp && tp->ino == ip->ino) return Status::Ok();  // two names of one file: nothing to do
  if ((flags & RENAME_NOREPLACE) && tp) return Errno(EEXIST, fmt::format("\"{}\" exists", new_name));
  if ((flags & RENAME_EXCHANGE) && !tp) return Errno(ENOENT, fmt::format("no \"{}\"", new_name));
  InodeCore c = ip->Core();
  const bool src_dir = IsDir(c);
  const bool exchange = flags & RENAME_EXCHANGE;
  InodeCore tc;
  if (tp) tc = tp->Core();
  const bool dst_dir = tp && IsDir(tc);
  if (!exchange && tp) {
    if (src_dir && !dst_dir) return Errno(ENOTDIR, "renaming a directory over a non-directory");
    if (!src_dir && dst_dir) return Errno(EISDIR, "renaming a non-directory over a directory");
    if (dst_dir) {
      WALFS_ASSIGN_OR_RETURN(bool empty, dirs_->Empty(tc));
      if (!empty) return Errno(ENOTEMPTY, "target directory not empty");
    }
  }
  // A directory may not move below itself.
  if (sp != dp) {
    auto below = [&](const InodeRef& moving, std::uint64_t start) -> Result<bool> {
      std::uint64_t at = start;
      for (int depth = 0; depth < 4096 && at != sb_.root_ino; ++depth) {
        if (at == moving->ino) return true;
        WALFS_ASSIGN_OR_RETURN(InodeRef p, Iget(at));
        at = dirs_->Parent(p->Core());
      }
      return at == moving->ino;
    };
    if (src_dir) {
      WALFS_ASSIGN_OR_RETURN(bool loop, below(ip, dp->ino));
      if (loop) return Errno(EINVAL, "moving a directory below itself");
    }
    if (exchange && dst_dir) {
      WALFS_ASSIGN_OR_RETURN(bool loop, below(tp, sp->ino));
      if (loop) return Errno(EINVAL, "moving a directory below itself");
    }
    const InodeCore dc = dp->Core();
    if (src_dir && !dst_dir && dc.nlink >= kMaxLinks) return Errno(EMLINK, "too many subdirectories");
  }

  // A full filesystem still renames where no block is needed: without a
  // reservation the new name may only use the room its directory has, and
  // is ENOSPC where it would need a block (xfs_rename retries with no block
  // reservation; xfs_dir_canenter).  A replaced name needs none.  That
  // ENOSPC comes before anything changes -- the new name's insert is the
  // first change when there is no target -- except after a whiteout's
  // unlinked-list change, so a whiteout rename keeps its reservation.
  constexpr std::uint64_t kRenameBlocks = 2 * (2 * 3 + 1);  // two directory inserts split to the root
  bool may_allocate = true;
  Status begun = op.Begin(TransType::kRename, kRenameBlocks);
  if (!begun.ok() && begun.ToErrno() == ENOSPC && !wip) {
    may_allocate = false;
    begun = op.Begin(TransType::kRename, 0);
  }
  WALFS_RETURN_IF_ERROR(begun);
  const format::Timestamp now = Now();
  const bool same_dir = sp == dp;
  // The unlinked lists first, their AG headers in ascending order: the
  // target losing its last link goes on its list, the whiteout comes off
  // its own.  (The rename's log reservation covers the whiteout: it adds
  // two inodes at most -- itself and its predecessor on the list -- and an
  // AG header, and its source entry is a replace, one leaf path that never
  // splits, where the reservation allows a second insert split to the root.)
  bool target_unlinked = false;
  if (tp && !exchange) {
    tc.nlink = dst_dir ? 0 : tc.nlink - std::min<std::uint32_t>(tc.nlink, 1);
    tc.ctime = now;
    StoreCore(tp, tc);
    op.Dirty(tp);
    target_unlinked = tc.nlink == 0;
  }
  const bool target_first = target_unlinked && wip && ialloc_->AgOf(tp->ino) < ialloc_->AgOf(wip->ino);
  if (target_first) WALFS_RETURN_IF_ERROR(AddUnlinked(op, tp));
  if (wip) {
    WALFS_RETURN_IF_ERROR(RemoveUnlinked(op, wip));
    InodeCore w = wip->Core();
    w.nlink = 1;
    w.ctime = now;
    StoreCore(wip, w);
    op.Dirty(wip);
  }
  if (target_unlinked && !target_first) WALFS_RETURN_IF_ERROR(AddUnlinked(op, tp));
  InodeCore dc = same_dir ? sc : dp->Core();
  InodeCore* d = same_dir ? &sc : &dc;
  if (exchange) {
    WALFS_RETURN_IF_ERROR(dirs_->Replace(op.tx(), &sc, name, DirTarget{tp->ino, DirentType(tc.mode)}));
    WALFS_RETURN_IF_ERROR(dirs_->Replace(op.tx(), d, new_name, DirTarget{ip->ino, DirentType(c.mode)}));
    if (!same_dir) {
      if (src_dir) dirs_->SetParent(&c, dp->ino);
      if (dst_dir) dirs_->SetParent(&tc, sp->ino);
      if (src_dir != dst_dir) {
        if (src_dir) { sc.nlink -= 1; dc.nlink += 1; } else { sc.nlink += 1; dc.nlink -= 1; }
      }
    }
    tc.ctime = now;
    StoreCore(tp, tc);
    op.Dirty(tp);
  } else {
    // In an inline directory the old name's room is free at once: removing
    // it changes only the copy in hand (nothing is logged before the
    // commit), so the new name may use it.
    const bool remove_first = same_dir && !wip && sc.format == ForkFormat::kLocal;
    if (remove_first) WALFS_RETURN_IF_ERROR(dirs_->Remove(op.tx(), &sc, name));
    if (tp)
      WALFS_RETURN_IF_ERROR(dirs_->Replace(op.tx(), d, new_name, DirTarget{ip->ino, DirentType(c.mode)}));
    else
      WALFS_RETURN_IF_ERROR(dirs_->Add(op.tx(), d, new_name, DirTarget{ip->ino, DirentType(c.mode)}, may_allocate));
    if (wip)
      WALFS_RETURN_IF_ERROR(dirs_->Replace(op.tx(), &sc, name, DirTarget{wip->ino, DT_CHR}));
    else if (!remove_first)
      WALFS_RETURN_IF_ERROR(dirs_->Remove(op.tx(), &sc, name));
    // Link counts of the parents: a directory's ".." moves with it, and a
    // replaced directory's goes away.
    if (src_dir) {
      if (!same_dir) {
        dirs_->SetParent(&c, dp->ino);
        sc.nlink -= 1;
        if (!dst_dir) dc.nlink += 1;
      } else if (dst_dir) {
        sc.nlink -= 1;
      }
    }
  }
  c.ctime = now;
  StoreCore(ip, c);
  op.Dirty(ip);
  sc.mtime = sc.ctime = now;
  StoreCore(sp, sc);
  op.Dirty(sp);
  if (!same_dir) {
    dc.mtime = dc.ctime = now;
    StoreCore(dp, dc);
    op.Dirty(dp);
  }
  WALFS_RETURN_IF_ERROR(op.Commit().status());
  counters_.renames.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status Filesystem::ReadDir(std::uint64_t ino, std::uint64_t offset,
                           const std::function<bool(std::string_view, std::uint64_t, std::uint32_t,
                                                    std::uint64_t)>& fn) {
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  std::shared_lock l(ip->rw);
  const InodeCore c = ip->Core();
  if (!IsDir(c)) return Errno(ENOTDIR, "not a directory");
  if (offset == 0 && !fn(".", ino, DT_DIR, 1)) return Status::Ok();
  if (offset <= 1 && !fn("..", dirs_->Parent(c), DT_DIR, 2)) return Status::Ok();
  return dirs_->List(c, std::max<std::uint64_t>(offset, 3),
                     [&](std::uint64_t key, std::string_view name, DirTarget t) {
                       return fn(name, t.ino, t.ftype, key + 1);
                     });
}
}  // namespace walfs::fs
