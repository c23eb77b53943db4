// Directories (docs/disk_format.md, "Directories").  A small directory
// lives inline in its inode (format kLocal: the parent, then the entries);
// once it outgrows the inode's data fork it becomes a B+tree (format
// kBtree) keyed by the name's hash:
//
//   key = hash47(name) << 16 | collision index      (never 0, 1 or 2)
//
// so a lookup reads one root-to-leaf path, never the whole directory.  The
// key is also the entry's readdir cookie, and readdir walks keys in order:
// an entry's cookie never changes while it exists, so a readdir that races
// creates and removes returns every entry that existed throughout exactly
// once (POSIX's rule), and a resumed one starts where it left off.  Inline
// directories give their entries the same keys (collision index = rank
// among equal hashes in entry order), and conversion keeps them.
//
// The caller holds the directory inode's rw lock (shared to read, exclusive
// to change) and passes a copy of its core; changes update that copy, which
// the caller stores back and logs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "fs/alloc.h"
#include "fs/btree.h"
#include "fs/buf_cache.h"
#include "fs/format/inode_format.h"
#include "fs/format/superblock_format.h"
#include "fs/fs_trans.h"

namespace walfs::fs {

// Bytes of the literal area the data fork may use: the last 16 are kept for
// the xattr fork's root, so adding xattrs never reshapes the data fork.
inline constexpr std::uint32_t kDataForkRoom = format::kLiteralSize - 16;
inline constexpr std::uint32_t kXattrForkOffset = kDataForkRoom;

// A B+tree root stored in a fork: block u64, levels u8 (then, for a
// directory's data fork, the parent at byte 16).
BtreeRoot GetForkRoot(const format::Literal& literal, std::uint32_t offset);
void PutForkRoot(format::Literal* literal, std::uint32_t offset, const BtreeRoot& root);

std::uint64_t DirHashKey(std::string_view name);  // the key with collision index 0

struct DirTarget {
  std::uint64_t ino = 0;
  std::uint8_t ftype = 0;  // DT_*
};

class DirIndex {
 public:
  DirIndex(BufCache* cache, Allocator* alloc, const format::Superblock* sb)
      : cache_(cache), alloc_(alloc), sb_(sb) {}

  Result<std::optional<DirTarget>> Lookup(const format::InodeCore& dir, std::string_view name) const;
  // AlreadyExists if the name is there.  With may_allocate false the entry
  // must fit in the room the directory has: NoSpace, before anything
  // changes, if it would need a block (a change made without a block
  // reservation, as XFS's xfs_dir_canenter checks).
  Status Add(FsTransaction* tx, format::InodeCore* dir, std::string_view name, DirTarget target,
             bool may_allocate = true);
  // NotFound if it is not.
  Status Remove(FsTransaction* tx, format::InodeCore* dir, std::string_view name);
  // Points an existing name at another inode (rename over a target).
  Status Replace(FsTransaction* tx, format::InodeCore* dir, std::string_view name, DirTarget target);
  std::uint64_t Parent(const format::InodeCore& dir) const;
  void SetParent(format::InodeCore* dir, std::uint64_t parent) const;
  // Entries with key >= from in key order until fn returns false.
  Status List(const format::InodeCore& dir, std::uint64_t from,
              const std::function<bool(std::uint64_t key, std::string_view name, DirTarget t)>& fn) const;
  Result<bool> Empty(const format::InodeCore& dir) const;
  // Frees the index of an empty directory (its last link is going).
  Status Destroy(FsTransaction* tx, format::InodeCore* dir);
  // An empty inline directory's data fork.
  static void InitLocal(format::InodeCore* dir, std::uint64_t parent);
  // Makes `dir` an inline directory holding `entries`, its size set and its
  // xattr fork's root kept (fsck's repairs; entries must fit the data fork).
  static void SetLocal(format::InodeCore* dir, std::uint64_t parent, const std::vector<format::DirEntry>& entries);
  // Blocks of a directory's index (fsck, nblocks).
  Status ForEachBlock(const format::InodeCore& dir, const std::function<void(std::uint64_t)>& fn) const;

 private:
  Btree Tree(const format::InodeCore& dir, bool may_allocate = true) const;
  Status ToBtree(FsTransaction* tx, format::InodeCore* dir);
  BufCache* const cache_;
  Allocator* const alloc_;
  const format::Superblock* const sb_;
};

}  // namespace walfs::fs
