// A file's extent map: which disk blocks hold which file blocks.  Up to
// kInlineExtents records live in the inode (format kExtents); beyond that
// the map is a B+tree keyed by file block (format kBtree), its root in the
// data fork.  Extents never overlap; holes are simply absent.  An extent
// may be unwritten (fallocate): it owns its blocks but reads as zeros.
//
// The caller holds the inode's rw lock and passes a copy of its core;
// changes update the copy (format, fork, nextents), which the caller stores
// back and logs.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "fs/alloc.h"
#include "fs/btree.h"
#include "fs/buf_cache.h"
#include "fs/format/inode_format.h"
#include "fs/format/superblock_format.h"
#include "fs/fs_trans.h"

namespace walfs::fs {

class FileMap {
 public:
  static constexpr std::uint32_t kInlineExtents = 21;  // kDataForkRoom / 16
  static constexpr std::uint32_t kMaxLevels = 3;

  FileMap(BufCache* cache, Allocator* alloc, const format::Superblock* sb)
      : cache_(cache), alloc_(alloc), sb_(sb) {}

  static void InitEmpty(format::InodeCore* file);
  // Extents overlapping file blocks [first, end), ascending; at most
  // `limit` of them (the first ones).
  // tx: the caller's transaction, if it may hold some of the map's nodes.
  Result<std::vector<format::Extent>> Overlapping(const format::InodeCore& file, std::uint64_t first,
                                                  std::uint64_t end, const FsTransaction* tx = nullptr,
                                                  std::size_t limit = SIZE_MAX) const;
  // The first extent starting at or after `first` or covering it (SEEK_DATA).
  Result<std::optional<format::Extent>> NextFrom(const format::InodeCore& file, std::uint64_t first,
                                                 const FsTransaction* tx = nullptr) const;
  // Maps an extent over a hole (merging with a contiguous left neighbour of
  // the same kind).
  Status Map(FsTransaction* tx, format::InodeCore* file, format::Extent e);
  // Unmaps [first, end): at most `max_extents` extents are cut per call;
  // the disk ranges unmapped are appended to *freed (the caller frees
  // them).  Returns true once the range is clear.
  Result<bool> Unmap(FsTransaction* tx, format::InodeCore* file, std::uint64_t first, std::uint64_t end,
                     std::uint32_t max_extents, std::vector<format::Extent>* freed);
  // Marks [first, end) written where it is unwritten (at most one extent
  // per call; true once none is left, including by this call).  A piece made written joins a
  // written neighbour it continues on disk.
  Result<bool> MarkWritten(FsTransaction* tx, format::InodeCore* file, std::uint64_t first,
                           std::uint64_t end) {
    return MarkState(tx, file, first, end, /*unwritten=*/false);
  }
  // The reverse: [first, end) reads as zeros from then on, its blocks kept
  // (FALLOC_FL_ZERO_RANGE).
  Result<bool> MarkUnwritten(FsTransaction* tx, format::InodeCore* file, std::uint64_t first,
                             std::uint64_t end) {
    return MarkState(tx, file, first, end, /*unwritten=*/true);
  }
  // The map's own blocks (B+tree nodes), for fsck and for freeing.
  Status ForEachBlock(const format::InodeCore& file, const std::function<void(std::uint64_t)>& fn) const;
  // Frees up to max_blocks of the map's tree once every extent is unmapped
  // (true when gone; the file is left with an empty inline map).
  Result<bool> DestroySome(FsTransaction* tx, format::InodeCore* file, std::uint32_t max_blocks);

 private:
  Btree Tree(const format::InodeCore& file) const;
  Status Erase(FsTransaction* tx, format::InodeCore* file, const format::Extent& e);
  Status Insert(FsTransaction* tx, format::InodeCore* file, const format::Extent& e);
  // Rewrites the record keyed e.file_block.
  Status Replace(FsTransaction* tx, format::InodeCore* file, const format::Extent& e);
  // b continues a: the same state, adjacent on disk and in the file, and
  // together no longer than the longest extent.
  static bool Joins(const format::Extent& a, const format::Extent& b);
  // Gives the first extent in [first, end) not in state `unwritten` that
  // state over its part of the range, cutting it at the range's edges and
  // joining the piece to a neighbour it continues (true once none is left,
  // including by this call).
  Result<bool> MarkState(FsTransaction* tx, format::InodeCore* file, std::uint64_t first, std::uint64_t end,
                         bool unwritten);
  BufCache* const cache_;
  Allocator* const alloc_;
  const format::Superblock* const sb_;
};

}  // namespace walfs::fs
