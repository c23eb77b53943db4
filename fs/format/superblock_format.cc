#include "fs/format/superblock_format.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <ctime>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/check.h"
#include "base/coding.h"
#include "base/crc32c.h"

namespace walfs::fs::format {

namespace {
std::uint32_t SuperCrc(const char* p) {
  static constexpr char kZero[4] = {0, 0, 0, 0};
  std::uint32_t crc = crc32c::Extend(0, p, 4);
  crc = crc32c::Extend(crc, kZero, 4);
  return crc32c::Extend(crc, p + 8, kSuperSize - 8);
}
}  // namespace

void Superblock::ChangeUuid(const Uuid& new_uuid) {
  if (!(incompat & kIncompatMetaUuid)) {
    meta_uuid = uuid;
    incompat |= kIncompatMetaUuid;
  }
  uuid = new_uuid;
  if (uuid == meta_uuid) {  // back to the UUID the blocks carry
    incompat &= ~kIncompatMetaUuid;
    meta_uuid = Uuid{};
  }
}

std::uint32_t Superblock::AgLength(std::uint32_t agno) const {
  if (agno + 1 < ag_count) return ag_blocks;
  // Clamped: while a grow is publishing its geometry a reader may see the
  // new total with the old AG count, and the old last AG is then whole.
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(ag_blocks, total_blocks - AgStart(agno)));
}

namespace {
void EncodeErrorEvent(const ErrorEvent& e, char* p) {
  std::memset(p, 0, kErrorEventSize);
  EncodeFixed64(p + 0, static_cast<std::uint64_t>(e.time_s));
  EncodeFixed64(p + 8, e.ino);
  EncodeFixed64(p + 16, e.blkno);
  EncodeFixed32(p + 24, e.err);
  std::memcpy(p + 32, e.what.data(), std::min(e.what.size(), kErrorWhatSize));
}

ErrorEvent DecodeErrorEvent(const char* p) {
  ErrorEvent e;
  e.time_s = static_cast<std::int64_t>(DecodeFixed64(p + 0));
  e.ino = DecodeFixed64(p + 8);
  e.blkno = DecodeFixed64(p + 16);
  e.err = DecodeFixed32(p + 24);
  e.what.assign(p + 32, strnlen(p + 32, kErrorWhatSize));
  return e;
}
}  // namespace

void EncodeErrorRecord(const ErrorRecord& r, char* p) {
  std::memset(p, 0, kErrorRecordSize);
  if (r.empty()) return;  // all zero: none
  EncodeFixed32(p + 0, r.count);
  EncodeErrorEvent(r.first, p + 8);
  EncodeErrorEvent(r.last, p + 8 + kErrorEventSize);
}

ErrorRecord DecodeErrorRecord(const char* p) {
  ErrorRecord r;
  r.count = DecodeFixed32(p + 0);
  // A zero count is no record, whatever else is there (an older walfs left
  // these bytes zero; nothing else ever writes them).
  if (r.count == 0) return r;
  r.first = DecodeErrorEvent(p + 8);
  r.last = DecodeErrorEvent(p + 8 + kErrorEventSize);
  return r;
}

std::string ErrorEventString(const ErrorEvent& e) {
  std::string where;
  if (e.ino != 0) where += fmt::format("inode {}", e.ino);
  if (e.blkno != 0) where += fmt::format("{}block {}", where.empty() ? "" : ", ", e.blkno);
  const std::time_t t = static_cast<std::time_t>(e.time_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char when[32];
  std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return fmt::format("{}{} at {}", e.what.empty() ? "error" : e.what,
                     where.empty() ? "" : " (" + where + ")", when);
}

std::string ErrorRecordString(const ErrorRecord& r) {
  if (r.empty()) return "none";
  if (r.count == 1) return fmt::format("1 error: {}", ErrorEventString(r.first));
  return fmt::format("{} errors; first: {}; last: {}", r.count, ErrorEventString(r.first),
                     ErrorEventString(r.last));
}

void SealSuperblock(std::span<std::byte> block) {
  WALFS_CHECK(block.size() >= kSuperSize);
  char* p = reinterpret_cast<char*>(block.data());
  EncodeFixed32(p + 4, SuperCrc(p));
}

void EncodeSuperblock(const Superblock& sb, std::span<std::byte> out) {
  WALFS_CHECK(out.size() >= kSuperSize);
  char* p = reinterpret_cast<char*>(out.data());
  std::memset(p, 0, kSuperSize);
  EncodeFixed32(p + 0, kSuperMagic);
  EncodeFixed32(p + 8, sb.version);
  EncodeFixed32(p + 12, kSuperSize);
  EncodeFixed32(p + 16, sb.compat);
  EncodeFixed32(p + 20, sb.ro_compat);
  EncodeFixed32(p + 24, sb.incompat);
  EncodeFixed32(p + 28, sb.flags);
  std::memcpy(p + 32, sb.uuid.data(), 16);
  EncodeFixed32(p + 48, sb.block_size);
  EncodeFixed32(p + 52, sb.inode_size);
  EncodeFixed64(p + 56, sb.total_blocks);
  EncodeFixed32(p + 64, sb.ag_count);
  EncodeFixed32(p + 68, sb.ag_blocks);
  EncodeFixed64(p + 72, sb.log_start);
  EncodeFixed32(p + 80, sb.log_blocks);
  EncodeFixed32(p + 84, sb.inodes_per_chunk);
  EncodeFixed64(p + 88, sb.root_ino);
  EncodeFixed32(p + 96, sb.bitmap_blocks);
  EncodeFixed32(p + 100, sb.imap_blocks);
  EncodeFixed64(p + 104, static_cast<std::uint64_t>(sb.created_s));
  EncodeFixed64(p + 112, static_cast<std::uint64_t>(sb.mounted_s));
  EncodeFixed64(p + 120, sb.free_blocks);
  EncodeFixed64(p + 128, sb.icount);
  EncodeFixed64(p + 136, sb.ifree);
  std::memcpy(p + 144, sb.label.data(), std::min(sb.label.size(), kLabelSize));
  if (sb.incompat & kIncompatMetaUuid) std::memcpy(p + 208, sb.meta_uuid.data(), 16);
  EncodeErrorRecord(sb.errors, p + kSuperErrorsOffset);
  EncodeFixed32(p + 4, SuperCrc(p));
}

Result<Superblock> DecodeSuperblock(std::span<const std::byte> in, std::uint64_t device_bytes) {
  if (in.size() < kSuperSize)
    return Status::Corruption(fmt::format("superblock: {} bytes, need {}", in.size(), kSuperSize));
  const char* p = reinterpret_cast<const char*>(in.data());
  const std::uint32_t magic = DecodeFixed32(p);
  if (magic != kSuperMagic)
    return Status::Corruption(fmt::format("not a walfs image: superblock magic {} is not {}",
                                          MagicString(magic), MagicString(kSuperMagic)));
  const std::uint32_t stored = DecodeFixed32(p + 4);
  if (stored != SuperCrc(p))
    return Status::Corruption(fmt::format("superblock CRC {:#010x} does not match its contents",
                                          stored));
  Superblock sb;
  sb.version = DecodeFixed32(p + 8);
  if (sb.version != kFormatVersion)
    return Status::NotSupported(fmt::format("superblock version {} (this walfs reads version {})",
                                            sb.version, kFormatVersion));
  if (DecodeFixed32(p + 12) != kSuperSize)
    return Status::Corruption(fmt::format("superblock size {} is not {}", DecodeFixed32(p + 12),
                                          kSuperSize));
  sb.compat = DecodeFixed32(p + 16);
  sb.ro_compat = DecodeFixed32(p + 20);
  sb.incompat = DecodeFixed32(p + 24);
  if (sb.incompat & ~kKnownIncompat)
    return Status::NotSupported(fmt::format("unknown incompatible features {:#x}",
                                            sb.incompat & ~kKnownIncompat));
  sb.flags = DecodeFixed32(p + 28);
  std::memcpy(sb.uuid.data(), p + 32, 16);
  sb.block_size = DecodeFixed32(p + 48);
  sb.inode_size = DecodeFixed32(p + 52);
  sb.total_blocks = DecodeFixed64(p + 56);
  sb.ag_count = DecodeFixed32(p + 64);
  sb.ag_blocks = DecodeFixed32(p + 68);
  sb.log_start = DecodeFixed64(p + 72);
  sb.log_blocks = DecodeFixed32(p + 80);
  sb.inodes_per_chunk = DecodeFixed32(p + 84);
  sb.root_ino = DecodeFixed64(p + 88);
  sb.bitmap_blocks = DecodeFixed32(p + 96);
  sb.imap_blocks = DecodeFixed32(p + 100);
  sb.created_s = static_cast<std::int64_t>(DecodeFixed64(p + 104));
  sb.mounted_s = static_cast<std::int64_t>(DecodeFixed64(p + 112));
  sb.free_blocks = DecodeFixed64(p + 120);
  sb.icount = DecodeFixed64(p + 128);
  sb.ifree = DecodeFixed64(p + 136);
  sb.label.assign(p + 144, strnlen(p + 144, kLabelSize));
  if (sb.incompat & kIncompatMetaUuid) std::memcpy(sb.meta_uuid.data(), p + 208, 16);
  sb.errors = DecodeErrorRecord(p + kSuperErrorsOffset);

  auto bad = [](std::string_view why) {
    return Status::Corruption(fmt::format("superblock geometry: {}", why));
  };
  if (!std::has_single_bit(sb.block_size) || sb.block_size < kMinBlockSize || sb.block_size > kMaxBlockSize)
    return bad(fmt::format("block size {} is not a power of two in [{}, {}]", sb.block_size,
                           kMinBlockSize, kMaxBlockSize));
  if (sb.inode_size != kInodeSize) return bad(fmt::format("inode size {}", sb.inode_size));
  if (sb.inodes_per_chunk != kInodesPerChunk || sb.inodes_per_chunk < sb.inodes_per_block())
    return bad(fmt::format("{} inodes per chunk", sb.inodes_per_chunk));
  if (sb.ag_count == 0 || sb.ag_blocks == 0) return bad("no allocation groups");
  if (sb.ag_count > kMaxAgCount) return bad(fmt::format("{} allocation groups", sb.ag_count));
  if (sb.log_start == 0 || sb.log_blocks == 0) return bad("no log");
  if (sb.log_start >= sb.total_blocks || sb.log_blocks >= sb.total_blocks - sb.log_start)
    return bad(fmt::format("log of {} blocks at block {} does not fit {} blocks", sb.log_blocks,
                           sb.log_start, sb.total_blocks));
  if (std::uint64_t{sb.log_blocks} * (sb.block_size / 512) > 0x7fffffffull)
    return bad(fmt::format("log of {} blocks is larger than 1 TiB", sb.log_blocks));
  if (sb.total_blocks < sb.data_start() ||
      sb.total_blocks - sb.data_start() <= std::uint64_t{sb.ag_count - 1} * sb.ag_blocks ||
      sb.total_blocks - sb.data_start() > std::uint64_t{sb.ag_count} * sb.ag_blocks)
    return bad(fmt::format("{} AGs of {} blocks after block {} do not make {} blocks",
                           sb.ag_count, sb.ag_blocks, sb.data_start(), sb.total_blocks));
  if (sb.total_blocks > (std::uint64_t{1} << 47))
    return bad(fmt::format("{} blocks is beyond the 48-bit block address", sb.total_blocks));
  const std::uint64_t bits_per_block = std::uint64_t{sb.block_size - kBlockHeaderSize} * 8;
  if (sb.bitmap_blocks != (sb.ag_blocks + bits_per_block - 1) / bits_per_block)
    return bad(fmt::format("{} bitmap blocks per AG for {} blocks", sb.bitmap_blocks, sb.ag_blocks));
  if (sb.imap_blocks == 0 || 1 + std::uint64_t{sb.bitmap_blocks} + sb.imap_blocks >= sb.AgLength(sb.ag_count - 1))
    return bad(fmt::format("AG metadata ({} bitmap + {} inode map blocks) does not fit",
                           sb.bitmap_blocks, sb.imap_blocks));
  const std::uint64_t root_block = sb.root_ino / sb.inodes_per_block();
  if (root_block < sb.data_start() || root_block >= sb.total_blocks)
    return bad(fmt::format("root inode {} is outside the data area", sb.root_ino));
  if (device_bytes != 0 && sb.total_blocks * sb.block_size > device_bytes)
    return Status::Corruption(fmt::format(
        "the image is {} bytes but its superblock describes {} blocks of {} ({} bytes): truncated?",
        device_bytes, sb.total_blocks, sb.block_size, sb.total_blocks * sb.block_size));
  return sb;
}

namespace {
std::string FeaturesLine(const Superblock& sb) {
  std::vector<std::string_view> f;
  if (sb.uninit_ag()) f.push_back("uninit_ag (AG bitmaps and inode maps written as used)");
  if (sb.super_copies()) f.push_back("super_copies (a copy of the superblock in every AG header)");
  return f.empty() ? std::string() : fmt::format("\nfeatures: {}", fmt::join(f, ", "));
}
}  // namespace

std::string SuperblockString(const Superblock& sb) {
  return fmt::format(
      "uuid {}{}  label \"{}\"\n"
      "blocks {} x {} bytes  ({} AGs of {} blocks)\n"
      "log {} blocks at block {}  inodes {} bytes, {} per chunk  root ino {}\n"
      "free blocks {}  inodes {} ({} free)  {}{}{}",
      UuidString(sb.uuid),
      (sb.incompat & kIncompatMetaUuid) ? " (metadata uuid " + UuidString(sb.meta_uuid) + ")" : "",
      sb.label, sb.total_blocks, sb.block_size, sb.ag_count, sb.ag_blocks,
      sb.log_blocks, sb.log_start, sb.inode_size, sb.inodes_per_chunk, sb.root_ino,
      sb.free_blocks, sb.icount, sb.ifree, sb.clean() ? "clean" : "needs recovery",
      FeaturesLine(sb),
      sb.errors.empty() ? "" : "\nerrors recorded while mounted: " + ErrorRecordString(sb.errors));
}

Superblock SuperblockCopyOf(const Superblock& sb) {
  Superblock c = sb;
  c.flags = 0;
  c.mounted_s = 0;
  c.free_blocks = c.icount = c.ifree = 0;
  c.errors = {};
  return c;
}

std::string SuperblockCopyMismatch(const Superblock& copy, const Superblock& primary) {
  const Superblock& a = copy;
  const Superblock& b = primary;
  if (a.version != b.version) return "version";
  if (a.compat != b.compat || a.ro_compat != b.ro_compat || a.incompat != b.incompat) return "features";
  if (a.uuid != b.uuid) return "uuid";
  if (a.metadata_uuid() != b.metadata_uuid()) return "meta_uuid";
  if (a.label != b.label) return "label";
  if (a.block_size != b.block_size) return "block_size";
  if (a.inode_size != b.inode_size || a.inodes_per_chunk != b.inodes_per_chunk) return "inode geometry";
  if (a.ag_blocks != b.ag_blocks) return "ag_blocks";
  if (a.log_start != b.log_start || a.log_blocks != b.log_blocks) return "log";
  if (a.root_ino != b.root_ino) return "root_ino";
  if (a.bitmap_blocks != b.bitmap_blocks || a.imap_blocks != b.imap_blocks) return "AG metadata sizes";
  if (a.created_s != b.created_s) return "created_s";
  return "";
}

}  // namespace walfs::fs::format
