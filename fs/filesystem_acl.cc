// POSIX ACLs on a mounted filesystem: the system.posix_acl_* xattrs kept in
// step with the mode, and inherited by new inodes (fs/posix_acl.h has the
// encoding and the rules; docs/fs.md, "POSIX ACLs", the design).
//
// Every change is one logged transaction step: an ACL and the mode it
// implies commit together, a chmod rewrites the ACL in the step that
// changes the mode, and a new inode's inherited ACLs go in its create
// step, so a crash never leaves a file whose ACL and mode disagree or a
// new file without the ACL its directory gave it.
#include <sys/stat.h>
#include <sys/xattr.h>

#include <fmt/format.h>

#include "fs/btree.h"
#include "fs/filesystem.h"
#include "fs/fs_op.h"
#include "fs/posix_acl.h"
#include "journal/reservation.h"

namespace walfs::fs {

using format::InodeCore;
using journal::TransType;

namespace {

// The largest ACL value an inode can inherit: one B+tree record with its
// name, so that a new directory's two ACLs fit the one leaf the create
// step reserves (journal/reservation.cc, kCreate and kMkdir).
std::size_t MaxInheritedAclBytes(std::uint32_t block_size) {
  return Btree::MaxValueSize(block_size) - (1 + kAclDefaultXattr.size() + 4);
}

Result<Acl> DecodeStored(std::uint64_t ino, std::string_view name, std::string_view value) {
  Result<Acl> acl = DecodeAcl(value);
  if (!acl.ok())
    return Status::Corruption(fmt::format("inode {}: stored {}: {}", ino, name, acl.status().message()));
  return acl;
}
}  // namespace

Status Filesystem::SetAcl(std::uint64_t ino, std::string_view name, std::string_view value, int flags,
                          const Caller& caller) {
  WALFS_ASSIGN_OR_RETURN(Acl acl, DecodeAcl(value));
  const bool is_default = name == kAclDefaultXattr;
  const std::string encoded = EncodeAcl(acl);
  WALFS_RETURN_IF_ERROR(CheckXattrSize(encoded));
  if (is_default && encoded.size() > MaxInheritedAclBytes(sb_.block_size))
    return Errno(ENOSPC, fmt::format("default ACLs are limited to {} entries on this filesystem",
                                     (MaxInheritedAclBytes(sb_.block_size) - kAclHeaderSize) / kAclEntrySize));
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  std::unique_lock l(ip->rw);
  InodeCore c = ip->Core();
  if (is_default && !S_ISDIR(c.mode)) return Errno(EACCES, "a default ACL on a non-directory");
  WALFS_ASSIGN_OR_RETURN(bool exists, HasXattrLocked(ino, c, name));
  if ((flags & XATTR_CREATE) && exists) return Errno(EEXIST, fmt::format("xattr \"{}\" exists", name));
  if ((flags & XATTR_REPLACE) && !exists) return Errno(ENODATA, fmt::format("no xattr \"{}\"", name));
  Op op(this);
  WALFS_RETURN_IF_ERROR(op.Begin(TransType::kXattr, XattrBlocks(encoded.size())));
  bool store = true;
  if (!is_default) {
    std::uint32_t mode = c.mode;
    store = UpdateModeFromAcl(acl, &mode);
    // Only a member of the file's group (or root) keeps it setgid.
    if ((mode & S_ISGID) && caller.uid != 0 && !caller.InGroup(c.gid)) mode &= ~std::uint32_t{S_ISGID};
    c.mode = static_cast<std::uint16_t>(mode);
  }
  if (store)
    WALFS_RETURN_IF_ERROR(PutXattrLocked(op, ino, &c, name, encoded));
  else
    WALFS_RETURN_IF_ERROR(DropXattrLocked(op, ino, &c, name).status());
  c.ctime = Now();
  StoreCore(ip, c);
  op.Dirty(ip);
  return op.Commit().status();
}

Result<bool> Filesystem::HasAccessAclLocked(std::uint64_t ino, const InodeCore& c) {
  if (c.aformat == format::ForkFormat::kNone) return false;
  return HasXattrLocked(ino, c, kAclAccessXattr);
}

Status Filesystem::ChmodAclLocked(Op& op, std::uint64_t ino, InodeCore* c) {
  if (c->aformat == format::ForkFormat::kNone) return Status::Ok();
  WALFS_ASSIGN_OR_RETURN(std::optional<std::string> v, GetXattrLocked(ino, *c, kAclAccessXattr));
  if (!v) return Status::Ok();
  WALFS_ASSIGN_OR_RETURN(Acl acl, DecodeStored(ino, kAclAccessXattr, *v));
  ChmodAcl(&acl, c->mode);
  return PutXattrLocked(op, ino, c, kAclAccessXattr, EncodeAcl(acl));
}

Result<Filesystem::NewInodeAcls> Filesystem::NewInodeAclsLocked(const Caller& caller, std::uint64_t dir,
                                                                const InodeCore& dc, std::uint32_t mode) {
  NewInodeAcls out;
  out.mode = mode;
  if (S_ISLNK(mode)) return out;  // symlinks have no ACLs; their mode is 0777
  std::optional<std::string> v;
  if (dc.aformat != format::ForkFormat::kNone) {
    WALFS_ASSIGN_OR_RETURN(v, GetXattrLocked(dir, dc, kAclDefaultXattr));
  }
  if (!v) {
    out.mode = mode & ~(caller.umask & 0777);
    return out;
  }
  WALFS_ASSIGN_OR_RETURN(Acl parent_default, DecodeStored(dir, kAclDefaultXattr, *v));
  const InheritedAcl inh = InheritAcl(parent_default, mode);
  out.mode = inh.mode;
  if (inh.access) out.access = EncodeAcl(*inh.access);
  if (inh.default_acl) out.default_acl = EncodeAcl(*inh.default_acl);
  // Only a default ACL stored before walfs limited them can be larger.
  for (const std::optional<std::string>* a : {&out.access, &out.default_acl})
    if (*a && (*a)->size() > MaxInheritedAclBytes(sb_.block_size))
      return Errno(ENOSPC, fmt::format("directory {}'s default ACL is too large to inherit", dir));
  return out;
}

Status Filesystem::InheritAclsLocked(Op& op, std::uint64_t ino, InodeCore* c, const NewInodeAcls& acls) {
  if (acls.access) WALFS_RETURN_IF_ERROR(PutXattrLocked(op, ino, c, kAclAccessXattr, *acls.access));
  if (acls.default_acl) WALFS_RETURN_IF_ERROR(PutXattrLocked(op, ino, c, kAclDefaultXattr, *acls.default_acl));
  return Status::Ok();
}

}  // namespace walfs::fs
