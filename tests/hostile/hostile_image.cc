#include "tests/hostile/hostile_image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>

#include <fmt/format.h>

#include "base/block_device_memory.h"
#include "base/coding.h"
#include "fs/filesystem.h"
#include "fs/format/ag_format.h"
#include "fs/format/block_header.h"
#include "fs/format/btree_format.h"
#include "fs/format/inode_format.h"
#include "fs/mkfs.h"
#include "journal/log_format.h"
#include "journal/log_head.h"
#include "journal/log_reader.h"
#include "journal/log_region.h"
#include "tests/hostile/hostile_log_damage.h"

namespace walfs::hostile {

using fs::Filesystem;
using fs::format::Superblock;

std::string_view FlavourName(Flavour f) {
  switch (f) {
    case Flavour::kClean: return "clean";
    case Flavour::kCrashed: return "crashed";
    case Flavour::kLogDamage: return "log_damage";
  }
  return "?";
}

std::string_view BlockKindName(BlockKind k) {
  switch (k) {
    case BlockKind::kSuperblock: return "superblock";
    case BlockKind::kAgHeader: return "ag_header";
    case BlockKind::kBitmap: return "bitmap";
    case BlockKind::kImap: return "imap";
    case BlockKind::kInodeChunk: return "inode_chunk";
    case BlockKind::kDirNode: return "dir_node";
    case BlockKind::kExtentNode: return "extent_node";
    case BlockKind::kXattrNode: return "xattr_node";
    case BlockKind::kLogRecord: return "log_record";
    case BlockKind::kCount: break;
  }
  return "?";
}

namespace {

Status Check(const Status& s, std::string_view what) {
  if (s.ok()) return s;
  return Status::Internal(fmt::format("building the base image: {}: {}", what, s.ToString()));
}
template <typename T>
Result<T> Check(Result<T> r, std::string_view what) {
  if (r.ok()) return r;
  return Status::Internal(fmt::format("building the base image: {}: {}", what, r.status().ToString()));
}

struct Built {
  std::uint64_t big_dir = 0, extent_file = 0, xattr_file = 0;
};

// Populates a freshly mounted filesystem.  Lookups are never forgotten: the
// image is only ever unmounted or abandoned, so the counts do not matter.
Result<Built> Populate(Filesystem* fs) {
  const fs::Caller me{};
  const std::uint64_t root = fs->root();
  Built b;
  const std::uint32_t bs = fs->superblock().block_size;

  // A directory big enough for a B+tree of more than one level.
  WALFS_ASSIGN_OR_RETURN(struct stat big, Check(fs->Mkdir(me, root, "big", 0755), "mkdir big"));
  b.big_dir = big.st_ino;
  for (int i = 0; i < 400; ++i) {
    const std::string name = fmt::format("entry-with-a-longish-name-{:04}", i);
    if (i % 10 == 0)
      WALFS_RETURN_IF_ERROR(Check(fs->Mkdir(me, b.big_dir, name, 0755).status(), "mkdir entry"));
    else
      WALFS_RETURN_IF_ERROR(Check(fs->Mknod(me, b.big_dir, name, S_IFREG | 0644, 0).status(), "mknod entry"));
  }
  // A small inline directory with a few kinds of entry.
  WALFS_ASSIGN_OR_RETURN(struct stat small, Check(fs->Mkdir(me, root, "small", 0755), "mkdir small"));
  WALFS_RETURN_IF_ERROR(Check(fs->Symlink(me, small.st_ino, "short-link", "../big").status(), "symlink"));
  const std::string long_target(600, 'x');
  WALFS_RETURN_IF_ERROR(Check(fs->Symlink(me, small.st_ino, "long-link", long_target).status(), "long symlink"));
  WALFS_RETURN_IF_ERROR(
      Check(fs->Mknod(me, small.st_ino, "fifo", S_IFIFO | 0644, 0).status(), "mknod fifo"));
  WALFS_RETURN_IF_ERROR(
      Check(fs->Mknod(me, small.st_ino, "chardev", S_IFCHR | 0600, makedev(1, 3)).status(), "mknod chr"));

  // A file whose map is a B+tree: a block written every other block.
  WALFS_ASSIGN_OR_RETURN(struct stat ext, Check(fs->Mknod(me, root, "extents", S_IFREG | 0644, 0), "mknod extents"));
  b.extent_file = ext.st_ino;
  std::string block(bs, 'e');
  for (int i = 0; i < 160; ++i) {
    block[0] = static_cast<char>('a' + i % 26);
    WALFS_RETURN_IF_ERROR(
        Check(fs->Write(b.extent_file, std::uint64_t{2} * i * bs, block.data(), block.size()).status(), "write extent"));
  }
  // Unwritten extents past the end and in a hole.
  WALFS_RETURN_IF_ERROR(Check(fs->Fallocate(b.extent_file, FALLOC_FL_KEEP_SIZE, std::uint64_t{400} * bs, 8 * bs),
                              "fallocate keep-size"));
  WALFS_ASSIGN_OR_RETURN(struct stat sparse, Check(fs->Mknod(me, root, "sparse", S_IFREG | 0644, 0), "mknod sparse"));
  WALFS_RETURN_IF_ERROR(Check(fs->Fallocate(sparse.st_ino, 0, 4 * bs, 16 * bs), "fallocate"));
  WALFS_RETURN_IF_ERROR(Check(fs->Write(sparse.st_ino, 64 * bs, block.data(), 100).status(), "write sparse"));
  // A hard link.
  WALFS_RETURN_IF_ERROR(Check(fs->Link(sparse.st_ino, small.st_ino, "hardlink").status(), "link"));

  // Xattrs, small and large: a B+tree of several nodes.
  WALFS_ASSIGN_OR_RETURN(struct stat xf, Check(fs->Mknod(me, root, "xattrs", S_IFREG | 0644, 0), "mknod xattrs"));
  b.xattr_file = xf.st_ino;
  WALFS_RETURN_IF_ERROR(Check(fs->Write(b.xattr_file, 0, "hello\n", 6).status(), "write xattrs"));
  for (int i = 0; i < 40; ++i)
    WALFS_RETURN_IF_ERROR(Check(fs->SetXattr(b.xattr_file, fmt::format("user.small{}", i),
                                             fmt::format("value number {}", i), 0), "setxattr small"));
  WALFS_RETURN_IF_ERROR(Check(fs->SetXattr(b.xattr_file, "user.large", std::string(8 * bs, 'L'), 0), "setxattr large"));
  WALFS_RETURN_IF_ERROR(Check(fs->SetXattr(root, "user.onroot", "r", 0), "setxattr root"));

  return b;
}

// The crashed flavour's second mount: changes left in the log only.  An
// unlinked file still in use (its lookup is never forgotten), renames,
// unlinks and an xattr, then an fsync forces the log; the filesystem is
// then abandoned without unmounting.
Status CrashPhase(Filesystem* fs, const Built& b) {
  const fs::Caller me{};
  const std::uint64_t root = fs->root();
  const std::string block(fs->superblock().block_size, 'o');
  WALFS_ASSIGN_OR_RETURN(struct stat orphan, Check(fs->Mknod(me, root, "orphan", S_IFREG | 0644, 0), "mknod orphan"));
  WALFS_RETURN_IF_ERROR(Check(fs->Write(orphan.st_ino, 0, block.data(), block.size()).status(), "write orphan"));
  WALFS_RETURN_IF_ERROR(Check(fs->Unlink(root, "orphan"), "unlink orphan"));
  WALFS_RETURN_IF_ERROR(Check(fs->Rename(b.big_dir, "entry-with-a-longish-name-0001", root, "renamed", 0), "rename"));
  for (int i = 1; i < 20; i += 2)  // odd: files (every tenth entry is a directory)
    WALFS_RETURN_IF_ERROR(Check(fs->Unlink(b.big_dir, fmt::format("entry-with-a-longish-name-{:04}", 100 + i)),
                                "unlink entry"));
  WALFS_RETURN_IF_ERROR(Check(fs->SetXattr(b.xattr_file, "user.late", "after the checkpoint", 0), "setxattr late"));
  WALFS_RETURN_IF_ERROR(Check(fs->Fsync(b.xattr_file, false), "fsync"));
  return Status::Ok();
}

bool IsNode(std::span<const std::byte> block, std::uint64_t blkno, const fs::format::Uuid& uuid) {
  const fs::format::BlockHeader h = fs::format::DecodeBlockHeader(block);
  return (h.magic == fs::format::kBtreeLeafMagic || h.magic == fs::format::kBtreeNodeMagic) &&
         h.blkno == blkno && h.uuid == uuid;
}

void Catalogue(BaseImage* base, MemoryDevice* dev) {
  const Superblock& sb = base->sb;
  const std::uint32_t bs = sb.block_size;
  auto block_at = [&](std::uint64_t blkno) {
    return std::span<const std::byte>(base->image.data() + blkno * bs, bs);
  };
  auto add = [&](BlockKind k, std::uint64_t blkno) {
    base->blocks[static_cast<int>(k)].push_back(MetaBlock{.offset = blkno * bs, .length = bs, .blkno = blkno});
  };
  base->blocks[static_cast<int>(BlockKind::kSuperblock)].push_back(
      MetaBlock{.offset = 0, .length = fs::format::kSuperSize, .blkno = 0});
  for (std::uint32_t agno = 0; agno < sb.ag_count; ++agno) {
    const std::uint64_t start = sb.AgStart(agno);
    add(BlockKind::kAgHeader, start);
    // Only the map blocks written (uninit_ag): the others are not metadata
    // yet -- nothing reads them -- so damage there is no test.
    auto header = fs::format::DecodeAgHeader(block_at(start), sb, agno);
    const std::uint32_t bitmap_blocks = header.ok() ? fs::format::BitmapBlocksOnDisk(sb, *header) : sb.bitmap_blocks;
    const std::uint32_t imap_blocks = header.ok() ? fs::format::ImapBlocksOnDisk(sb, *header) : sb.imap_blocks;
    for (std::uint32_t i = 0; i < bitmap_blocks; ++i) add(BlockKind::kBitmap, start + fs::format::AgBitmapStart() + i);
    for (std::uint32_t i = 0; i < imap_blocks; ++i) {
      const std::uint64_t imap = start + fs::format::AgImapStart(sb) + i;
      add(BlockKind::kImap, imap);
      for (std::uint32_t slot = 0; slot < fs::format::RecordsPerImapBlock(bs); ++slot) {
        const fs::format::ImapRecord r = fs::format::GetImapRecord(block_at(imap), slot);
        if (r.start == 0) continue;
        for (std::uint32_t c = 0; c < sb.blocks_per_chunk(); ++c) {
          const std::uint64_t blkno = start + r.start + c;
          MetaBlock m{.offset = blkno * bs, .length = bs, .blkno = blkno};
          for (std::uint32_t s = 0; s < sb.inodes_per_block(); ++s) {
            auto in = fs::format::DecodeInode(block_at(blkno).subspan(s * sb.inode_size, sb.inode_size),
                                              blkno * sb.inodes_per_block() + s);
            if (in.ok() && !in->free()) m.in_use_inodes.push_back(s);
          }
          if (!m.in_use_inodes.empty()) base->blocks[static_cast<int>(BlockKind::kInodeChunk)].push_back(m);
        }
      }
    }
  }
  // B+tree nodes, by owner.
  const std::map<std::uint64_t, BlockKind> owners = {{base->big_dir_ino, BlockKind::kDirNode},
                                                     {base->extent_file_ino, BlockKind::kExtentNode},
                                                     {base->xattr_file_ino, BlockKind::kXattrNode}};
  for (std::uint64_t blkno = sb.data_start(); blkno < sb.total_blocks; ++blkno) {
    if (!IsNode(block_at(blkno), blkno, sb.metadata_uuid())) continue;
    const auto it = owners.find(fs::format::DecodeBlockHeader(block_at(blkno)).owner);
    if (it != owners.end()) add(it->second, blkno);
  }
  // Log records from the tail to the head; a clean log's unmount record.
  const journal::LogRegion region{.device = dev, .offset = sb.log_offset(), .sectors = sb.log_sectors()};
  auto pos = journal::FindLogPosition(region);
  if (!pos.ok()) return;
  auto add_record = [&](const journal::LogRecordAt& rec) {
    const std::uint32_t sector = journal::SectorOf(rec.lsn);
    if (sector + rec.sectors > region.sectors) return;  // wraps: keep the mutator simple
    const std::uint64_t off = region.offset + std::uint64_t{sector} * journal::kLogSectorSize;
    base->blocks[static_cast<int>(BlockKind::kLogRecord)].push_back(
        MetaBlock{.offset = off, .length = rec.sectors * journal::kLogSectorSize, .blkno = off / bs, .lsn = rec.lsn});
  };
  if (pos->clean || pos->tail == pos->head) {
    if (pos->last_record != journal::kNullLsn) {
      auto rec = journal::ReadRecordAt(region, journal::SectorOf(pos->last_record), journal::CycleOf(pos->last_record));
      if (rec.ok() && rec->record.kind == journal::DecodedRecord::Kind::kOk) add_record(*rec);
    }
    return;
  }
  journal::LogReader reader(region, pos->tail, pos->head);
  journal::LogRecordAt rec;
  while (reader.Next(&rec)) add_record(rec);
}

}  // namespace

Result<BaseImage> BuildBaseImage(Flavour flavour) {
  BaseImage base;
  base.flavour = flavour;
  auto dev = std::make_unique<MemoryDevice>(kImageBytes);
  fs::MountOptions kMount{.image = {}, .buffer_cache = 1024};
  if (flavour == Flavour::kLogDamage) {
    // No checkpoint but the forced ones (each step's Sync, the unmount):
    // the log's records then fall the same way every run, so a seed
    // damages the same record.
    kMount.commit_interval_s = 0;
    kMount.lazy_commit_ms = 0;
  }
  // Three AGs: a new directory takes the next AG in turn from AG 0 at every
  // mount (fs/ialloc.h), so the log-damage steps' two directories and their
  // files land in AGs 0 and 1, and AG 2's header is one the log never
  // rewrites -- the block FsckRebuild's specs damage (replay would mend a
  // logged one before fsck saw it).
  WALFS_ASSIGN_OR_RETURN(Superblock sb, Check(fs::MakeFilesystem(dev.get(), {.block_size = 1024, .ag_count = 3,
                                                                             .label = "hostile", .now_s = 1}),
                                              "mkfs"));
  {
    WALFS_ASSIGN_OR_RETURN(auto fs, Check(Filesystem::MountDevice(dev.get(), kMount), "mount"));
    WALFS_ASSIGN_OR_RETURN(Built b, Populate(fs.get()));
    base.big_dir_ino = b.big_dir;
    base.extent_file_ino = b.extent_file;
    base.xattr_file_ino = b.xattr_file;
    WALFS_RETURN_IF_ERROR(Check(fs->Unmount(), "unmount"));
  }
  if (flavour == Flavour::kCrashed) {
    // Everything above is written back; what follows is in the log only.
    WALFS_ASSIGN_OR_RETURN(auto fs, Check(Filesystem::MountDevice(dev.get(), kMount), "remount"));
    WALFS_RETURN_IF_ERROR(CrashPhase(fs.get(), Built{base.big_dir_ino, base.extent_file_ino, base.xattr_file_ino}));
    // The destructor halts the log: a crash.
  }
  if (flavour == Flavour::kLogDamage) {
    // As crashed, in steps, each its own checkpoint.
    WALFS_ASSIGN_OR_RETURN(auto fs, Check(Filesystem::MountDevice(dev.get(), kMount), "remount"));
    WALFS_RETURN_IF_ERROR(Check(LogDamagePhase(fs.get(), base, dev.get(), &base.steps), "log-damage steps"));
  }
  std::vector<std::byte> sbb(fs::format::kSuperSize);
  WALFS_RETURN_IF_ERROR(dev->Read(0, sbb.data(), sbb.size()));
  WALFS_ASSIGN_OR_RETURN(base.sb, Check(fs::format::DecodeSuperblock(sbb, kImageBytes), "superblock"));
  (void)sb;
  base.image = dev->Contents();
  WALFS_ASSIGN_OR_RETURN(base.frozen, Check(FrozenImage::Make(base.image.size(),
                                                              [&](std::byte* p) {
                                                                std::copy(base.image.begin(), base.image.end(), p);
                                                                return Status::Ok();
                                                              }),
                                            "freezing the image"));
  Catalogue(&base, dev.get());
  for (int k = 0; k < kBlockKinds; ++k)
    if (base.blocks[k].empty())
      return Status::Internal(fmt::format("the {} base image has no {} block to mutate", FlavourName(flavour),
                                          BlockKindName(static_cast<BlockKind>(k))));
  return base;
}

std::unique_ptr<MemoryDevice> DamagedImage::Device() const {
  const ImagePatch patch{.offset = offset, .bytes = bytes};
  return std::make_unique<MemoryDevice>(base, std::span<const ImagePatch>(&patch, 1));
}

ScratchImage::ScratchImage(const BaseImage& base)
    : base_(base.frozen), size_(base.frozen->size()), view_(base.frozen->MapPrivate()) {}

DamagedImage ScratchImage::Damaged(std::uint64_t offset, std::uint64_t length) const {
  if (offset > size_ || length > size_ - offset) std::abort();  // a mutator's range outside the image: a bug
  return DamagedImage{.base = base_, .offset = offset, .bytes = std::vector<std::byte>(view_.get() + offset, view_.get() + offset + length)};
}

}  // namespace walfs::hostile
