// ReservationTable: the unit log reservation and log count of every
// transaction type, computed from the filesystem geometry the way
// xfs_trans_resv.c does: the bytes each type may log in the worst case,
// i.e. every metadata block it may dirty, logged whole, plus headers.
//
//   ReservationTable table(ReservationGeometry{});   // 4 KiB blocks
//   const TransResv& r = table.Get(TransType::kRename);
//   space->Reserve(r.unit_bytes, r.log_count, r.permanent);
//
// The smallest log walfs accepts is 3 × the largest unit × count (XFS's
// XFS_MIN_LOG_FACTOR): room for one transaction to commit while another
// rolls and a third waits for the tail.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace walfs::journal {

enum class TransType : std::uint8_t {
  kCreate,
  kMkdir,
  kLink,
  kRemove,
  kRename,
  kSymlink,
  kWrite,     // allocation of blocks for file data
  kTruncate,  // freeing a file's blocks, one extent per roll
  kSetattr,
  kXattr,
  // A create or mkdir in a directory with a default ACL: the new inode's
  // ACLs go in the same step (fs/filesystem_acl.cc).
  kCreateAcl,
  kMkdirAcl,
  // walfs-growfs: the superblock, the last AG's header and up to
  // kGrowfsBitmapBlocks of its bitmap (fs/filesystem_grow.cc).
  kGrowfs,
  // The superblock's error record: damage a mount found, for fsck
  // (fs/error_recorder.h).  The superblock alone.
  kErrorRecord,
  kCount,
};
inline constexpr int kTransTypeCount = static_cast<int>(TransType::kCount);
// The bitmap blocks one growfs step may change: a last AG lengthened by
// more than that many blocks' worth of bits is lengthened in several steps.
inline constexpr std::int32_t kGrowfsBitmapBlocks = 8;

std::string_view TransTypeName(TransType type);

// The largest extended attribute value a filesystem of this block size
// stores: 16 blocks, at most XATTR_SIZE_MAX (64 KiB).  The xattr
// reservation is sized for it.
constexpr std::uint32_t MaxXattrValue(std::int32_t block_size) {
  return static_cast<std::uint32_t>(16 * block_size < 65536 ? 16 * block_size : 65536);
}

// The shape of the filesystem that bounds how many blocks a change touches.
struct ReservationGeometry {
  std::int32_t block_size = 4096;
  std::int32_t inode_size = 512;
  std::int32_t dir_levels = 3;     // height of a directory's hash index
  std::int32_t free_levels = 3;    // height of an AG's free-space index
  std::int32_t inode_levels = 3;   // height of an AG's inode allocation index
  std::int32_t extent_levels = 3;  // height of a file's extent map
};

struct TransResv {
  std::int32_t unit_bytes = 0;  // bytes one step may log
  std::int32_t log_count = 1;   // pre-reserved steps
  bool permanent = false;       // a rolling transaction
};

class ReservationTable {
 public:
  explicit ReservationTable(const ReservationGeometry& geo);

  const TransResv& Get(TransType type) const { return resv_[static_cast<int>(type)]; }
  // The largest unit × count over all types, and the type that has it.
  std::int64_t LargestBytes() const { return largest_bytes_; }
  TransType LargestType() const { return largest_type_; }
  // 3 × LargestBytes(): the smallest log mkfs and mount accept.
  std::int64_t MinLogBytes() const { return 3 * largest_bytes_; }

  // Per-item log overhead (op header, buffer log format, dirty bitmap) and
  // per-transaction overhead (start and commit records, the share of a
  // record header), in bytes.
  static constexpr std::int32_t kBufOverhead = 128;
  static constexpr std::int32_t kTransOverhead = 512;

 private:
  std::array<TransResv, kTransTypeCount> resv_{};
  std::int64_t largest_bytes_ = 0;
  TransType largest_type_ = TransType::kCreate;
};

}  // namespace walfs::journal
