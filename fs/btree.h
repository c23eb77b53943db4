// Btree: a B+tree of metadata blocks mapping u64 keys to short byte-string
// values -- the one index structure behind large directories (key: name
// hash and collision index), file extent maps (key: file block) and xattrs.
// Its root block number and height live in the owner (an inode fork).
//
//   Btree tree({.cache = &cache, .alloc = &alloc, .sb = &sb,
//               .type = BlockType::kDirectory, .owner = dir_ino, .goal = near});
//   BtreeRoot root = ...from the inode...;
//   WALFS_RETURN_IF_ERROR(tree.Insert(&tx, &root, key, value));   // may change root
//   WALFS_ASSIGN_OR_RETURN(std::optional<std::string> v, tree.Get(root, key));
//
// Concurrency: the owner serialises changes (its inode lock held
// exclusively around a transaction that changes the tree) and readers hold
// it shared, so the tree's shape is stable while anyone walks it.  Readers
// still take each node's buffer lock while they read it (the AIL may be
// stamping it for writeback); writers hold (FsTransaction::Hold) every node
// they change.
//
// Space: nodes come from the Allocator near `goal`; a node freed by an erase
// is cancelled (MarkCancelled) and returned to the allocator in the same
// transaction.  The layout of a node is in docs/disk_format.md ("B+trees").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "fs/alloc.h"
#include "fs/buf_cache.h"
#include "fs/format/block_types.h"
#include "fs/format/superblock_format.h"
#include "fs/fs_trans.h"

namespace walfs::fs {

// Where a tree starts.  block == 0: the empty tree (levels 0).
struct BtreeRoot {
  std::uint64_t block = 0;
  std::uint8_t levels = 0;  // 1: the root is a leaf
  bool empty() const { return block == 0; }
  friend bool operator==(const BtreeRoot&, const BtreeRoot&) = default;
};

struct BtreeRecord {
  std::uint64_t key = 0;
  std::string value;
};

class Btree {
 public:
  struct Options {
    BufCache* cache = nullptr;
    Allocator* alloc = nullptr;
    const format::Superblock* sb = nullptr;
    format::BlockType type = format::BlockType::kRaw;  // what the nodes are verified and sealed as
    std::uint64_t owner = 0;     // stamped in every node's header (the inode number)
    std::uint64_t goal = 0;      // allocate nodes near this block
    std::uint32_t max_levels = 5;  // an insert that would grow the tree taller is NoSpace
    // False: an insert or replace that would need a new node is NoSpace
    // (found before anything changes) -- a change made without a block
    // reservation, which may only use room the tree already has.
    bool may_allocate = true;
  };
  explicit Btree(const Options& options) : options_(options) {}

  // The largest value a tree with this block size stores (at least 1/4 of
  // a block, so a leaf always holds 3 records or more).
  static std::size_t MaxValueSize(std::uint32_t block_size);

  // ---- Reading (owner lock held shared or exclusive) ----
  // Each node's buffer lock is taken while it is read.  A caller inside a
  // transaction that may hold some of the tree's nodes (it changed the tree
  // earlier in that transaction) passes it as `tx`: the nodes it holds are
  // read without locking them again (which would wait forever).
  Result<std::optional<std::string>> Get(const BtreeRoot& root, std::uint64_t key,
                                         const FsTransaction* tx = nullptr) const;
  // The record with the largest key <= `key` (nullopt: none).
  Result<std::optional<BtreeRecord>> Floor(const BtreeRoot& root, std::uint64_t key,
                                           const FsTransaction* tx = nullptr) const;
  // Calls fn for each record with key >= `from`, ascending, until it returns
  // false.  fn runs with no buffer lock held (each leaf's records are copied
  // first); it must not change the tree.
  Status Scan(const BtreeRoot& root, std::uint64_t from,
              const std::function<bool(std::uint64_t key, std::string_view value)>& fn,
              const FsTransaction* tx = nullptr) const;
  // Scan from Floor(key) (from `key` when there is none), usually with one
  // descent: the floor is in the leaf that would hold `key` unless every
  // key there is larger.  An extent map lookup (FileMap::Overlapping).
  Status ScanFromFloor(const BtreeRoot& root, std::uint64_t key,
                       const std::function<bool(std::uint64_t key, std::string_view value)>& fn,
                       const FsTransaction* tx = nullptr) const;
  // Every block of the tree (fsck, and an inode's block count), parents
  // before their children.
  Status ForEachBlock(const BtreeRoot& root, const std::function<void(std::uint64_t block)>& fn,
                      const FsTransaction* tx = nullptr) const;

  // ---- Changing (owner lock held exclusively; tx is its transaction) ----
  // Every node a change reads is held by tx (FsTransaction::Hold) and stays
  // held until commit if it was changed; the others are released again.
  // Tree nodes are locked before the allocator's AG headers.
  //
  // Errors: everything that can fail for a reason other than an I/O error
  // or a broken block (a missing or present key, a value too large, the
  // height limit, no space) is found before anything changes: the tree is
  // as it was, and tx has changed nothing either, or only allocator state
  // it undid (a node allocation that failed half way), so it may commit.
  // Corruption or an I/O error met while freeing nodes may leave tx dirty;
  // the caller then cancels it, which shuts the log down.
  //
  // AlreadyExists if the key is present; InvalidArgument for a value over
  // MaxValueSize; NoSpace when no block can be allocated or the tree is at
  // max_levels.  Updates *root when the root splits (or the tree was empty).
  Status Insert(FsTransaction* tx, BtreeRoot* root, std::uint64_t key, std::string_view value);
  // Replaces the value of an existing key (NotFound if absent).  A longer
  // value may split the leaf: the same errors as Insert.
  Status Replace(FsTransaction* tx, BtreeRoot* root, std::uint64_t key, std::string_view value);
  // Removes a key (NotFound if absent).  Empty nodes are freed; a root left
  // with one child is replaced by it (repeatedly); the last record's removal
  // leaves the empty tree.
  Status Erase(FsTransaction* tx, BtreeRoot* root, std::uint64_t key);
  // Frees up to `max_blocks` of the tree's blocks (the caller rolls its
  // transaction between calls); true once the whole tree is gone (*root is
  // then empty).  The records are dropped, not visited.  Blocks go from the
  // right, leaves first, and the tree is valid after every call.  One step
  // frees the rightmost leaf with every ancestor it leaves empty, so a call
  // with max_blocks below the tree's height may free up to `levels` blocks
  // (it always makes progress).
  Result<bool> DestroySome(FsTransaction* tx, BtreeRoot* root, std::uint32_t max_blocks);

  // Blocks a single Insert may dirty or allocate at `levels` (for
  // reservations): a split at every level plus a new root.
  static std::uint32_t InsertBlocks(std::uint32_t levels) { return 2 * levels + 1; }

 private:
  Options options_;
};

}  // namespace walfs::fs
