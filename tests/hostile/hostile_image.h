// Hostile images (docs/hostile_images.md): a populated walfs image built on
// a MemoryDevice, and a catalogue of its metadata blocks by kind, so that a
// mutator can pick "an extent B+tree node" or "a log record" and damage it.
//
//   WALFS_ASSIGN_OR_RETURN(BaseImage base, BuildBaseImage(Flavour::kCrashed));
//   for (const MetaBlock& b : base.blocks[static_cast<int>(BlockKind::kDirNode)]) ...
//
// The image holds: a directory big enough to be a multi-level B+tree, a
// small inline one, a file whose extent map is a B+tree (many extents with
// holes), unwritten (fallocated) extents, a file with small and large
// xattrs (an xattr B+tree), short and long symlinks, a hard link, a device
// node; the crashed flavour also an unlinked-but-open file and a log with
// committed transactions that recovery must replay.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/block_device_memory.h"
#include "base/frozen_image.h"
#include "base/status.h"
#include "fs/format/superblock_format.h"

namespace walfs::hostile {

enum class Flavour : std::uint8_t {
  kClean = 0,    // cleanly unmounted: the log holds an unmount record
  kCrashed = 1,  // the Filesystem destroyed without Unmount: a dirty log
  // Crashed too, but the last session's changes are made in steps, each its
  // own checkpoint forced to the log (BaseImage::steps), so a damaged log
  // can be read against which steps a recovery must keep
  // (tests/hostile/hostile_log_damage.h).
  kLogDamage = 2,
};
std::string_view FlavourName(Flavour f);

// What a metadata block is, as the mutator chooses targets.
enum class BlockKind : std::uint8_t {
  kSuperblock = 0,
  kAgHeader,
  kBitmap,
  kImap,
  kInodeChunk,  // an inode chunk block holding at least one in-use inode
  kDirNode,     // a node of the big directory's B+tree
  kExtentNode,  // a node of the many-extent file's map
  kXattrNode,   // a node of the xattr file's xattr tree
  kLogRecord,   // a record between the log's tail and head (or the unmount record)
  kCount,
};
inline constexpr int kBlockKinds = static_cast<int>(BlockKind::kCount);
std::string_view BlockKindName(BlockKind k);

// One target: a metadata block (byte offset and length of the block), or a
// log record (its offset and on-disk length, whole sectors).
struct MetaBlock {
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
  std::uint64_t blkno = 0;        // filesystem block (records: the first block they touch)
  std::vector<std::uint32_t> in_use_inodes{};  // kInodeChunk: slots of in-use inodes
  std::uint64_t lsn = 0;          // kLogRecord: the record's LSN (journal/lsn.h)
};

// kLogDamage: one step of the crashed session, and where the log's head was
// once its checkpoint was on disk (every record of the step lies before it).
struct LogStep {
  std::string what;
  std::uint64_t head = 0;  // a journal::Lsn
};

struct BaseImage {
  Flavour flavour = Flavour::kClean;
  std::vector<std::byte> image;
  // The same bytes, sealed: what rounds make their devices from, copy on
  // write (a round costs the pages it writes, not a copy of the image: under
  // TSan three 24 MiB copies a round were most of the campaigns' time).
  std::shared_ptr<const FrozenImage> frozen;
  fs::format::Superblock sb;
  std::array<std::vector<MetaBlock>, kBlockKinds> blocks;
  std::uint64_t big_dir_ino = 0, extent_file_ino = 0, xattr_file_ino = 0;
  std::vector<LogStep> steps;  // kLogDamage only, in the order they were made
};

inline constexpr std::uint64_t kImageBytes = 24ull << 20;

// An image damaged by a mutator, as the base's frozen bytes and the range
// the mutator may have changed.  Each Device() is a fresh copy-on-write
// device holding it: a round's fsck, mount and repair each get their own.
struct DamagedImage {
  std::shared_ptr<const FrozenImage> base;
  std::uint64_t offset = 0;
  std::vector<std::byte> bytes;  // the image's bytes from offset on, as damaged

  std::unique_ptr<MemoryDevice> Device() const;
};

// A private writable view of a base image (copy on write: only the pages a
// mutator touches are copied), for a mutator to damage:
//
//   ScratchImage scratch(base);
//   Mutation m = Mutate(base, seed, scratch.bytes());
//   DamagedImage damaged = scratch.Damaged(m.offset, m.length);
class ScratchImage {
 public:
  explicit ScratchImage(const BaseImage& base);
  std::span<std::byte> bytes() { return {view_.get(), size_}; }
  // The image as damaged, where the mutator changed nothing outside bytes
  // [offset, offset + length).
  DamagedImage Damaged(std::uint64_t offset, std::uint64_t length) const;

 private:
  std::shared_ptr<const FrozenImage> base_;
  std::size_t size_;
  Mapping view_;
};

Result<BaseImage> BuildBaseImage(Flavour flavour);

}  // namespace walfs::hostile
