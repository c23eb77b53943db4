#include "fs/fsck_btree_repair.h"

#include <sys/stat.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/coding.h"
#include "fs/dir.h"
#include "fs/fs_op.h"
#include "fs/format/ag_format.h"
#include "fs/format/block_header.h"
#include "fs/format/btree_format.h"
#include "fs/format/inode_format.h"

namespace walfs::fs {

using namespace format;  // NOLINT(build/namespaces): the checker speaks the format's language

namespace {

Status Read(BlockDevice* dev, const Superblock& sb, std::uint64_t blkno, std::vector<std::byte>* b) {
  b->resize(sb.block_size);
  return dev->Read(blkno * sb.block_size, b->data(), b->size());
}

// Whether block `blkno` is in use in its AG's bitmap (false for a bitmap
// block never written: an uninit_ag AG's blocks past it are all free).
Result<bool> InUse(BlockDevice* dev, const Superblock& sb, std::uint64_t blkno) {
  const std::uint64_t rel = blkno - sb.data_start();
  const auto agno = static_cast<std::uint32_t>(rel / sb.ag_blocks);
  const std::uint64_t agblock = rel % sb.ag_blocks;
  if (agno >= sb.ag_count || agblock < AgFirstFree(sb) || agblock >= sb.AgLength(agno)) return false;
  const std::uint64_t bits = BitsPerBitmapBlock(sb.block_size);
  const auto index = static_cast<std::uint32_t>(agblock / bits);
  std::vector<std::byte> b;
  WALFS_RETURN_IF_ERROR(Read(dev, sb, sb.AgStart(agno) + AgBitmapStart() + index, &b));
  if (!VerifyBitmapBlock(b, sb, agno, index).ok()) return false;
  return BitmapTest(b, agblock % bits);
}

}  // namespace

Result<SalvagedTree> SalvageTree(BlockDevice* dev, const Superblock& sb, std::uint64_t owner, const BtreeRoot& root) {
  SalvagedTree t;
  if (root.empty()) return t;
  auto damage = [&](std::string why) {
    if (t.first_damage.empty()) t.first_damage = std::move(why);
    t.damaged = true;
  };
  if (root.levels == 0 || root.levels > 8) {
    damage(fmt::format("a tree of height {}", root.levels));
    return t;
  }
  struct Todo { std::uint64_t block; int level; std::uint64_t low, high; };
  std::vector<Todo> stack{{root.block, root.levels - 1, 0, UINT64_MAX}};
  std::set<std::uint64_t> seen;
  std::vector<std::byte> b;
  while (!stack.empty()) {
    const Todo n = stack.back();
    stack.pop_back();
    if (n.block < sb.data_start() || n.block >= sb.total_blocks || !seen.insert(n.block).second) {
      ++t.dropped_nodes;
      damage(fmt::format("a pointer to block {}", n.block));
      continue;
    }
    WALFS_RETURN_IF_ERROR(Read(dev, sb, n.block, &b));
    bool suspect = false;
    if (Status st = VerifyBtreeNode(b, n.block, sb.metadata_uuid()); !st.ok()) {
      damage(std::string(st.message()));
      // Only its CRC wrong (it verifies resealed) and where it belongs: its
      // records are candidates, under suspicion.
      std::vector<std::byte> resealed = b;
      SealBlock(resealed);
      if (!VerifyBtreeNode(resealed, n.block, sb.metadata_uuid()).ok()) {
        ++t.dropped_nodes;
        continue;
      }
      b = std::move(resealed);
      suspect = true;
    }
    const BtreeNodeHeader h = DecodeBtreeNodeHeader(b);
    if (h.owner != owner || h.level != n.level) {
      // Another tree's node (or a stale one): neither read nor reused.
      ++t.dropped_nodes;
      damage(fmt::format("block {} belongs to {} at level {}, not level {}", n.block, h.owner, h.level, n.level));
      continue;
    }
    t.resealed_nodes += suspect;
    t.blocks.push_back(n.block);
    if (h.level == 0) {
      for (auto& [key, value] : BtreeLeafRecords(b)) {
        if (key < n.low || key >= n.high || (!t.records.empty() && key <= t.records.back().key)) {
          ++t.dropped_records;
          damage(fmt::format("key {} out of order", key));
          continue;
        }
        t.records.push_back({key, std::move(value), suspect});
      }
      continue;
    }
    const auto entries = BtreeEntries(b);
    for (std::size_t i = entries.size(); i-- > 0;) {  // the leftmost child walked first
      const std::uint64_t low = i == 0 ? n.low : entries[i].first;
      const std::uint64_t high = i + 1 < entries.size() ? entries[i + 1].first : n.high;
      stack.push_back({entries[i].second, n.level - 1, low, high});
    }
  }
  return t;
}

Status KeepSoundExtents(BlockDevice* dev, const Superblock& sb, const std::vector<std::uint64_t>& tree_blocks,
                        const std::function<bool(std::uint64_t)>& claimed, std::vector<SalvagedRecord>* records,
                        std::uint64_t* dropped) {
  // The disk blocks the trusted records map: a suspect one that overlaps
  // them took its address from the damage.
  std::map<std::uint64_t, std::uint64_t> trusted;  // disk block -> end
  for (const std::uint64_t b : tree_blocks) trusted[b] = b + 1;
  for (const SalvagedRecord& r : *records)
    if (!r.suspect && r.value.size() == kExtentSize) {
      const Extent x = DecodeExtent(r.value.data());
      trusted[x.disk_block] = x.disk_block + x.length;
    }
  auto overlaps = [&](const Extent& x) {
    auto it = trusted.upper_bound(x.disk_block + x.length - 1);
    return it != trusted.begin() && std::prev(it)->second > x.disk_block;
  };
  std::vector<SalvagedRecord> kept;
  std::uint64_t next_free = 0;
  for (SalvagedRecord& r : *records) {
    bool ok = r.value.size() == kExtentSize;
    Extent x;
    if (ok) {
      x = DecodeExtent(r.value.data());
      ok = x.file_block == r.key && x.file_block >= next_free && x.length > 0 &&
           x.disk_block >= sb.data_start() && x.disk_block + x.length <= sb.total_blocks;
    }
    if (ok && r.suspect) ok = !overlaps(x);
    for (std::uint64_t b = x.disk_block; ok && r.suspect && b < x.disk_block + x.length; ++b) {
      WALFS_ASSIGN_OR_RETURN(const bool used, InUse(dev, sb, b));
      ok = used && !claimed(b);
    }
    if (!ok) {
      ++*dropped;
      continue;
    }
    next_free = x.file_block + x.length;
    if (r.suspect) trusted[x.disk_block] = x.disk_block + x.length;
    kept.push_back(std::move(r));
  }
  *records = std::move(kept);
  return Status::Ok();
}

void KeepWholeXattrs(std::vector<SalvagedRecord>* records, std::uint64_t* dropped) {
  // A value's records share the key's hash and collision bits; chunk
  // indices are the low 8.
  std::map<std::uint64_t, std::vector<SalvagedRecord*>> values;
  for (SalvagedRecord& r : *records) values[r.key >> 8].push_back(&r);
  std::set<const SalvagedRecord*> keep;
  for (const auto& [base, chunks] : values) {
    bool ok = true;
    for (std::size_t i = 0; ok && i < chunks.size(); ++i) ok = (chunks[i]->key & 0xff) == i;
    const std::string_view v0 = chunks.front()->value;
    const std::size_t n = v0.empty() ? 0 : static_cast<std::uint8_t>(v0[0]);
    ok = ok && n > 0 && v0.size() >= 5 + n && (chunks.front()->key & ~std::uint64_t{0xffff}) == DirHashKey(v0.substr(1, n));
    if (ok) {
      std::uint64_t have = v0.size() - 5 - n;
      for (std::size_t i = 1; i < chunks.size(); ++i) have += chunks[i]->value.size();
      ok = have == DecodeFixed32(v0.data() + 1 + n);
    }
    if (ok)
      for (const SalvagedRecord* r : chunks) keep.insert(r);
    else
      *dropped += chunks.size();
  }
  std::erase_if(*records, [&](const SalvagedRecord& r) { return !keep.contains(&r); });
}

Status KeepSoundEntries(BlockDevice* dev, const Superblock& sb, std::uint64_t dir,
                        std::vector<SalvagedRecord>* records, std::uint64_t* dropped) {
  std::vector<SalvagedRecord> kept;
  std::vector<std::byte> b;
  for (SalvagedRecord& r : *records) {
    const std::string_view v = r.value;
    bool ok = v.size() >= 10 && v.size() <= 9 + kMaxNameLen && DecodeFixed64(v.data()) != 0 &&
              (r.key & ~std::uint64_t{0xffff}) == DirHashKey(v.substr(9));
    if (ok && r.suspect) {
      // The inode it names is in use, of the type it says, and a directory
      // names this one its parent: a flipped inode number must not give a
      // file a stranger's name, nor a directory a second parent.
      const std::uint64_t ino = DecodeFixed64(v.data());
      const std::uint64_t block = ino / sb.inodes_per_block();
      ok = block >= sb.data_start() && block < sb.total_blocks;
      if (ok) WALFS_RETURN_IF_ERROR(Read(dev, sb, block, &b));
      Result<InodeCore> target =
          ok ? DecodeInode(std::span<const std::byte>(b).subspan(ino % sb.inodes_per_block() * kInodeSize, kInodeSize), ino)
             : Result<InodeCore>(Status::Corruption("outside the filesystem"));
      ok = target.ok() && !target->free() && DirentType(target->mode) == static_cast<std::uint8_t>(v[8]);
      if (ok && S_ISDIR(target->mode)) {
        const std::size_t at = target->format == ForkFormat::kBtree ? 16 : 0;  // the parent's place
        ok = (target->format == ForkFormat::kLocal || target->format == ForkFormat::kBtree) &&
             DecodeFixed64(target->literal.data() + at) == dir;
      }
    }
    if (!ok) {
      ++*dropped;
      continue;
    }
    kept.push_back(std::move(r));
  }
  *records = std::move(kept);
  return Status::Ok();
}

Result<BtreeRoot> WriteTree(BlockDevice* dev, const Superblock& sb, std::uint64_t owner,
                            std::vector<std::uint64_t> blocks, const std::vector<SalvagedRecord>& records) {
  if (records.empty()) return BtreeRoot{};
  std::sort(blocks.begin(), blocks.end());
  std::size_t next_block = 0;
  std::map<std::uint64_t, std::vector<std::byte>> out;  // block -> its new contents
  auto take = [&]() -> Result<std::uint64_t> {
    if (next_block == blocks.size())
      return Status::NoSpace(fmt::format("the {} records left do not fit the tree's {} blocks", records.size(),
                                         blocks.size()));
    return blocks[next_block++];
  };
  const BtreeNodeId id{.blkno = 0, .owner = owner, .uuid = sb.metadata_uuid()};
  // Leaves, packed in key order.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> level;  // (first key, block)
  std::vector<std::pair<std::uint64_t, std::string>> leaf;
  std::uint32_t used = 0;
  auto flush_leaf = [&]() -> Status {
    WALFS_ASSIGN_OR_RETURN(const std::uint64_t blk, take());
    std::vector<std::byte>& b = out[blk];
    b.assign(sb.block_size, std::byte{0});
    BtreeNodeId at = id;
    at.blkno = blk;
    EncodeBtreeLeaf(b, at, leaf);
    level.push_back({leaf.front().first, blk});
    leaf.clear();
    used = 0;
    return Status::Ok();
  };
  for (const SalvagedRecord& r : records) {
    const std::uint32_t cost = BtreeRecordCost(r.value.size());
    if (!leaf.empty() && used + cost > BtreeLeafSpace(sb.block_size)) WALFS_RETURN_IF_ERROR(flush_leaf());
    leaf.emplace_back(r.key, r.value);
    used += cost;
  }
  WALFS_RETURN_IF_ERROR(flush_leaf());
  // Internal levels until one node is left.
  std::uint16_t height = 1;
  const std::size_t cap = BtreeNodeCapacity(sb.block_size);
  while (level.size() > 1) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> up;
    for (std::size_t i = 0; i < level.size(); i += cap) {
      const std::size_t end = std::min(level.size(), i + cap);
      WALFS_ASSIGN_OR_RETURN(const std::uint64_t blk, take());
      std::vector<std::byte>& b = out[blk];
      b.assign(sb.block_size, std::byte{0});
      BtreeNodeId at = id;
      at.blkno = blk;
      EncodeBtreeInternal(b, at, height, std::span(level).subspan(i, end - i));
      up.push_back({level[i].first, blk});
    }
    level = std::move(up);
    ++height;
  }
  for (auto& [blk, b] : out) {
    SealBlock(b);
    // Built here from records that passed: a node that does not verify is
    // a bug in this code, not damage.
    if (Status st = VerifyBtreeNode(b, blk, sb.metadata_uuid()); !st.ok())
      return Status::Internal(fmt::format("a rebuilt B+tree node does not verify: {}", st.message()));
  }
  for (const auto& [blk, b] : out) WALFS_RETURN_IF_ERROR(dev->Write(blk * sb.block_size, b.data(), b.size()));
  return BtreeRoot{level.front().second, static_cast<std::uint8_t>(height)};
}

namespace {

std::string Counts(const SalvagedTree& t, std::uint64_t filtered) {
  std::string s = fmt::format("{} node{} dropped", t.dropped_nodes, t.dropped_nodes == 1 ? "" : "s");
  if (t.resealed_nodes) s += fmt::format(", {} kept with its CRC recomputed", t.resealed_nodes);
  if (t.dropped_records + filtered) s += fmt::format(", {} records that did not check out dropped", t.dropped_records + filtered);
  return s;
}

}  // namespace

Result<std::vector<FsckProblem>> RepairInodeTrees(BlockDevice* dev, const Superblock& sb, std::uint64_t ino,
                                                  InodeCore* inode,
                                                  const std::function<bool(std::uint64_t)>& claimed) {
  std::vector<FsckProblem> out;
  if (inode->format == ForkFormat::kBtree && !S_ISDIR(inode->mode)) {
    WALFS_ASSIGN_OR_RETURN(SalvagedTree t, SalvageTree(dev, sb, ino, GetForkRoot(inode->literal, 0)));
    if (t.damaged) {
      std::uint64_t filtered = 0;
      WALFS_RETURN_IF_ERROR(KeepSoundExtents(dev, sb, t.blocks, claimed, &t.records, &filtered));
      const std::string what = fmt::format("inode {}: extent tree: {}", ino, t.first_damage);
      Result<BtreeRoot> root = WriteTree(dev, sb, ino, t.blocks, t.records);
      if (!root.ok()) {
        out.push_back({fmt::format("{} (not rebuilt: {})", what, root.status().message()), false});
      } else {
        std::uint64_t blocks = 0;
        for (const SalvagedRecord& r : t.records) blocks += DecodeExtent(r.value.data()).length;
        out.push_back({fmt::format("{}: extent tree rebuilt from what still reads ({} extents, {} blocks kept; {}; "
                                   "the file reads zeros where its dropped extents were)",
                                   what, t.records.size(), blocks, Counts(t, filtered)),
                       true});
        PutForkRoot(&inode->literal, 0, *root);
        inode->nextents = static_cast<std::uint32_t>(t.records.size());
        inode->nblocks = blocks;
      }
    }
  }
  if (inode->format == ForkFormat::kBtree && S_ISDIR(inode->mode)) {
    WALFS_ASSIGN_OR_RETURN(SalvagedTree t, SalvageTree(dev, sb, ino, GetForkRoot(inode->literal, 0)));
    if (t.damaged) {
      std::uint64_t filtered = 0;
      WALFS_RETURN_IF_ERROR(KeepSoundEntries(dev, sb, ino, &t.records, &filtered));
      const std::string what = fmt::format("inode {}: directory tree: {}", ino, t.first_damage);
      Result<BtreeRoot> root = WriteTree(dev, sb, ino, t.blocks, t.records);
      if (!root.ok()) {
        out.push_back({fmt::format("{} (not rebuilt: {})", what, root.status().message()), false});
      } else {
        out.push_back({fmt::format("{}: directory index rebuilt from what still reads ({} entries kept; {}; the "
                                   "inodes dropped entries named go to /lost+found)",
                                   what, t.records.size(), Counts(t, filtered)),
                       true});
        if (root->empty())
          DirIndex::SetLocal(inode, DecodeFixed64(inode->literal.data() + 16), {});  // a B+tree's parent at byte 16
        else
          PutForkRoot(&inode->literal, 0, *root);
      }
    }
  }
  if (inode->aformat == ForkFormat::kBtree && inode->fork_off == kXattrForkOffset) {
    WALFS_ASSIGN_OR_RETURN(SalvagedTree t, SalvageTree(dev, sb, ino, GetForkRoot(inode->literal, kXattrForkOffset)));
    if (t.damaged) {
      std::uint64_t filtered = 0;
      KeepWholeXattrs(&t.records, &filtered);
      const std::string what = fmt::format("inode {}: xattr tree: {}", ino, t.first_damage);
      Result<BtreeRoot> root = WriteTree(dev, sb, ino, t.blocks, t.records);
      if (!root.ok()) {
        out.push_back({fmt::format("{} (not rebuilt: {})", what, root.status().message()), false});
      } else {
        std::uint64_t values = 0;
        for (const SalvagedRecord& r : t.records) values += (r.key & 0xff) == 0;
        out.push_back({fmt::format("{}: xattr tree rebuilt from what still reads ({} xattrs kept; {})", what, values,
                                   Counts(t, filtered)),
                       true});
        PutForkRoot(&inode->literal, kXattrForkOffset, *root);
        if (root->empty()) {
          inode->aformat = ForkFormat::kNone;
          inode->fork_off = 0;
        }
      }
    }
  }
  return out;
}

}  // namespace walfs::fs
