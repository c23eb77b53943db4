// Extended attributes: a B+tree per inode (the xattr fork, its root in the
// last bytes of the literal area), keyed like directory entries by the
// name's hash and a collision index; each value is namelen u8, name, value.
#include <sys/xattr.h>

#include <fmt/format.h>

#include "fs/filesystem.h"
#include "fs/fs_op.h"

namespace walfs::fs {

using format::InodeCore;
using journal::TransType;

namespace {
constexpr std::uint64_t kIndexMask = 0xffff;
Status Errno(int err, std::string_view what) { return Status::FromErrno(err, what); }

bool HasXattrs(const InodeCore& c) { return c.aformat == format::ForkFormat::kBtree; }

std::string Encode(std::string_view name, std::string_view value) {
  std::string v;
  v.push_back(static_cast<char>(name.size()));
  v.append(name);
  v.append(value);
  return v;
}

Status Decode(std::string_view v, std::string_view* name, std::string_view* value) {
  if (v.empty() || v.size() < 1 + static_cast<std::uint8_t>(v[0]))
    return Status::Corruption(fmt::format("xattr record of {} bytes", v.size()));
  const std::size_t n = static_cast<std::uint8_t>(v[0]);
  *name = v.substr(1, n);
  *value = v.substr(1 + n);
  return Status::Ok();
}

struct Found {
  std::optional<std::uint64_t> key;  // the name's record
  std::string value;
  std::uint64_t free_key = 0;  // the lowest unused key for the name's hash
};
}  // namespace

Btree Filesystem::XattrTree(std::uint64_t ino) const {
  return Btree({.cache = cache_.get(), .alloc = alloc_.get(), .sb = &sb_, .type = format::BlockType::kXattr,
                .owner = ino, .goal = ino / sb_.inodes_per_block(), .max_levels = 3});
}

static Result<Found> FindXattr(const Btree& tree, const InodeCore& c, std::string_view name) {
  Found f;
  const std::uint64_t h = DirHashKey(name);
  f.free_key = h;
  if (!HasXattrs(c)) return f;
  Status bad;
  WALFS_RETURN_IF_ERROR(tree.Scan(GetForkRoot(c.literal, kXattrForkOffset), h, [&](std::uint64_t key, std::string_view v) {
    if ((key & ~kIndexMask) != h) return false;
    std::string_view n, val;
    bad = Decode(v, &n, &val);
    if (!bad.ok()) return false;
    if (n == name) {
      f.key = key;
      f.value.assign(val);
      return false;
    }
    if (key == f.free_key) ++f.free_key;
    return true;
  }));
  WALFS_RETURN_IF_ERROR(bad);
  return f;
}

Result<std::string> Filesystem::GetXattr(std::uint64_t ino, std::string_view name) {
  if (name.empty() || name.size() > XATTR_NAME_MAX) return Errno(ERANGE, "xattr name length");
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  std::shared_lock l(ip->rw);
  WALFS_ASSIGN_OR_RETURN(Found f, FindXattr(XattrTree(ino), ip->Core(), name));
  if (!f.key) return Errno(ENODATA, fmt::format("no xattr \"{}\"", name));
  return f.value;
}

Status Filesystem::SetXattr(std::uint64_t ino, std::string_view name, std::string_view value, int flags) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  if (name.empty() || name.size() > XATTR_NAME_MAX) return Errno(ERANGE, "xattr name length");
  if (1 + name.size() + value.size() > Btree::MaxValueSize(sb_.block_size))
    return Errno(E2BIG, fmt::format("xattr values are limited to {} bytes with this name",
                                    Btree::MaxValueSize(sb_.block_size) - 1 - name.size()));
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  std::unique_lock l(ip->rw);
  InodeCore c = ip->Core();
  const Btree tree = XattrTree(ino);
  WALFS_ASSIGN_OR_RETURN(Found f, FindXattr(tree, c, name));
  if ((flags & XATTR_CREATE) && f.key) return Errno(EEXIST, fmt::format("xattr \"{}\" exists", name));
  if ((flags & XATTR_REPLACE) && !f.key) return Errno(ENODATA, fmt::format("no xattr \"{}\"", name));
  if (!f.key && (f.free_key & ~kIndexMask) != DirHashKey(name)) return Errno(ENOSPC, "too many xattr names share a hash");
  Op op(this);
  WALFS_RETURN_IF_ERROR(op.Begin(TransType::kXattr, 2 * 3 + 1));
  BtreeRoot root = HasXattrs(c) ? GetForkRoot(c.literal, kXattrForkOffset) : BtreeRoot{};
  Btree t = tree;
  if (f.key)
    WALFS_RETURN_IF_ERROR(t.Replace(op.tx(), &root, *f.key, Encode(name, value)));
  else
    WALFS_RETURN_IF_ERROR(t.Insert(op.tx(), &root, f.free_key, Encode(name, value)));
  c.aformat = format::ForkFormat::kBtree;
  c.fork_off = kXattrForkOffset;
  PutForkRoot(&c.literal, kXattrForkOffset, root);
  c.ctime = Now();
  StoreCore(ip, c);
  op.Dirty(ip);
  return op.Commit().status();
}

Result<std::vector<std::string>> Filesystem::ListXattr(std::uint64_t ino) {
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  std::shared_lock l(ip->rw);
  const InodeCore c = ip->Core();
  std::vector<std::string> names;
  if (!HasXattrs(c)) return names;
  Status bad;
  WALFS_RETURN_IF_ERROR(XattrTree(ino).Scan(GetForkRoot(c.literal, kXattrForkOffset), 0,
                                            [&](std::uint64_t, std::string_view v) {
    std::string_view n, val;
    bad = Decode(v, &n, &val);
    if (!bad.ok()) return false;
    names.emplace_back(n);
    return true;
  }));
  WALFS_RETURN_IF_ERROR(bad);
  return names;
}

Status Filesystem::RemoveXattr(std::uint64_t ino, std::string_view name) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  if (name.empty() || name.size() > XATTR_NAME_MAX) return Errno(ERANGE, "xattr name length");
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  std::unique_lock l(ip->rw);
  InodeCore c = ip->Core();
  Btree tree = XattrTree(ino);
  WALFS_ASSIGN_OR_RETURN(Found f, FindXattr(tree, c, name));
  if (!f.key) return Errno(ENODATA, fmt::format("no xattr \"{}\"", name));
  Op op(this);
  WALFS_RETURN_IF_ERROR(op.Begin(TransType::kXattr, 0));
  BtreeRoot root = GetForkRoot(c.literal, kXattrForkOffset);
  WALFS_RETURN_IF_ERROR(tree.Erase(op.tx(), &root, *f.key));
  PutForkRoot(&c.literal, kXattrForkOffset, root);
  if (root.empty()) {
    c.aformat = format::ForkFormat::kNone;
    c.fork_off = 0;
  }
  c.ctime = Now();
  StoreCore(ip, c);
  op.Dirty(ip);
  return op.Commit().status();
}

Status Filesystem::DestroyXattrs(const InodeRef& ip) {
  for (;;) {
    InodeCore c = ip->Core();
    if (!HasXattrs(c)) return Status::Ok();
    Op op(this);
    WALFS_RETURN_IF_ERROR(op.Begin(TransType::kXattr, 0));
    BtreeRoot root = GetForkRoot(c.literal, kXattrForkOffset);
    WALFS_ASSIGN_OR_RETURN(bool done, XattrTree(ip->ino).DestroySome(op.tx(), &root, 8));
    PutForkRoot(&c.literal, kXattrForkOffset, root);
    if (done) {
      c.aformat = format::ForkFormat::kNone;
      c.fork_off = 0;
    }
    StoreCore(ip, c);
    op.Dirty(ip);
    WALFS_RETURN_IF_ERROR(op.Commit().status());
  }
}

}  // namespace walfs::fs
