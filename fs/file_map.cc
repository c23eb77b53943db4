#include "fs/file_map.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/coding.h"
#include "fs/dir.h"

namespace walfs::fs {

using format::Extent;
using format::ForkFormat;
using format::InodeCore;

namespace {
std::uint64_t End(const Extent& e) { return e.file_block + e.length; }

// The inline records, read in place: they are in file order and disjoint
// (DecodeInode checks), so the first one ending after a block is found by
// halves, with no copy of the rest (an overwrite looks its extent up twice).
class InlineMap {
 public:
  explicit InlineMap(const InodeCore& f)
      : f_(f), n_(std::min<std::uint32_t>(f.nextents, kDataForkRoom / format::kExtentSize)) {}
  std::uint32_t size() const { return n_; }
  Extent operator[](std::uint32_t i) const { return format::DecodeExtent(f_.literal.data() + i * format::kExtentSize); }
  std::uint32_t FirstEndingAfter(std::uint64_t block) const {
    std::uint32_t lo = 0, hi = n_;
    while (lo < hi) {
      const std::uint32_t mid = lo + (hi - lo) / 2;
      if (End((*this)[mid]) > block)
        hi = mid;
      else
        lo = mid + 1;
    }
    return lo;
  }

 private:
  const InodeCore& f_;
  const std::uint32_t n_;
};

// Every inline record, for the changes that rewrite the list.
std::vector<Extent> InlineExtents(const InodeCore& f) {
  const InlineMap map(f);
  std::vector<Extent> out;
  out.reserve(map.size());
  for (std::uint32_t i = 0; i < map.size(); ++i) out.push_back(map[i]);
  return out;
}

void PutInline(InodeCore* f, const std::vector<Extent>& es) {
  std::fill(f->literal.begin(), f->literal.begin() + kDataForkRoom, '\0');
  for (std::size_t i = 0; i < es.size(); ++i)
    format::EncodeExtent(es[i], f->literal.data() + i * format::kExtentSize);
  f->nextents = static_cast<std::uint32_t>(es.size());
}

std::string Value(const Extent& e) {
  std::string v(format::kExtentSize, '\0');
  format::EncodeExtent(e, v.data());
  return v;
}

Result<Extent> FromValue(std::uint64_t key, std::string_view v) {
  if (v.size() != format::kExtentSize) return Status::Corruption(fmt::format("extent record of {} bytes", v.size()));
  Extent e = format::DecodeExtent(v.data());
  if (e.file_block != key) return Status::Corruption(fmt::format("extent at key {} says {}", key, e.file_block));
  return e;
}
}  // namespace

void FileMap::InitEmpty(InodeCore* file) {
  file->format = ForkFormat::kExtents;
  file->nextents = 0;
  if (file->literal.size() != format::kLiteralSize) file->literal.assign(format::kLiteralSize, '\0');
  std::fill(file->literal.begin(), file->literal.begin() + kDataForkRoom, '\0');
}

Btree FileMap::Tree(const InodeCore& file) const {
  return Btree({.cache = cache_, .alloc = alloc_, .sb = sb_, .type = format::BlockType::kExtents,
                .owner = file.ino, .goal = file.ino / sb_->inodes_per_block(), .max_levels = kMaxLevels});
}

Result<std::vector<Extent>> FileMap::Overlapping(const InodeCore& file, std::uint64_t first,
                                                 std::uint64_t end, const FsTransaction* tx,
                                                 std::size_t limit) const {
  std::vector<Extent> out;
  if (first >= end || limit == 0) return out;
  if (file.format != ForkFormat::kBtree) {
    const InlineMap map(file);
    for (std::uint32_t i = map.FirstEndingAfter(first); i < map.size() && out.size() < limit; ++i) {
      const Extent e = map[i];
      if (e.file_block >= end) break;
      out.push_back(e);
    }
    return out;
  }
  const BtreeRoot root = GetForkRoot(file.literal, 0);
  Btree tree = Tree(file);
  Status bad;
  WALFS_RETURN_IF_ERROR(tree.ScanFromFloor(root, first, [&](std::uint64_t key, std::string_view v) {
    Result<Extent> e = FromValue(key, v);
    if (!e.ok()) {
      bad = e.status();
      return false;
    }
    if (e->file_block >= end) return false;
    if (End(*e) > first) out.push_back(*e);
    return out.size() < limit;
  }, tx));
  WALFS_RETURN_IF_ERROR(bad);
  return out;
}

Result<std::optional<Extent>> FileMap::NextFrom(const InodeCore& file, std::uint64_t first,
                                                const FsTransaction* tx) const {
  if (file.format != ForkFormat::kBtree) {
    const InlineMap map(file);
    const std::uint32_t i = map.FirstEndingAfter(first);
    return i < map.size() ? std::optional<Extent>(map[i]) : std::optional<Extent>();
  }
  WALFS_ASSIGN_OR_RETURN(std::vector<Extent> cover, Overlapping(file, first, first + 1, tx));
  if (!cover.empty()) return std::optional<Extent>(cover.front());
  std::optional<Extent> next;
  Status bad;
  WALFS_RETURN_IF_ERROR(Tree(file).Scan(GetForkRoot(file.literal, 0), first, [&](std::uint64_t key, std::string_view v) {
    Result<Extent> e = FromValue(key, v);
    if (e.ok()) next = *e; else bad = e.status();
    return false;
  }, tx));
  WALFS_RETURN_IF_ERROR(bad);
  return next;
}

Status FileMap::Erase(FsTransaction* tx, InodeCore* file, const Extent& e) {
  if (file->format != ForkFormat::kBtree) {
    std::vector<Extent> es = InlineExtents(*file);
    std::erase_if(es, [&](const Extent& x) { return x.file_block == e.file_block; });
    PutInline(file, es);
    return Status::Ok();
  }
  BtreeRoot root = GetForkRoot(file->literal, 0);
  WALFS_RETURN_IF_ERROR(Tree(*file).Erase(tx, &root, e.file_block));
  PutForkRoot(&file->literal, 0, root);
  file->nextents -= std::min<std::uint32_t>(file->nextents, 1);
  return Status::Ok();
}

Status FileMap::Insert(FsTransaction* tx, InodeCore* file, const Extent& e) {
  if (file->format != ForkFormat::kBtree) {
    std::vector<Extent> es = InlineExtents(*file);
    es.push_back(e);
    std::sort(es.begin(), es.end(), [](const Extent& a, const Extent& b) { return a.file_block < b.file_block; });
    if (es.size() <= kInlineExtents) {
      PutInline(file, es);
      return Status::Ok();
    }
    // Outgrown the inode: move every record into a tree.
    BtreeRoot root;
    Btree tree = Tree(*file);
    for (const Extent& x : es) WALFS_RETURN_IF_ERROR(tree.Insert(tx, &root, x.file_block, Value(x)));
    std::fill(file->literal.begin(), file->literal.begin() + kDataForkRoom, '\0');
    file->format = ForkFormat::kBtree;
    PutForkRoot(&file->literal, 0, root);
    file->nextents = static_cast<std::uint32_t>(es.size());
    return Status::Ok();
  }
  BtreeRoot root = GetForkRoot(file->literal, 0);
  WALFS_RETURN_IF_ERROR(Tree(*file).Insert(tx, &root, e.file_block, Value(e)));
  PutForkRoot(&file->literal, 0, root);
  file->nextents += 1;
  return Status::Ok();
}

Status FileMap::Map(FsTransaction* tx, InodeCore* file, Extent e) {
  if (e.file_block > 0) {
    WALFS_ASSIGN_OR_RETURN(std::vector<Extent> left, Overlapping(*file, e.file_block - 1, e.file_block, tx));
    if (!left.empty() && Joins(left.front(), e)) {
      Extent merged = left.front();
      merged.length += e.length;
      return Replace(tx, file, merged);
    }
  }
  return Insert(tx, file, e);
}

Result<bool> FileMap::Unmap(FsTransaction* tx, InodeCore* file, std::uint64_t first, std::uint64_t end,
                            std::uint32_t max_extents, std::vector<Extent>* freed) {
  // Only the first max_extents (and one more, to know whether this call
  // finishes): every call scanning the whole rest of the range made
  // unmapping a file of n extents cost n^2 / max_extents extent decodes (a
  // randomly written 256 MiB file kept the daemon busy long after its
  // unlink).  From the front: every caller has logged the
  // new size first (truncate), or the file is gone (inactivation), or the
  // range is a punched hole, so a step cut short by a crash leaves mapped
  // blocks only where reads do not reach or where they read as before.
  WALFS_ASSIGN_OR_RETURN(std::vector<Extent> over,
                         Overlapping(*file, first, end, tx, std::size_t{max_extents} + 1));
  std::uint32_t done = 0;
  for (auto it = over.begin(); it != over.end(); ++it) {
    if (done == max_extents) return false;
    const Extent e = *it;
    WALFS_RETURN_IF_ERROR(Erase(tx, file, e));
    const std::uint64_t cut_from = std::max(first, e.file_block);
    const std::uint64_t cut_to = std::min(end, End(e));
    if (e.file_block < cut_from) {
      Extent left = e;
      left.length = static_cast<std::uint32_t>(cut_from - e.file_block);
      WALFS_RETURN_IF_ERROR(Insert(tx, file, left));
    }
    if (cut_to < End(e)) {
      Extent right = e;
      right.file_block = cut_to;
      right.disk_block = e.disk_block + (cut_to - e.file_block);
      right.length = static_cast<std::uint32_t>(End(e) - cut_to);
      WALFS_RETURN_IF_ERROR(Insert(tx, file, right));
    }
    freed->push_back(Extent{cut_from, e.disk_block + (cut_from - e.file_block),
                            static_cast<std::uint32_t>(cut_to - cut_from), e.unwritten});
    ++done;
  }
  return true;
}

Status FileMap::Replace(FsTransaction* tx, InodeCore* file, const Extent& e) {
  if (file->format != ForkFormat::kBtree) {
    std::vector<Extent> es = InlineExtents(*file);
    for (Extent& x : es)
      if (x.file_block == e.file_block) x = e;
    PutInline(file, es);
    return Status::Ok();
  }
  BtreeRoot root = GetForkRoot(file->literal, 0);
  WALFS_RETURN_IF_ERROR(Tree(*file).Replace(tx, &root, e.file_block, Value(e)));
  PutForkRoot(&file->literal, 0, root);
  return Status::Ok();
}

bool FileMap::Joins(const Extent& a, const Extent& b) {
  return End(a) == b.file_block && a.unwritten == b.unwritten && a.disk_block + a.length == b.disk_block &&
         std::uint64_t{a.length} + b.length <= format::kMaxExtentLength;
}

Result<bool> FileMap::MarkState(FsTransaction* tx, InodeCore* file, std::uint64_t first, std::uint64_t end,
                                bool unwritten) {
  // The neighbours too, one block either side: a piece that changes state
  // joins a contiguous neighbour already in that state, so that writing a
  // preallocated file block by block (or zeroing out its gaps,
  // Filesystem::WriteBlocks) ends in one extent, not one per write.
  WALFS_ASSIGN_OR_RETURN(std::vector<Extent> over, Overlapping(*file, first > 0 ? first - 1 : 0, end + 1, tx));
  for (std::size_t i = 0; i < over.size(); ++i) {
    const Extent e = over[i];
    if (e.unwritten == unwritten || End(e) <= first || e.file_block >= end) continue;
    const std::uint64_t from = std::max(first, e.file_block);
    const std::uint64_t to = std::min(end, End(e));
    Extent mid{from, e.disk_block + (from - e.file_block), static_cast<std::uint32_t>(to - from), unwritten};
    const bool head = e.file_block < from, tail = to < End(e);
    const bool join_left = !head && i > 0 && Joins(over[i - 1], mid);
    if (join_left) {
      Extent left = over[i - 1];
      left.length += mid.length;
      mid = left;
    }
    const bool join_right = !tail && i + 1 < over.size() && Joins(mid, over[i + 1]);
    if (join_right) mid.length += over[i + 1].length;
    // Record by record: the joined right neighbour's record goes; the head
    // keeps e's key, else the joined left neighbour's or e's key takes the
    // piece; the tail is new.
    if (join_right) WALFS_RETURN_IF_ERROR(Erase(tx, file, over[i + 1]));
    if (head) {
      WALFS_RETURN_IF_ERROR(Replace(tx, file, Extent{e.file_block, e.disk_block,
                                                     static_cast<std::uint32_t>(from - e.file_block), e.unwritten}));
      WALFS_RETURN_IF_ERROR(Insert(tx, file, mid));
    } else if (join_left) {
      WALFS_RETURN_IF_ERROR(Erase(tx, file, e));
      WALFS_RETURN_IF_ERROR(Replace(tx, file, mid));
    } else {
      WALFS_RETURN_IF_ERROR(Replace(tx, file, mid));
    }
    if (tail)
      WALFS_RETURN_IF_ERROR(Insert(tx, file, Extent{to, e.disk_block + (to - e.file_block),
                                                    static_cast<std::uint32_t>(End(e) - to), e.unwritten}));
    // Done unless a later extent of the range is still in the other state
    // (a joined right neighbour is in this one): the caller need not roll
    // into a second transaction only to learn that nothing is left.
    for (std::size_t j = i + 1; j < over.size(); ++j)
      if (over[j].unwritten != unwritten && over[j].file_block < end) return false;
    return true;
  }
  return true;
}

Status FileMap::ForEachBlock(const InodeCore& file, const std::function<void(std::uint64_t)>& fn) const {
  if (file.format != ForkFormat::kBtree) return Status::Ok();
  return Tree(file).ForEachBlock(GetForkRoot(file.literal, 0), fn);
}

Result<bool> FileMap::DestroySome(FsTransaction* tx, InodeCore* file, std::uint32_t max_blocks) {
  if (file->format != ForkFormat::kBtree) {
    InitEmpty(file);
    return true;
  }
  BtreeRoot root = GetForkRoot(file->literal, 0);
  WALFS_ASSIGN_OR_RETURN(bool done, Tree(*file).DestroySome(tx, &root, max_blocks));
  PutForkRoot(&file->literal, 0, root);
  if (done) InitEmpty(file);
  return done;
}

}  // namespace walfs::fs
