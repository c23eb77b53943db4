// fsck phase 2, the inodes: each chunk's inodes decoded (with
// `clear_and_reconnect` those that do not are repaired or cleared) and
// checked against the map's free mask; each in-use inode's extent map and
// directory index walked and claimed, its xattr fork checked
// (fs/fsck_xattr.cc), and what the later phases need recorded.  A directory
// whose index cannot be read is emptied once the tree is checked.
#include <sys/stat.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/coding.h"
#include "fs/dir.h"
#include "fs/format/btree_format.h"
#include "fs/fsck_btree_repair.h"
#include "fs/fsck_phases.h"

namespace walfs::fs::fsck {

using namespace format;  // NOLINT(build/namespaces): the checker speaks the format's language

namespace {

// The inodes of chunk block `blkno` (read into *b) that do not decode:
// a CRC alone wrong is recomputed, anything else is cleared (never the
// root's); the block is written back, and *b holds it, if any changed.
Status RepairUnreadableInodes(Context* c, std::uint64_t blkno, std::vector<std::byte>* b) {
  const Superblock& sb = c->sb();
  std::uint32_t changed = 0;
  for (std::uint32_t s = 0; s < sb.inodes_per_block(); ++s) {
    const std::uint64_t ino = blkno * sb.inodes_per_block() + s;
    const std::span<std::byte> slot = std::span<std::byte>(*b).subspan(std::size_t{s} * kInodeSize, kInodeSize);
    Result<InodeCore> inode = DecodeInode(slot, ino);
    if (inode.ok()) continue;
    // Only its CRC wrong, everything else sound: the CRC is recomputed
    // (e2fsck's answer to a bad inode checksum).
    std::vector<std::byte> resealed(*b);
    SealInodeBlock(resealed);
    const std::span<std::byte> fixed = std::span<std::byte>(resealed).subspan(std::size_t{s} * kInodeSize, kInodeSize);
    if (DecodeInode(fixed, ino).ok()) {
      std::copy(fixed.begin(), fixed.end(), slot.begin());
      c->report->problems.push_back(
          {fmt::format("{}: checksum recomputed (the inode reads otherwise)", inode.status().message()), true});
      ++changed;
      continue;
    }
    if (ino == sb.root_ino) continue;  // never cleared: reported, left to a person
    c->report->problems.push_back({fmt::format("{}: cleared (a free inode now)", inode.status().message()), true});
    EncodeInode(FreeInode(ino, 0), slot);
    ++changed;
  }
  if (changed == 0) return Status::Ok();
  return c->dev->Write(blkno * sb.block_size, b->data(), b->size());
}

// A file's (or symlink's) extents, inline or in a B+tree, each claimed for
// the inode; their count and the blocks they map agree with the inode's.
void ClaimDataFork(Context* c, std::uint64_t ino, const InodeCore& inode) {
  const Superblock& sb = c->sb();
  std::uint64_t blocks = 0, count = 0;
  auto claim = [&](const Extent& x) {
    if (x.disk_block < sb.data_start() || x.disk_block + x.length > sb.total_blocks) {
      c->Problem(fmt::format("inode {}: extent at file block {} maps blocks {}+{} outside the data area", ino,
                             x.file_block, x.disk_block, x.length));
      return;
    }
    c->Claim(x.disk_block, x.length, fmt::format("inode {}", ino));
    blocks += x.length;
    ++count;
  };
  if (inode.format == ForkFormat::kExtents) {
    for (std::uint32_t e = 0; e < inode.nextents; ++e)
      claim(DecodeExtent(inode.literal.data() + std::size_t{e} * kExtentSize));
  } else {
    const BtreeRoot root = GetForkRoot(inode.literal, 0);
    std::uint64_t next_free = 0;
    WalkTree(c, ino, "extent", root.block, root.levels, [&](std::uint64_t key, std::string_view v) {
      if (v.size() != kExtentSize) {
        c->Problem(fmt::format("inode {}: extent record of {} bytes", ino, v.size()));
        return;
      }
      const Extent x = DecodeExtent(v.data());
      if (x.file_block != key || x.file_block < next_free)
        c->Problem(fmt::format("inode {}: extent at file block {} overlaps or is misfiled", ino, x.file_block));
      next_free = x.file_block + x.length;
      claim(x);
    });
    if (count != inode.nextents)
      c->Problem(fmt::format("inode {} has {} extents but counts {}", ino, count, inode.nextents));
  }
  if (blocks != inode.nblocks)
    c->Problem(fmt::format("inode {} maps {} blocks but counts {}", ino, blocks, inode.nblocks));
}

// A directory's entries, inline or in its B+tree index (walked, claimed,
// each entry under its name's hash), into *info for phase 4.  With
// `clear_and_reconnect`, an index that cannot be read whole is to be
// emptied (EmptyUnreadableDirectories).
void ReadDirectory(Context* c, std::uint64_t ino, const InodeCore& inode, InodeInfo* info) {
  FsckReport* r = c->report;
  ++r->directories;
  if (inode.format == ForkFormat::kLocal) {
    info->local_dir = true;
    const std::uint32_t data_room = inode.fork_off ? inode.fork_off : kLiteralSize;
    const std::string_view data = std::string_view(inode.literal).substr(0, std::min<std::uint64_t>(inode.size, data_room));
    if (Status st = DecodeLocalDir(data, &info->parent, &info->entries); !st.ok())
      c->Problem(fmt::format("directory {}: {}", ino, st.message()));
    else
      info->entries_known = true;
    return;
  }
  if (inode.format != ForkFormat::kBtree) {
    c->Problem(fmt::format("directory {}: {} format", ino, ForkFormatName(inode.format)));
    return;
  }
  const BtreeRoot root = GetForkRoot(inode.literal, 0);
  info->parent = DecodeFixed64(inode.literal.data() + 16);
  bool ok = true;
  const std::size_t problems_before = r->problems.size();
  const bool walked = WalkTree(c, ino, "directory", root.block, root.levels, [&](std::uint64_t key, std::string_view v) {
    if (v.size() < 10 || v.size() > 9 + kMaxNameLen) {
      c->Problem(fmt::format("directory {}: entry of {} bytes", ino, v.size()));
      ok = false;
      return;
    }
    DirEntry e;
    e.ino = DecodeFixed64(v.data());
    e.ftype = static_cast<std::uint8_t>(v[8]);
    e.name.assign(v.substr(9));
    if ((key & ~std::uint64_t{0xffff}) != DirHashKey(e.name)) {
      c->Problem(fmt::format("directory {}: \"{}\" is filed under the wrong hash", ino, e.name));
      ok = false;
    }
    info->entries.push_back(std::move(e));
  });
  info->entries_known = walked && ok;
  if (!info->entries_known && c->options.clear_and_reconnect) {
    // Its index cannot be read whole: emptied (EmptyUnreadableDirectories),
    // and the inodes its entries named are reconnected to /lost+found by
    // number -- names lost, files kept.
    for (std::size_t p = problems_before; p < r->problems.size(); ++p) {
      r->problems[p].message += ": directory emptied";
      r->problems[p].repaired = true;
    }
    if (r->problems.size() == problems_before)
      r->problems.push_back({fmt::format("directory {}: its index cannot be read: emptied", ino), true});
    c->empties.push_back(ino);
  }
}

// An inode in use: its B+trees rebuilt first if damaged (with
// `clear_and_reconnect`), then recorded, and its forks checked.
Status CheckInUseInode(Context* c, std::uint64_t ino, InodeCore* inode) {
  const Superblock& sb = c->sb();
  FsckReport* r = c->report;
  if (c->options.clear_and_reconnect) {
    // A damaged extent map or xattr tree is rebuilt from what still
    // reads (fs/fsck_btree_repair.h) before it is walked and claimed.
    WALFS_ASSIGN_OR_RETURN(std::vector<FsckProblem> rebuilt,
                           RepairInodeTrees(c->dev, sb, ino, inode, [&](std::uint64_t blk) {
                             return blk < c->claimed.size() && c->claimed[blk];
                           }));
    if (std::any_of(rebuilt.begin(), rebuilt.end(), [](const FsckProblem& p) { return p.repaired; }))
      WALFS_RETURN_IF_ERROR(c->RewriteInode(ino, [&](InodeCore* n) {
        *n = *inode;
        return Status::Ok();
      }));
    for (FsckProblem& p : rebuilt) r->problems.push_back(std::move(p));
  }
  ++r->inodes_in_use;
  InodeInfo& info = c->inodes[ino];
  info.mode = inode->mode;
  info.nlink = inode->nlink;
  info.next_unlinked = inode->next_unlinked;
  CheckXattrFork(c, ino, *inode);
  if (inode->format == ForkFormat::kExtents || (inode->format == ForkFormat::kBtree && !S_ISDIR(inode->mode)))
    ClaimDataFork(c, ino, *inode);
  if (S_ISDIR(inode->mode)) ReadDirectory(c, ino, *inode, &info);
  return Status::Ok();
}

}  // namespace

// With `repair`, the chunk's inodes are the truth for its map record
// (*rec): an inode that decodes is free or in use as it says -- an inode
// in use that the map called free would be handed out again over a live
// file.  An inode that does not decode is repaired first: one whose CRC
// alone is wrong gets it recomputed; any other (never written back before
// the log was lost, or destroyed) is cleared, as e2fsck and xfs_repair
// clear inodes they cannot read -- its data is unreachable anyway, and
// the entries naming it and the blocks it held are repaired as such --
// except the root directory's, which is left to a person.
Status ScanChunk(Context* c, std::uint32_t agno, ImapRecord* rec) {
  const Superblock& sb = c->sb();
  const FsckOptions& o = c->options;
  AgState& ag = c->ags[agno];
  const std::uint64_t first = sb.AgStart(agno) + rec->start;
  c->Claim(first, sb.blocks_per_chunk(), fmt::format("the inode chunk at block {}", first));
  std::vector<std::byte> b;
  for (std::uint32_t bi = 0; bi < sb.blocks_per_chunk(); ++bi) {
    WALFS_RETURN_IF_ERROR(c->ReadBlock(first + bi, &b));
    if (o.clear_and_reconnect) WALFS_RETURN_IF_ERROR(RepairUnreadableInodes(c, first + bi, &b));
    for (std::uint32_t s = 0; s < sb.inodes_per_block(); ++s) {
      const std::uint32_t index = bi * sb.inodes_per_block() + s;
      const std::uint64_t ino = (first + bi) * sb.inodes_per_block() + s;
      const std::uint64_t bit = std::uint64_t{1} << index;
      bool map_free = (rec->free_mask & bit) != 0;
      auto inode = DecodeInode(std::span<const std::byte>(b).subspan(std::size_t{s} * kInodeSize, kInodeSize), ino);
      if (!inode.ok()) {
        if (map_free) ++ag.free_inodes;
        c->Problem(std::string(inode.status().message()));
        continue;
      }
      if (inode->free() != map_free) {
        c->report->problems.push_back({fmt::format("inode {} is {} but the inode map says {}{}", ino,
                                                   inode->free() ? "free" : "in use", map_free ? "free" : "in use",
                                                   o.repair ? ": map corrected" : ""),
                                       o.repair});
        if (o.repair) {
          map_free = inode->free();
          rec->free_mask = map_free ? rec->free_mask | bit : rec->free_mask & ~bit;
          rec->free_count = static_cast<std::uint32_t>(__builtin_popcountll(rec->free_mask));
        }
      }
      if (map_free) ++ag.free_inodes;
      if (inode->free()) continue;
      WALFS_RETURN_IF_ERROR(CheckInUseInode(c, ino, &*inode));
    }
  }
  return Status::Ok();
}

// -y's repair of the directories ReadDirectory found unreadable, made
// after the tree and the link counts were checked: each is emptied, its
// link count 2 (walfs has no offline B+tree editor; nothing reachable is
// freed, and what its entries named is reconnected through a mount).
Status EmptyUnreadableDirectories(Context* c) {
  for (const std::uint64_t dir : c->empties) {
    WALFS_RETURN_IF_ERROR(c->RewriteInode(dir, [&](InodeCore* n) {
      DirIndex::SetLocal(n, DecodeFixed64(n->literal.data() + 16), {});  // a B+tree's parent at byte 16
      n->nlink = 2;
      if (n->fork_off == 0) n->nblocks = 0;
      return Status::Ok();
    }));
  }
  return Status::Ok();
}

}  // namespace walfs::fs::fsck
