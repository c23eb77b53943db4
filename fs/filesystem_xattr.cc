// Extended attributes: a B+tree per inode (the xattr fork, its root in the
// last bytes of the literal area), keyed by the name's hash like directory
// entries, with the low 16 bits split into a collision index (8 bits) and
// a chunk index (8 bits): a value longer than one record continues in the
// records after it.
//
//   chunk 0:  namelen u8, name, total value length u32, the value's first bytes
//   chunk i:  the value's next bytes
//
// Values up to journal::MaxXattrValue (16 blocks, at most 64 KiB) go in
// whole, in one transaction step.
#include <sys/xattr.h>

#include <linux/limits.h>

#include <fmt/format.h>

#include "base/coding.h"
#include "fs/filesystem.h"
#include "fs/fs_op.h"
#include "fs/posix_acl.h"
#include "journal/reservation.h"

namespace walfs::fs {

using format::InodeCore;
using journal::TransType;

namespace {
constexpr std::uint64_t kHashMask = ~std::uint64_t{0xffff};
constexpr std::uint32_t kMaxChunks = 256;

bool HasXattrs(const InodeCore& c) { return c.aformat == format::ForkFormat::kBtree; }
std::uint64_t KeyOf(std::uint64_t hash, std::uint32_t coll, std::uint32_t chunk) {
  return hash | (std::uint64_t{coll} << 8) | chunk;
}

// The records of one value.
std::vector<std::string> Encode(std::string_view name, std::string_view value, std::size_t max_record) {
  std::vector<std::string> out;
  std::string first;
  first.push_back(static_cast<char>(name.size()));
  first.append(name);
  PutFixed32(&first, static_cast<std::uint32_t>(value.size()));
  const std::size_t n0 = std::min(value.size(), max_record - first.size());
  first.append(value.substr(0, n0));
  out.push_back(std::move(first));
  for (std::size_t pos = n0; pos < value.size(); pos += max_record)
    out.emplace_back(value.substr(pos, max_record));
  return out;
}

struct Found {
  std::optional<std::uint32_t> coll;  // the name's collision index
  std::uint32_t chunks = 0;           // records it has
  std::string value;
  std::uint32_t free_coll = 0;        // the lowest unused collision index
};

Status DecodeFirst(std::string_view v, std::string_view* name, std::uint32_t* total, std::string_view* part) {
  if (v.empty()) return Status::Corruption("empty xattr record");
  const std::size_t n = static_cast<std::uint8_t>(v[0]);
  if (n == 0 || v.size() < 1 + n + 4) return Status::Corruption(fmt::format("xattr record of {} bytes", v.size()));
  *name = v.substr(1, n);
  *total = DecodeFixed32(v.data() + 1 + n);
  *part = v.substr(1 + n + 4);
  return Status::Ok();
}
}  // namespace

Btree Filesystem::XattrTree(std::uint64_t ino) const {
  return Btree({.cache = cache_.get(), .alloc = alloc_.get(), .sb = &sb_, .type = format::BlockType::kXattr,
                .owner = ino, .goal = ino / sb_.inodes_per_block(), .max_levels = 3});
}

// tx: the transaction that may already hold some of the tree's nodes.
static Result<Found> FindXattr(const Btree& tree, const InodeCore& c, std::string_view name,
                               const FsTransaction* tx = nullptr) {
  Found f;
  const std::uint64_t h = DirHashKey(name);
  if (!HasXattrs(c)) return f;
  Status bad;
  std::vector<bool> used(kMaxChunks, false);
  std::uint32_t total = 0;
  WALFS_RETURN_IF_ERROR(tree.Scan(GetForkRoot(c.literal, kXattrForkOffset), h, [&](std::uint64_t key, std::string_view v) {
    if ((key & kHashMask) != h) return false;
    const auto coll = static_cast<std::uint32_t>((key >> 8) & 0xff);
    const auto chunk = static_cast<std::uint32_t>(key & 0xff);
    if (f.coll) {
      if (coll != *f.coll) return false;  // past the value's records
      if (chunk != f.chunks) {
        bad = Status::Corruption(fmt::format("xattr \"{}\": chunk {} where {} was expected", name, chunk, f.chunks));
        return false;
      }
      f.value.append(v);
      ++f.chunks;
      return f.value.size() < total;
    }
    if (chunk != 0) return true;
    used[coll] = true;
    std::string_view n, part;
    bad = DecodeFirst(v, &n, &total, &part);
    if (!bad.ok()) return false;
    if (n != name) return true;
    f.coll = coll;
    f.chunks = 1;
    f.value.assign(part);
    return f.value.size() < total;
  }, tx));
  WALFS_RETURN_IF_ERROR(bad);
  if (f.coll && f.value.size() != total)
    return Status::Corruption(fmt::format("xattr \"{}\": {} of {} value bytes found", name, f.value.size(), total));
  while (f.free_coll < kMaxChunks && used[f.free_coll]) ++f.free_coll;
  return f;
}

Result<std::string> Filesystem::GetXattr(std::uint64_t ino, std::string_view name) {
  if (name.empty() || name.size() > XATTR_NAME_MAX) return Errno(ERANGE, "xattr name length");
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  std::shared_lock l(ip->rw);
  WALFS_ASSIGN_OR_RETURN(Found f, FindXattr(XattrTree(ino), ip->Core(), name));
  if (!f.coll) return Errno(ENODATA, fmt::format("no xattr \"{}\"", name));
  return f.value;
}

Status Filesystem::SetXattr(std::uint64_t ino, std::string_view name, std::string_view value, int flags,
                            const Caller& caller) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  if (name.empty() || name.size() > XATTR_NAME_MAX) return Errno(ERANGE, "xattr name length");
  if (IsAclXattr(name)) return SetAcl(ino, name, value, flags, caller);
  WALFS_RETURN_IF_ERROR(CheckXattrSize(value));
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  std::unique_lock l(ip->rw);
  InodeCore c = ip->Core();
  WALFS_ASSIGN_OR_RETURN(bool exists, HasXattrLocked(ino, c, name));
  if ((flags & XATTR_CREATE) && exists) return Errno(EEXIST, fmt::format("xattr \"{}\" exists", name));
  if ((flags & XATTR_REPLACE) && !exists) return Errno(ENODATA, fmt::format("no xattr \"{}\"", name));
  Op op(this);
  WALFS_RETURN_IF_ERROR(op.Begin(TransType::kXattr, XattrBlocks(value.size())));
  WALFS_RETURN_IF_ERROR(PutXattrLocked(op, ino, &c, name, value));
  c.ctime = Now();
  StoreCore(ip, c);
  op.Dirty(ip);
  return op.Commit().status();
}

Status Filesystem::CheckXattrSize(std::string_view value) const {
  const std::uint32_t max = journal::MaxXattrValue(static_cast<std::int32_t>(sb_.block_size));
  if (value.size() > max) return Errno(E2BIG, fmt::format("xattr values are limited to {} bytes on this filesystem", max));
  if (Encode("x", value, Btree::MaxValueSize(sb_.block_size)).size() > kMaxChunks)
    return Errno(E2BIG, "xattr value too large for this block size");
  return Status::Ok();
}

std::uint64_t Filesystem::XattrBlocks(std::size_t value_size) const {
  const std::size_t max_record = Btree::MaxValueSize(sb_.block_size);
  return 2 * ((value_size + XATTR_NAME_MAX + 5) / max_record + 1 + 3);
}

Result<bool> Filesystem::HasXattrLocked(std::uint64_t ino, const InodeCore& c, std::string_view name) {
  WALFS_ASSIGN_OR_RETURN(Found f, FindXattr(XattrTree(ino), c, name));
  return f.coll.has_value();
}

Result<std::optional<std::string>> Filesystem::GetXattrLocked(std::uint64_t ino, const InodeCore& c,
                                                              std::string_view name) {
  WALFS_ASSIGN_OR_RETURN(Found f, FindXattr(XattrTree(ino), c, name));
  if (!f.coll) return std::optional<std::string>();
  return std::optional<std::string>(std::move(f.value));
}

Status Filesystem::PutXattrLocked(Op& op, std::uint64_t ino, InodeCore* c, std::string_view name,
                                  std::string_view value) {
  const std::vector<std::string> records = Encode(name, value, Btree::MaxValueSize(sb_.block_size));
  if (records.size() > kMaxChunks) return Errno(E2BIG, "xattr value too large for this block size");
  const Btree tree = XattrTree(ino);
  WALFS_ASSIGN_OR_RETURN(Found f, FindXattr(tree, *c, name, op.tx()));
  if (!f.coll && f.free_coll >= kMaxChunks) return Errno(ENOSPC, "too many xattr names share a hash");
  const std::uint64_t h = DirHashKey(name);
  const std::uint32_t coll = f.coll ? *f.coll : f.free_coll;
  // One step for the whole value (the reservation covers 64 KiB): a crash
  // leaves the old value or the new one.
  BtreeRoot root = HasXattrs(*c) ? GetForkRoot(c->literal, kXattrForkOffset) : BtreeRoot{};
  Btree t = tree;
  std::uint32_t i = 0;
  for (; i < records.size(); ++i) {
    if (i < f.chunks)
      WALFS_RETURN_IF_ERROR(t.Replace(op.tx(), &root, KeyOf(h, coll, i), records[i]));
    else
      WALFS_RETURN_IF_ERROR(t.Insert(op.tx(), &root, KeyOf(h, coll, i), records[i]));
  }
  for (; i < f.chunks; ++i)  // a shorter value: drop the old tail
    WALFS_RETURN_IF_ERROR(t.Erase(op.tx(), &root, KeyOf(h, coll, i)));
  c->aformat = root.empty() ? format::ForkFormat::kNone : format::ForkFormat::kBtree;
  c->fork_off = root.empty() ? 0 : kXattrForkOffset;
  PutForkRoot(&c->literal, kXattrForkOffset, root);
  return Status::Ok();
}

Result<bool> Filesystem::DropXattrLocked(Op& op, std::uint64_t ino, InodeCore* c, std::string_view name) {
  Btree tree = XattrTree(ino);
  WALFS_ASSIGN_OR_RETURN(Found f, FindXattr(tree, *c, name, op.tx()));
  if (!f.coll) return false;
  const std::uint64_t h = DirHashKey(name);
  BtreeRoot root = GetForkRoot(c->literal, kXattrForkOffset);
  for (std::uint32_t i = 0; i < f.chunks; ++i)  // one step, as PutXattrLocked
    WALFS_RETURN_IF_ERROR(tree.Erase(op.tx(), &root, KeyOf(h, *f.coll, i)));
  PutForkRoot(&c->literal, kXattrForkOffset, root);
  if (root.empty()) {
    c->aformat = format::ForkFormat::kNone;
    c->fork_off = 0;
  }
  return true;
}

Result<std::vector<std::string>> Filesystem::ListXattr(std::uint64_t ino) {
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  std::shared_lock l(ip->rw);
  const InodeCore c = ip->Core();
  std::vector<std::string> names;
  if (!HasXattrs(c)) return names;
  Status bad;
  WALFS_RETURN_IF_ERROR(XattrTree(ino).Scan(GetForkRoot(c.literal, kXattrForkOffset), 0,
                                            [&](std::uint64_t key, std::string_view v) {
    if ((key & 0xff) != 0) return true;
    std::string_view n, part;
    std::uint32_t total;
    bad = DecodeFirst(v, &n, &total, &part);
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
  WALFS_ASSIGN_OR_RETURN(bool exists, HasXattrLocked(ino, c, name));
  if (!exists) return Errno(ENODATA, fmt::format("no xattr \"{}\"", name));
  Op op(this);
  WALFS_RETURN_IF_ERROR(op.Begin(TransType::kXattr, 0));
  WALFS_RETURN_IF_ERROR(DropXattrLocked(op, ino, &c, name).status());
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
