// Filesystem::RepairDropEntry and RepairReconnect: the repairs fsck.walfs -y
// makes through a mount of the image (fs/fsck.cc, docs/fs.md "Repairs
// through a mount"), after its own repairs have made the allocation maps
// agree with the inodes, so that the filesystem's code may allocate and
// free.  fsck is the mount's only user: each repair takes its inodes' locks
// in ascending order all the same.
#include <sys/stat.h>

#include <cerrno>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "fs/filesystem.h"
#include "fs/fs_op.h"

namespace walfs::fs {

using format::InodeCore;
using journal::TransType;

Status Filesystem::RepairDropEntry(std::uint64_t parent, std::string_view name) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  WALFS_ASSIGN_OR_RETURN(InodeRef dp, Iget(parent));
  std::unique_lock l(dp->rw);
  InodeCore dc = dp->Core();
  if (!S_ISDIR(dc.mode)) return Status::FromErrno(ENOTDIR, fmt::format("inode {} is not a directory", parent));
  WALFS_ASSIGN_OR_RETURN(std::optional<DirTarget> t, dirs_->Lookup(dc, name));
  if (!t) return Status::FromErrno(ENOENT, fmt::format("directory {} holds no \"{}\"", parent, name));
  Op op(this);
  WALFS_RETURN_IF_ERROR(op.Begin(TransType::kRemove, 0, /*freeing=*/true));
  WALFS_RETURN_IF_ERROR(dirs_->Remove(op.tx(), &dc, name));
  dc.mtime = dc.ctime = Now();
  StoreCore(dp, dc);
  op.Dirty(dp);
  return op.Commit().status();
}

Result<std::string> Filesystem::RepairReconnect(std::uint64_t ino) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  std::uint64_t lost = 0;
  if (Result<struct stat> st = Lookup(root(), "lost+found"); st.ok()) {
    if (!S_ISDIR(st->st_mode))
      return Status::FromErrno(ENOTDIR, "/lost+found is not a directory: nowhere to reconnect inodes");
    lost = st->st_ino;
  } else {
    WALFS_ASSIGN_OR_RETURN(struct stat made, Mkdir({}, root(), "lost+found", 0700));
    lost = made.st_ino;
  }
  Forget(lost, 1);  // Lookup and Mkdir counted a kernel reference
  if (ino == lost || ino == root()) return Status::InvalidArgument(fmt::format("inode {} cannot be reconnected", ino));
  const std::string name = fmt::format("#{}", ino);
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  WALFS_ASSIGN_OR_RETURN(InodeRef dp, Iget(lost));
  std::unique_lock first(ino < lost ? ip->rw : dp->rw);
  std::unique_lock second(ino < lost ? dp->rw : ip->rw);
  InodeCore c = ip->Core();
  InodeCore dc = dp->Core();
  if (c.free()) return Status::InvalidArgument(fmt::format("inode {} is free", ino));
  WALFS_ASSIGN_OR_RETURN(std::optional<DirTarget> exists, dirs_->Lookup(dc, name));
  if (exists) return Status::FromErrno(EEXIST, fmt::format("/lost+found/{} exists", name));
  Op op(this);
  WALFS_RETURN_IF_ERROR(op.Begin(TransType::kLink, 2 * 3 + 1));
  const format::Timestamp now = Now();
  WALFS_RETURN_IF_ERROR(dirs_->Add(op.tx(), &dc, name, DirTarget{ino, DirentType(c.mode)}));
  if (S_ISDIR(c.mode)) {
    dirs_->SetParent(&c, lost);
    dc.nlink += 1;  // its ".."
  }
  dc.mtime = dc.ctime = now;
  StoreCore(dp, dc);
  op.Dirty(dp);
  c.nlink = std::max<std::uint32_t>(c.nlink, 1);
  c.ctime = now;
  StoreCore(ip, c);
  op.Dirty(ip);
  WALFS_RETURN_IF_ERROR(op.Commit().status());
  return name;
}

}  // namespace walfs::fs
