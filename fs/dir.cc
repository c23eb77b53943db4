#include "fs/dir.h"

#include <xxhash.h>

#include <fmt/format.h>

#include "base/coding.h"

namespace walfs::fs {

using format::DirEntry;
using format::ForkFormat;
using format::InodeCore;

namespace {
constexpr std::uint32_t kParentOffset = 16;  // in a B+tree directory's data fork
constexpr std::uint64_t kIndexMask = 0xffff;

std::string EncodeValue(std::string_view name, DirTarget t) {
  std::string v;
  PutFixed64(&v, t.ino);
  v.push_back(static_cast<char>(t.ftype));
  v.append(name);
  return v;
}

Status DecodeValue(std::string_view v, std::string_view* name, DirTarget* t) {
  if (v.size() < 10 || v.size() > 9 + format::kMaxNameLen)
    return Status::Corruption(fmt::format("directory entry of {} bytes", v.size()));
  t->ino = DecodeFixed64(v.data());
  t->ftype = static_cast<std::uint8_t>(v[8]);
  *name = v.substr(9);
  if (t->ino == 0) return Status::Corruption("directory entry for inode 0");
  return Status::Ok();
}

struct LocalDir {
  std::uint64_t parent = 0;
  std::vector<DirEntry> entries;
};

Result<LocalDir> ReadLocal(const InodeCore& dir) {
  LocalDir d;
  WALFS_RETURN_IF_ERROR(format::DecodeLocalDir(std::string_view(dir.literal).substr(0, dir.size),
                                               &d.parent, &d.entries));
  return d;
}

void WriteLocal(InodeCore* dir, const LocalDir& d) {
  std::string bytes = format::EncodeLocalDir(d.parent, d.entries);
  dir->size = bytes.size();
  bytes.resize(format::kLiteralSize, '\0');
  // Keep the xattr fork's root where it is.
  std::copy(dir->literal.begin() + kXattrForkOffset, dir->literal.end(), bytes.begin() + kXattrForkOffset);
  dir->literal = std::move(bytes);
}

// The keys an inline directory gives its entries: hash, then the rank among
// earlier entries with the same hash.
std::vector<std::uint64_t> LocalKeys(const std::vector<DirEntry>& entries) {
  std::vector<std::uint64_t> keys;
  keys.reserve(entries.size());
  for (const DirEntry& e : entries) {
    std::uint64_t k = DirHashKey(e.name);
    for (std::uint64_t prev : keys)
      if ((prev & ~kIndexMask) == (k & ~kIndexMask)) k = std::max(k, prev + 1);
    keys.push_back(k);
  }
  return keys;
}

std::size_t EntryBytes(std::string_view name) { return 10 + name.size(); }

// A name's place in a B+tree directory: its key if it is there, and the
// lowest unused key for its hash (for an insert).
struct NameSlot {
  std::optional<std::uint64_t> key;
  DirTarget target;
  std::uint64_t free_key = 0;
};

// Damage in a directory's entries is recorded (BufCache::Damaged) where it
// is found.
Result<NameSlot> FindName(const BufCache& cache, std::uint64_t dir_ino, const Btree& tree, const BtreeRoot& root,
                          std::string_view name, const FsTransaction* tx) {
  const std::uint64_t h = DirHashKey(name);
  NameSlot slot{.key = std::nullopt, .target = {}, .free_key = h};
  Status bad;
  WALFS_RETURN_IF_ERROR(tree.Scan(root, h, [&](std::uint64_t key, std::string_view v) {
    if ((key & ~kIndexMask) != h) return false;
    std::string_view n;
    DirTarget t;
    bad = DecodeValue(v, &n, &t);
    if (!bad.ok()) return false;
    if (n == name) {
      slot.key = key;
      slot.target = t;
      return false;
    }
    if (key == slot.free_key) ++slot.free_key;
    return true;
  }, tx));
  if (!bad.ok()) return cache.Damaged("directory entry", dir_ino, 0, std::move(bad));
  return slot;
}
}  // namespace

BtreeRoot GetForkRoot(const format::Literal& literal, std::uint32_t offset) {
  return BtreeRoot{DecodeFixed64(literal.data() + offset), static_cast<std::uint8_t>(literal[offset + 8])};
}

void PutForkRoot(format::Literal* literal, std::uint32_t offset, const BtreeRoot& root) {
  EncodeFixed64(literal->data() + offset, root.block);
  (*literal)[offset + 8] = static_cast<char>(root.levels);
}

std::uint64_t DirHashKey(std::string_view name) {
  std::uint64_t h = XXH3_64bits(name.data(), name.size()) & ((std::uint64_t{1} << 47) - 1);
  if (h == 0) h = 1;  // keys 0..2 are readdir's start, "." and ".."
  return h << 16;
}

Btree DirIndex::Tree(const InodeCore& dir, bool may_allocate) const {
  return Btree({.cache = cache_, .alloc = alloc_, .sb = sb_, .type = format::BlockType::kDirectory,
                .owner = dir.ino, .goal = dir.ino / sb_->inodes_per_block(), .may_allocate = may_allocate});
}

void DirIndex::InitLocal(InodeCore* dir, std::uint64_t parent) {
  dir->format = ForkFormat::kLocal;
  dir->literal.assign(format::kLiteralSize, '\0');
  WriteLocal(dir, LocalDir{parent, {}});
}

void DirIndex::SetLocal(InodeCore* dir, std::uint64_t parent, const std::vector<format::DirEntry>& entries) {
  dir->format = ForkFormat::kLocal;
  dir->literal.resize(format::kLiteralSize, '\0');
  WriteLocal(dir, LocalDir{parent, entries});
}

std::uint64_t DirIndex::Parent(const InodeCore& dir) const {
  if (dir.format == ForkFormat::kBtree) return DecodeFixed64(dir.literal.data() + kParentOffset);
  return DecodeFixed64(dir.literal.data());
}

void DirIndex::SetParent(InodeCore* dir, std::uint64_t parent) const {
  if (dir->format == ForkFormat::kBtree)
    EncodeFixed64(dir->literal.data() + kParentOffset, parent);
  else
    EncodeFixed64(dir->literal.data(), parent);
}

Result<std::optional<DirTarget>> DirIndex::Lookup(const InodeCore& dir, std::string_view name) const {
  if (dir.format == ForkFormat::kLocal) {
    WALFS_ASSIGN_OR_RETURN(LocalDir d, ReadLocal(dir));
    for (const DirEntry& e : d.entries)
      if (e.name == name) return std::optional<DirTarget>(DirTarget{e.ino, e.ftype});
    return std::optional<DirTarget>();
  }
  WALFS_ASSIGN_OR_RETURN(NameSlot slot, FindName(*cache_, dir.ino, Tree(dir), GetForkRoot(dir.literal, 0), name, nullptr));
  if (!slot.key) return std::optional<DirTarget>();
  return std::optional<DirTarget>(slot.target);
}

Status DirIndex::ToBtree(FsTransaction* tx, InodeCore* dir) {
  WALFS_ASSIGN_OR_RETURN(LocalDir d, ReadLocal(*dir));
  const std::vector<std::uint64_t> keys = LocalKeys(d.entries);
  BtreeRoot root;
  Btree tree = Tree(*dir);
  for (std::size_t i = 0; i < d.entries.size(); ++i)
    WALFS_RETURN_IF_ERROR(tree.Insert(tx, &root, keys[i],
                                      EncodeValue(d.entries[i].name, {d.entries[i].ino, d.entries[i].ftype})));
  std::string lit(format::kLiteralSize, '\0');
  std::copy(dir->literal.begin() + kXattrForkOffset, dir->literal.end(), lit.begin() + kXattrForkOffset);
  dir->literal = std::move(lit);
  dir->format = ForkFormat::kBtree;
  PutForkRoot(&dir->literal, 0, root);
  EncodeFixed64(dir->literal.data() + kParentOffset, d.parent);
  return Status::Ok();
}

Status DirIndex::Add(FsTransaction* tx, InodeCore* dir, std::string_view name, DirTarget target,
                     bool may_allocate) {
  if (dir->format == ForkFormat::kLocal) {
    WALFS_ASSIGN_OR_RETURN(LocalDir d, ReadLocal(*dir));
    for (const DirEntry& e : d.entries)
      if (e.name == name) return Status::AlreadyExists(fmt::format("\"{}\" exists", name));
    if (dir->size + EntryBytes(name) <= kDataForkRoom) {
      d.entries.push_back(DirEntry{target.ino, target.ftype, std::string(name)});
      WriteLocal(dir, d);
      return Status::Ok();
    }
    if (!may_allocate)
      return Status::NoSpace(fmt::format("directory {} would need a block for \"{}\"", dir->ino, name));
    WALFS_RETURN_IF_ERROR(ToBtree(tx, dir));
  }
  BtreeRoot root = GetForkRoot(dir->literal, 0);
  Btree tree = Tree(*dir, may_allocate);
  WALFS_ASSIGN_OR_RETURN(NameSlot slot, FindName(*cache_, dir->ino, tree, root, name, tx));
  if (slot.key) return Status::AlreadyExists(fmt::format("\"{}\" exists", name));
  const std::uint64_t next = slot.free_key;
  if ((next & ~kIndexMask) != DirHashKey(name))
    return Status::NoSpace(fmt::format("65536 names in this directory share \"{}\"'s hash", name));
  WALFS_RETURN_IF_ERROR(tree.Insert(tx, &root, next, EncodeValue(name, target)));
  PutForkRoot(&dir->literal, 0, root);
  dir->size += EntryBytes(name);
  return Status::Ok();
}

Status DirIndex::Remove(FsTransaction* tx, InodeCore* dir, std::string_view name) {
  if (dir->format == ForkFormat::kLocal) {
    WALFS_ASSIGN_OR_RETURN(LocalDir d, ReadLocal(*dir));
    auto it = std::find_if(d.entries.begin(), d.entries.end(),
                           [&](const DirEntry& e) { return e.name == name; });
    if (it == d.entries.end()) return Status::NotFound(fmt::format("no \"{}\"", name));
    d.entries.erase(it);
    WriteLocal(dir, d);
    return Status::Ok();
  }
  BtreeRoot root = GetForkRoot(dir->literal, 0);
  Btree tree = Tree(*dir);
  WALFS_ASSIGN_OR_RETURN(NameSlot slot, FindName(*cache_, dir->ino, tree, root, name, tx));
  const std::optional<std::uint64_t> key_of = slot.key;
  if (!key_of) return Status::NotFound(fmt::format("no \"{}\"", name));
  WALFS_RETURN_IF_ERROR(tree.Erase(tx, &root, *key_of));
  PutForkRoot(&dir->literal, 0, root);
  dir->size -= std::min<std::uint64_t>(dir->size, EntryBytes(name));
  return Status::Ok();
}

Status DirIndex::Replace(FsTransaction* tx, InodeCore* dir, std::string_view name, DirTarget target) {
  if (dir->format == ForkFormat::kLocal) {
    WALFS_ASSIGN_OR_RETURN(LocalDir d, ReadLocal(*dir));
    for (DirEntry& e : d.entries) {
      if (e.name != name) continue;
      e.ino = target.ino;
      e.ftype = target.ftype;
      WriteLocal(dir, d);
      return Status::Ok();
    }
    return Status::NotFound(fmt::format("no \"{}\"", name));
  }
  BtreeRoot root = GetForkRoot(dir->literal, 0);
  Btree tree = Tree(*dir);
  WALFS_ASSIGN_OR_RETURN(NameSlot slot, FindName(*cache_, dir->ino, tree, root, name, tx));
  const std::optional<std::uint64_t> key_of = slot.key;
  if (!key_of) return Status::NotFound(fmt::format("no \"{}\"", name));
  WALFS_RETURN_IF_ERROR(tree.Replace(tx, &root, *key_of, EncodeValue(name, target)));
  PutForkRoot(&dir->literal, 0, root);
  return Status::Ok();
}

Status DirIndex::List(const InodeCore& dir, std::uint64_t from,
                      const std::function<bool(std::uint64_t, std::string_view, DirTarget)>& fn) const {
  if (dir.format == ForkFormat::kLocal) {
    WALFS_ASSIGN_OR_RETURN(LocalDir d, ReadLocal(dir));
    const std::vector<std::uint64_t> keys = LocalKeys(d.entries);
    std::vector<std::size_t> order(d.entries.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
    for (std::size_t i : order) {
      if (keys[i] < from) continue;
      if (!fn(keys[i], d.entries[i].name, DirTarget{d.entries[i].ino, d.entries[i].ftype})) break;
    }
    return Status::Ok();
  }
  Status bad;
  WALFS_RETURN_IF_ERROR(Tree(dir).Scan(GetForkRoot(dir.literal, 0), from,
                                       [&](std::uint64_t key, std::string_view v) {
    std::string_view n;
    DirTarget t;
    bad = DecodeValue(v, &n, &t);
    if (!bad.ok()) return false;
    return fn(key, n, t);
  }));
  if (!bad.ok()) return cache_->Damaged("directory entry", dir.ino, 0, std::move(bad));
  return Status::Ok();
}

Result<bool> DirIndex::Empty(const InodeCore& dir) const {
  bool empty = true;
  WALFS_RETURN_IF_ERROR(List(dir, 0, [&](std::uint64_t, std::string_view, DirTarget) {
    empty = false;
    return false;
  }));
  return empty;
}

Status DirIndex::Destroy(FsTransaction* tx, InodeCore* dir) {
  if (dir->format != ForkFormat::kBtree) return Status::Ok();
  BtreeRoot root = GetForkRoot(dir->literal, 0);
  // An empty directory's tree is at most its root (erases free empty nodes).
  WALFS_ASSIGN_OR_RETURN(bool done, Tree(*dir).DestroySome(tx, &root, 64));
  if (!done)
    return cache_->Damaged("directory index", dir->ino, 0,
                           Status::Corruption(fmt::format("directory {}: its empty index has more than 64 blocks",
                                                          dir->ino)));
  PutForkRoot(&dir->literal, 0, root);
  return Status::Ok();
}

Status DirIndex::ForEachBlock(const InodeCore& dir, const std::function<void(std::uint64_t)>& fn) const {
  if (dir.format != ForkFormat::kBtree) return Status::Ok();
  return Tree(dir).ForEachBlock(GetForkRoot(dir.literal, 0), fn);
}

}  // namespace walfs::fs
