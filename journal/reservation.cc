#include "journal/reservation.h"

#include <algorithm>

#include "base/check.h"
#include "journal/cil.h"
#include "journal/log_writer.h"

namespace walfs::journal {

namespace {

constexpr std::string_view kNames[] = {"create", "mkdir",    "link",    "remove", "rename",
                                       "symlink", "write", "truncate", "setattr", "xattr",
                                       "create_acl", "mkdir_acl", "growfs", "error_record"};
static_assert(std::size(kNames) == kTransTypeCount);

// Worst-case bytes for the blocks and inodes one step may dirty.
struct Cost {
  const ReservationGeometry& g;
  std::int32_t Bufs(std::int32_t n) const { return n * (g.block_size + ReservationTable::kBufOverhead); }
  // Inodes are logged through their chunk block's buffer item, whose format
  // carries every chunk of the block changed since its last writeback --
  // other inodes' changes too -- so an inode costs a whole block at worst.
  std::int32_t Inodes(std::int32_t n) const { return Bufs(n); }
  // One block allocation or free: the AG header plus both free-space index
  // paths (by block and by size), each split to the root.
  std::int32_t Alloc() const { return Bufs(1 + 2 * g.free_levels); }
  // A directory entry added or removed: a B+tree insert splitting every
  // level and growing a new root (fs/btree.h InsertBlocks), and the block
  // allocations that takes.
  std::int32_t DirChange() const { return Bufs(2 * g.dir_levels + 1) + Alloc(); }
  // An inode allocated or freed: the AG header, the inode index path and the
  // inode chunk's first block, plus a block allocation for a new chunk.
  // A new chunk is logged whole: 64 inodes, in as many blocks as they take.
  std::int32_t InodeChunk() const {
    const std::int32_t blocks = std::max(1, 64 * g.inode_size / g.block_size);
    return 64 * g.inode_size + blocks * ReservationTable::kBufOverhead;
  }
  std::int32_t InodeAlloc() const { return Bufs(2 + g.inode_levels) + Alloc() + InodeChunk(); }
  // One extent inserted into or erased from a file's map, split to the root.
  std::int32_t ExtentChange() const { return Bufs(2 * g.extent_levels + 1) + Alloc(); }
};

}  // namespace

std::string_view TransTypeName(TransType type) { return kNames[static_cast<int>(type)]; }

ReservationTable::ReservationTable(const ReservationGeometry& geo) {
  WALFS_CHECK(geo.block_size >= 512 && geo.inode_size >= 128);
  const Cost c{geo};
  auto set = [&](TransType t, std::int32_t bytes, std::int32_t count, bool perm) {
    // Its share of a checkpoint's overhead (record headers, padding, split
    // op headers) in records of the smallest size the log writer allows.
    const std::int64_t ckpt = Cil::CheckpointOverhead(
        bytes, LogWriter::kMinIclogBytes - kLogSectorSize);
    resv_[static_cast<int>(t)] =
        TransResv{static_cast<std::int32_t>(bytes + kTransOverhead + ckpt), count, perm};
  };
  // Namespace changes roll twice: the change itself, then deferred frees.
  const std::int32_t create = c.Inodes(2) + c.DirChange() + c.InodeAlloc();
  const std::int32_t mkdir = create + c.Bufs(1) + c.Alloc();
  set(TransType::kCreate, create, 2, true);
  set(TransType::kMkdir, mkdir, 2, true);
  // A new inode in a directory with a default ACL gets its ACLs in the
  // create step: one xattr leaf, allocated (fs/filesystem_acl.cc limits
  // inherited ACLs to what fits it).  Other creates do not pay for it.
  const std::int32_t acl_leaf = c.Bufs(1) + c.Alloc();
  set(TransType::kCreateAcl, create + acl_leaf, 2, true);
  set(TransType::kMkdirAcl, mkdir + acl_leaf, 2, true);
  set(TransType::kLink, c.Inodes(2) + c.DirChange(), 2, true);
  // Remove also puts the inode on the unlinked list and may free a dir block.
  set(TransType::kRemove, c.Inodes(2) + c.DirChange() + c.Bufs(1) + c.Alloc(), 2, true);
  set(TransType::kRename, c.Inodes(4) + 2 * c.DirChange() + c.Alloc(), 2, true);
  set(TransType::kSymlink, c.Inodes(2) + c.DirChange() + c.InodeAlloc() + c.Bufs(1) + c.Alloc(), 2,
      true);
  // A write maps one new extent, or converts an unwritten one: up to three
  // records changed or inserted and two erased (a converted piece joining
  // both neighbours, FileMap::MarkState), which may touch the next leaf and
  // free a leaf or two -- within two extent changes.
  set(TransType::kWrite, c.Inodes(1) + 2 * c.ExtentChange() + c.Alloc(), 2, true);
  set(TransType::kTruncate, c.Inodes(1) + c.ExtentChange() + 2 * c.Alloc(), 2, true);
  set(TransType::kSetattr, c.Inodes(1), 1, false);
  // An xattr value (up to MaxXattrValue: 16 blocks, at most 64 KiB) goes in
  // whole, in one step: its records fill leaves left half full by splits
  // (twice the value's bytes), plus the path above them and the allocations.
  const std::int32_t xattr_leaves =
      2 * static_cast<std::int32_t>(MaxXattrValue(geo.block_size)) / std::max(256, geo.block_size - 128) + 1;
  set(TransType::kXattr, c.Inodes(1) + c.Bufs(xattr_leaves + 2 * geo.dir_levels + 1) + 2 * c.Alloc(), 2, true);

  // Growing: the superblock, the old last AG's header and the bitmap blocks
  // whose bits past its old end are cleared; one step, not rolled.
  set(TransType::kGrowfs, c.Bufs(2 + kGrowfsBitmapBlocks), 1, false);
  // Recording damage: the superblock's error record, one step.
  set(TransType::kErrorRecord, c.Bufs(1), 1, false);

  for (int i = 0; i < kTransTypeCount; ++i) {
    const std::int64_t total = std::int64_t{resv_[i].unit_bytes} * resv_[i].log_count;
    if (total > largest_bytes_) {
      largest_bytes_ = total;
      largest_type_ = static_cast<TransType>(i);
    }
  }
}

}  // namespace walfs::journal
