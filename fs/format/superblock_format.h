// The superblock: block 0 of the image (docs/disk_format.md, "Superblock").
// Its first 512 bytes hold the fields below; the rest of the block is zero.
//
//   0 magic u32 "WLFS"      4 crc u32           8 version u32      12 sb_size u32 (512)
//  16 compat u32           20 ro_compat u32    24 incompat u32    28 flags u32 (bit 0 clean)
//  32 uuid[16]
//  48 block_size u32       52 inode_size u32   56 total_blocks u64
//  64 ag_count u32         68 ag_blocks u32    72 log_start u64 (block)
//  80 log_blocks u32       84 inodes_per_chunk u32
//  88 root_ino u64         96 bitmap_blocks u32 (per AG)  100 imap_blocks u32 (per AG)
// 104 created_s i64       112 mounted_s i64   120 free_blocks u64 (lazy)
// 128 icount u64          136 ifree u64 (lazy) 144 label[64]  208 meta_uuid[16]
// 224 errors: ErrorRecord (below), 136 bytes; all zero: none recorded
// 360 reserved[152], zero
//
// The counters are lazy (XFS lazy-count): exact after a clean unmount;
// otherwise mount recomputes them from the AG headers.
//
// uuid is the filesystem's identity (blkid, fstab's UUID=, statfs's f_fsid);
// every metadata block's header carries the UUID the filesystem was made
// with.  walfs-admin -U changes the identity without rewriting those blocks,
// as xfs_admin -U does on XFS v5: the UUID the blocks carry moves to
// meta_uuid and the incompat bit kIncompatMetaUuid says to check blocks
// against it (metadata_uuid()).  Setting the UUID back to meta_uuid clears
// the bit.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>

#include <fmt/core.h>

#include "base/status.h"
#include "fs/format/block_header.h"

namespace walfs::fs::format {

inline constexpr std::uint32_t kSuperMagic = 0x53464c57;  // "WLFS"
inline constexpr std::uint32_t kFormatVersion = 1;
inline constexpr std::uint32_t kSuperSize = 512;
inline constexpr std::uint32_t kSuperClean = 1u << 0;
inline constexpr std::uint32_t kMinBlockSize = 1024;
inline constexpr std::uint32_t kMaxBlockSize = 32768;  // at most a chunk of inodes per block
inline constexpr std::uint32_t kInodeSize = 512;
inline constexpr std::uint32_t kInodesPerChunk = 64;
inline constexpr std::size_t kLabelSize = 64;
inline constexpr std::uint32_t kMaxAgCount = 65536;
// Feature bits this code understands.  An unknown incompat bit refuses the
// mount; an unknown ro_compat bit allows only a read-only mount.
// Every AG header holds a copy of the superblock (EncodeAgHeader), from
// which fsck.walfs rebuilds a primary that does not decode, as xfs_repair
// uses XFS's secondary superblocks and e2fsck ext4's backups.  Compat: a
// walfs that predates it ignores the copies, and any AG header it writes
// (fsck's rebuild) simply lacks one.
inline constexpr std::uint32_t kCompatSuperCopies = 1u << 0;
inline constexpr std::uint32_t kKnownCompat = kCompatSuperCopies;
inline constexpr std::uint32_t kKnownRoCompat = 0;
// The metadata blocks carry meta_uuid, not uuid (walfs-admin -U).
inline constexpr std::uint32_t kIncompatMetaUuid = 1u << 0;
// AG bitmap and inode-map blocks are written as they are first used: an AG
// header counts how many of each are on disk, and the rest are what an
// empty AG's would be (ext4's uninit_bg; docs/disk_format.md, "Blocks
// written as they are first used").  An older walfs would read the blocks
// never written as damage.
inline constexpr std::uint32_t kIncompatUninitAg = 1u << 1;
inline constexpr std::uint32_t kKnownIncompat = kIncompatMetaUuid | kIncompatUninitAg;

// A superblock field that a mounted filesystem changes while its other
// threads read it: total_blocks and ag_count, which walfs-growfs raises
// (fs/filesystem_grow.cc).  It reads and writes like the integer it holds,
// but every access is atomic (acquire/release), so readers never race
// with the grow (TSan).  The grow stores total_blocks before ag_count: a
// reader that loads ag_count and then total_blocks sees a total at least
// that large (AgLength below relies on it, and clamps for the reverse).
template <typename T>
class MountedField {
 public:
  MountedField(T v = 0) : v_(v) {}  // NOLINT: implicit, as the plain field was
  MountedField(const MountedField& o) : v_(o.load()) {}
  MountedField& operator=(const MountedField& o) {
    store(o.load());
    return *this;
  }
  MountedField& operator=(T v) {
    store(v);
    return *this;
  }
  // A load then a store, not one atomic step: only for the field's one
  // writer (mkfs, walfs-admin, growfs under its lock, tests).
  MountedField& operator+=(T v) {
    store(load() + v);
    return *this;
  }
  MountedField& operator-=(T v) {
    store(load() - v);
    return *this;
  }
  operator T() const { return load(); }  // NOLINT: reads like the plain field
  T load() const { return v_.load(std::memory_order_acquire); }
  void store(T v) { v_.store(v, std::memory_order_release); }

 private:
  std::atomic<T> v_;
};

// The damage a mount found (ext4's s_error_count, s_first_error_*,
// s_last_error_*): fsck.walfs -p checks an image that has any even when it
// is marked clean, and a repair that leaves nothing behind clears it
// (docs/disk_format.md, "Errors found while mounted").  On disk at
// kSuperErrorsOffset:
//
//   0 count u32   4 zero u32   8 first ErrorEvent   72 last ErrorEvent
//
// and an ErrorEvent is 64 bytes:
//
//   0 time_s i64   8 ino u64 (0: none)   16 blkno u64 (0: none)
//  24 err u32 (the errno the caller got)   28 zero u32   32 what[32] (NUL-padded)
inline constexpr std::size_t kErrorWhatSize = 32;
inline constexpr std::uint32_t kErrorEventSize = 64;
inline constexpr std::uint32_t kErrorRecordSize = 8 + 2 * kErrorEventSize;

struct ErrorEvent {
  std::int64_t time_s = 0;
  std::uint64_t ino = 0;    // 0: no inode involved (or not known)
  std::uint64_t blkno = 0;  // 0: no block involved (block 0 is the superblock's)
  std::uint32_t err = 0;
  std::string what;         // "directory block CRC", "inode decode", ...; at most kErrorWhatSize bytes
  bool operator==(const ErrorEvent&) const = default;
};

struct ErrorRecord {
  std::uint32_t count = 0;  // errors recorded since the last repair; 0: none (first, last unused)
  ErrorEvent first, last;
  bool empty() const { return count == 0; }
  bool operator==(const ErrorRecord&) const = default;
};

// "directory block CRC (inode 131, block 1234) at 2024-05-01 12:00:00 UTC"
std::string ErrorEventString(const ErrorEvent& e);
// One line: "none", or "3 errors; first: ...; last: ...".
std::string ErrorRecordString(const ErrorRecord& r);
// The record's kErrorRecordSize bytes at `out` (the superblock's
// kSuperErrorsOffset): what the mount logs when it records an error.
void EncodeErrorRecord(const ErrorRecord& r, char* out);
ErrorRecord DecodeErrorRecord(const char* in);

struct Superblock {
  std::uint32_t version = kFormatVersion;
  std::uint32_t compat = 0, ro_compat = 0, incompat = 0;
  std::uint32_t flags = 0;
  Uuid uuid{};
  std::uint32_t block_size = 4096;
  std::uint32_t inode_size = kInodeSize;
  MountedField<std::uint64_t> total_blocks = 0;  // grows (walfs-growfs)
  MountedField<std::uint32_t> ag_count = 0;      // grows (walfs-growfs)
  std::uint32_t ag_blocks = 0;  // every AG but the last, which may be shorter
  std::uint64_t log_start = 0;
  std::uint32_t log_blocks = 0;
  std::uint32_t inodes_per_chunk = kInodesPerChunk;
  std::uint64_t root_ino = 0;
  std::uint32_t bitmap_blocks = 0;  // per AG
  std::uint32_t imap_blocks = 0;    // per AG
  std::int64_t created_s = 0;
  std::int64_t mounted_s = 0;
  std::uint64_t free_blocks = 0;
  std::uint64_t icount = 0;
  std::uint64_t ifree = 0;
  std::string label;
  Uuid meta_uuid{};  // meaningful only with kIncompatMetaUuid; zero on disk otherwise
  ErrorRecord errors;  // damage found while mounted, for fsck (above)

  bool clean() const { return (flags & kSuperClean) != 0; }
  // The UUID every metadata block header carries (and is checked against).
  const Uuid& metadata_uuid() const { return (incompat & kIncompatMetaUuid) ? meta_uuid : uuid; }
  bool uninit_ag() const { return (incompat & kIncompatUninitAg) != 0; }
  bool super_copies() const { return (compat & kCompatSuperCopies) != 0; }
  // Gives the filesystem a new identity, leaving the blocks' UUID where
  // metadata_uuid() finds it (above).
  void ChangeUuid(const Uuid& new_uuid);

  // Derived geometry.
  std::uint64_t data_start() const { return log_start + log_blocks; }  // AG 0's first block
  std::uint64_t AgStart(std::uint32_t agno) const { return data_start() + std::uint64_t{agno} * ag_blocks; }
  std::uint32_t AgLength(std::uint32_t agno) const;
  std::uint32_t inodes_per_block() const { return block_size / inode_size; }
  std::uint32_t blocks_per_chunk() const { return inodes_per_chunk / inodes_per_block(); }
  std::uint64_t log_offset() const { return log_start * block_size; }
  std::uint32_t log_sectors() const { return log_blocks * (block_size / 512); }
};

// Where the fields walfs-growfs logs live (the transaction logs these
// byte ranges of block 0, BlockType::kSuper).
inline constexpr std::uint32_t kSuperTotalBlocksOffset = 56;  // u64, then ag_count u32 at 64
inline constexpr std::uint32_t kSuperAgCountOffset = 64;
inline constexpr std::uint32_t kSuperFreeBlocksOffset = 120;  // u64
// The error record (ErrorRecord), which a mount logs when it finds damage.
inline constexpr std::uint32_t kSuperErrorsOffset = 224;
inline constexpr std::uint32_t kSuperErrorsEnd = kSuperErrorsOffset + kErrorRecordSize;  // one past
static_assert(kErrorRecordSize == 136);
static_assert(kSuperErrorsEnd <= kSuperSize, "the error record fits the superblock's 512 bytes");

// Recomputes the CRC of an encoded superblock after bytes of it changed
// (growfs's logged fields; recovery after replaying them).
void SealSuperblock(std::span<std::byte> block);

// The superblock's 512 bytes at sb[0, kSuperSize); the CRC is computed.
void EncodeSuperblock(const Superblock& sb, std::span<std::byte> out);
// Decodes and checks everything that can be checked alone: magic, CRC,
// version, features, sizes, and that the geometry is self-consistent and
// fits `device_bytes` (0: do not check).  Corruption (or NotSupported for an
// unknown feature or version) with a one-line reason.
Result<Superblock> DecodeSuperblock(std::span<const std::byte> in, std::uint64_t device_bytes = 0);
std::string SuperblockString(const Superblock& sb);

// The superblock as its copies in the AG headers hold it: identity and
// geometry, without what changes while mounted (flags, mount time, lazy
// counters, error record), so that a copy is written only when the
// filesystem's identity or size changes (mkfs, walfs-growfs, walfs-admin).
Superblock SuperblockCopyOf(const Superblock& sb);
// The first field in which `copy` describes another filesystem or another
// geometry than `primary` ("uuid", "log_blocks", ...), or "" when it
// describes the same one.  total_blocks and ag_count are not compared: a
// copy written before a grow holds the smaller size (fs/super_copy.h).
std::string SuperblockCopyMismatch(const Superblock& copy, const Superblock& primary);

}  // namespace walfs::fs::format

// Formats as the integer it holds.
template <typename T>
struct fmt::formatter<walfs::fs::format::MountedField<T>> : fmt::formatter<T> {
  template <typename Context>
  auto format(const walfs::fs::format::MountedField<T>& f, Context& ctx) const {
    return fmt::formatter<T>::format(f.load(), ctx);
  }
};
