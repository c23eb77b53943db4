#include "fs/mkfs.h"

#include <sys/stat.h>
#include <uuid/uuid.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <ctime>
#include <vector>

#include <fmt/format.h>

#include "fs/format/ag_format.h"
#include "fs/format/block_header.h"
#include "fs/format/block_types.h"
#include "fs/format/inode_format.h"
#include "journal/log_format.h"
#include "journal/log_writer.h"

namespace walfs::fs {

using format::Superblock;

namespace {
constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kDefaultMaxLog = 128 * kMiB;
constexpr std::uint64_t kDefaultMinLog = 4 * kMiB;
constexpr std::uint64_t kMaxAgBytes = 1ull << 40;   // 1 TiB
constexpr std::uint64_t kSmallAgBytes = 16 * kMiB;  // below this, fewer AGs
constexpr std::uint32_t kDefaultAgCount = 4;

std::uint64_t DivUp(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }
// The first chunk-aligned agblock at or after `b`.
std::uint32_t AlignChunk(const Superblock& sb, std::uint32_t b) {
  const std::uint32_t c = sb.blocks_per_chunk();
  return (b + c - 1) / c * c;
}
}  // namespace

journal::ReservationGeometry ReservationGeometryFor(std::uint32_t block_size) {
  journal::ReservationGeometry g;
  g.block_size = static_cast<std::int32_t>(block_size);
  g.inode_size = static_cast<std::int32_t>(format::kInodeSize);
  return g;
}

journal::LogOptions LogOptionsFor(BlockDevice* device, const format::Superblock& sb) {
  journal::LogOptions lo;
  lo.device = device;
  lo.log_offset = sb.log_offset();
  lo.log_sectors = sb.log_sectors();
  lo.geometry = ReservationGeometryFor(sb.block_size);
  lo.seal = format::SealMetadataBlock;
  lo.stamp_valid = format::BlockStampValid;
  return lo;
}

format::Uuid NewUuid() {
  uuid_t u;
  uuid_generate(u);
  format::Uuid out;
  std::memcpy(out.data(), u, out.size());
  return out;
}

std::uint64_t MinLogBytes(std::uint32_t block_size) {
  const journal::ReservationTable table(ReservationGeometryFor(block_size));
  // The log never grants one in-core buffer's worth (docs/log.md), and the
  // writer wants room for twice its default in-flight window.
  const std::uint64_t reservations = static_cast<std::uint64_t>(table.MinLogBytes()) + 32 * 1024;
  const std::uint64_t window = 2ull * 8 * 32 * 1024;
  return std::max(reservations, window);
}

Result<Superblock> PlanFilesystem(std::uint64_t device_bytes, const MkfsOptions& o) {
  if (!std::has_single_bit(o.block_size) || o.block_size < format::kMinBlockSize ||
      o.block_size > format::kMaxBlockSize)
    return Status::InvalidArgument(fmt::format("block size {} is not a power of two from {} to {}",
                                               o.block_size, format::kMinBlockSize,
                                               format::kMaxBlockSize));
  if (o.label.size() > format::kLabelSize)
    return Status::InvalidArgument(fmt::format("label is {} bytes; at most {}", o.label.size(),
                                               format::kLabelSize));
  Superblock sb;
  sb.block_size = o.block_size;
  sb.total_blocks = device_bytes / o.block_size;
  const std::uint64_t bs = o.block_size;
  const std::uint64_t min_log = MinLogBytes(o.block_size);
  const journal::ReservationTable table(ReservationGeometryFor(o.block_size));

  // The log.
  std::uint64_t log_bytes = o.log_bytes;
  if (o.log_concurrency > 0) {
    if (o.log_bytes > 0) return Status::InvalidArgument("give -l size= or -l concurrency=, not both");
    // XFS mkfs: the largest transaction x 3 x N / 2.
    log_bytes = std::max<std::uint64_t>(
        static_cast<std::uint64_t>(table.LargestBytes()) * 3 * o.log_concurrency / 2, min_log);
  } else if (log_bytes == 0) {
    log_bytes = std::clamp<std::uint64_t>(device_bytes / 64, std::max(min_log, kDefaultMinLog),
                                          kDefaultMaxLog);
    if (log_bytes > device_bytes / 4) log_bytes = std::max(min_log, device_bytes / 8);
  }
  if (log_bytes < min_log)
    return Status::InvalidArgument(fmt::format(
        "a log of {} bytes is too small: with {}-byte blocks the largest transaction ({}) "
        "reserves {} bytes, and the log must hold 3 of them: at least {} bytes",
        log_bytes, o.block_size, journal::TransTypeName(table.LargestType()), table.LargestBytes(),
        min_log));
  sb.log_start = 1;
  sb.log_blocks = static_cast<std::uint32_t>(DivUp(log_bytes, bs));
  if (std::uint64_t{sb.log_blocks} * bs > 0x7fffffffull)
    return Status::InvalidArgument(fmt::format("a log of {} bytes is larger than 2 GiB", log_bytes));

  // The allocation groups.
  sb.inodes_per_chunk = format::kInodesPerChunk;
  if (sb.inodes_per_chunk < sb.inodes_per_block())
    return Status::InvalidArgument(fmt::format("block size {} holds more than a chunk of inodes",
                                               o.block_size));
  if (sb.total_blocks <= sb.data_start())
    return Status::InvalidArgument(fmt::format(
        "the device ({} bytes) is too small for a {}-byte log", device_bytes, log_bytes));
  const std::uint64_t data_blocks = sb.total_blocks - sb.data_start();
  std::uint32_t agcount = o.ag_count;
  if (agcount == 0) {
    agcount = static_cast<std::uint32_t>(
        std::clamp<std::uint64_t>(data_blocks * bs / kSmallAgBytes, 1, kDefaultAgCount));
    agcount = std::max<std::uint32_t>(agcount,
                                      static_cast<std::uint32_t>(DivUp(data_blocks * bs, kMaxAgBytes)));
  }
  if (agcount == 0 || agcount > format::kMaxAgCount)
    return Status::InvalidArgument(fmt::format("{} allocation groups", agcount));
  const std::uint64_t ag_blocks = DivUp(data_blocks, agcount);
  if (ag_blocks * bs > kMaxAgBytes || ag_blocks > 0xffffffffull)
    return Status::InvalidArgument(fmt::format(
        "{} allocation groups of {} blocks: an AG may not exceed 1 TiB; use more (-a)", agcount,
        ag_blocks));
  sb.ag_count = agcount;
  sb.ag_blocks = static_cast<std::uint32_t>(ag_blocks);
  // The last AG is whatever remains; drop AGs that would be empty.
  while (sb.ag_count > 1 && data_blocks <= std::uint64_t{sb.ag_count - 1} * sb.ag_blocks)
    sb.ag_count -= 1;
  sb.bitmap_blocks =
      static_cast<std::uint32_t>(DivUp(sb.ag_blocks, format::BitsPerBitmapBlock(o.block_size)));
  const std::uint64_t max_chunks = sb.ag_blocks / sb.blocks_per_chunk();
  sb.imap_blocks = static_cast<std::uint32_t>(
      std::max<std::uint64_t>(1, DivUp(max_chunks, format::RecordsPerImapBlock(o.block_size))));
  // Every AG must hold its metadata and at least one inode chunk.
  const std::uint32_t last_len = sb.AgLength(sb.ag_count - 1);
  const std::uint32_t need = MinAgBlocks(sb);
  if (last_len < need || sb.ag_blocks < need)
    return Status::InvalidArgument(fmt::format(
        "the device ({} bytes) is too small: after the {}-byte log, {} allocation groups of {} "
        "blocks cannot hold their metadata and an inode chunk (need {} blocks each)",
        device_bytes, log_bytes, sb.ag_count, std::min(last_len, sb.ag_blocks), need));
  // An AG count the caller asked for is made exactly or refused, never
  // silently lowered.
  if (o.ag_count != 0 && sb.ag_count != o.ag_count)
    return Status::InvalidArgument(fmt::format(
        "{} allocation groups of {} blocks would leave the last {} empty ({} data blocks); ask for "
        "at most {}",
        o.ag_count, sb.ag_blocks, o.ag_count - sb.ag_count, data_blocks, sb.ag_count));

  // The root directory: the first inode of the first chunk of AG 0.
  const std::uint32_t root_chunk = AlignChunk(sb, format::AgFirstFree(sb));
  sb.root_ino = (sb.AgStart(0) + root_chunk) * sb.inodes_per_block();
  sb.uuid = o.uuid ? *o.uuid : NewUuid();
  sb.label = o.label;
  sb.created_s = o.now_s ? o.now_s : static_cast<std::int64_t>(std::time(nullptr));
  sb.flags = format::kSuperClean;
  if (o.uninit_ag) sb.incompat |= format::kIncompatUninitAg;
  sb.compat |= format::kCompatSuperCopies;
  return sb;
}

namespace {
// Writes AG agno's header and its bitmap and inode map -- with uninit_ag,
// only the blocks that are not an empty AG's: the bitmap blocks that cover
// the AG's metadata (and the root chunk), and the inode map block holding
// the root chunk's record (fs/ag_blocks.h).  With root_chunk != 0 (AG 0 at
// mkfs) the chunk at that agblock is in use, with its first inode.
// Returns the AG's free blocks.
Result<std::uint32_t> WriteAg(BlockDevice* dev, const Superblock& sb, std::uint32_t agno,
                              std::uint32_t root_chunk) {
  const std::uint32_t bs = sb.block_size;
  std::vector<std::byte> block(bs);
  const std::uint64_t ag_start = sb.AgStart(agno);
  const std::uint32_t len = sb.AgLength(agno);
  const std::uint64_t bits = format::BitsPerBitmapBlock(bs);
  format::AgHeader h;
  h.agno = agno;
  h.length = len;
  h.bitmap_init = sb.bitmap_blocks;
  h.imap_init = sb.imap_blocks;
  if (sb.uninit_ag()) {
    h.bitmap_init = format::MetadataBitmapBlocks(sb);
    h.imap_init = 0;
    if (root_chunk != 0) {
      h.bitmap_init = std::max<std::uint32_t>(
          h.bitmap_init, static_cast<std::uint32_t>((root_chunk + sb.blocks_per_chunk() - 1) / bits + 1));
      h.imap_init = 1;
    }
  }
  // Bitmap: the AG's own metadata (and the root chunk) in use, and bits
  // past the AG's end set so they are never allocated.
  for (std::uint32_t i = 0; i < h.bitmap_init; ++i) {
    format::FillBitmapBlock(sb, agno, i, len, block);
    for (std::uint32_t c = 0; root_chunk != 0 && c < sb.blocks_per_chunk(); ++c) {
      const std::uint64_t agblock = root_chunk + c;
      if (agblock / bits == i) format::BitmapSet(block, agblock % bits, true);
    }
    format::SealBlock(block);
    WALFS_RETURN_IF_ERROR(dev->Write((ag_start + format::AgBitmapStart() + i) * bs, block.data(), bs));
  }
  // Inode map: the root chunk's record, with the root inode in use.
  for (std::uint32_t i = 0; i < h.imap_init; ++i) {
    format::InitImapBlock(sb, agno, i, block);
    if (root_chunk != 0 && i == 0) {
      format::PutImapRecord(block, 0, {root_chunk, sb.inodes_per_chunk - 1, ~std::uint64_t{0} << 1});
      format::SealBlock(block);
    }
    WALFS_RETURN_IF_ERROR(dev->Write((ag_start + format::AgImapStart(sb) + i) * bs, block.data(), bs));
  }
  std::uint32_t used = format::AgFirstFree(sb);
  if (root_chunk != 0) {
    used += sb.blocks_per_chunk();
    h.chunks = 1;
    h.icount = sb.inodes_per_chunk;
    h.ifree = sb.inodes_per_chunk - 1;
  }
  h.free_blocks = len - used;
  if (!sb.uninit_ag()) h.bitmap_init = h.imap_init = 0;  // the header's fields are the feature's
  format::EncodeAgHeader(h, sb, block);
  WALFS_RETURN_IF_ERROR(dev->Write(ag_start * bs, block.data(), bs));
  return h.free_blocks;
}
}  // namespace

Result<std::uint32_t> WriteEmptyAg(BlockDevice* device, const format::Superblock& sb, std::uint32_t agno) {
  return WriteAg(device, sb, agno, 0);
}

std::uint32_t MinAgBlocks(const format::Superblock& sb) {
  return AlignChunk(sb, format::AgFirstFree(sb)) + sb.blocks_per_chunk();
}

Result<Superblock> MakeFilesystem(BlockDevice* dev, const MkfsOptions& o) {
  if (o.size_bytes > dev->size_bytes())
    return Status::InvalidArgument(fmt::format("a filesystem of {} bytes does not fit the {}-byte device",
                                               o.size_bytes, dev->size_bytes()));
  WALFS_ASSIGN_OR_RETURN(Superblock sb, PlanFilesystem(o.size_bytes ? o.size_bytes : dev->size_bytes(), o));
  const std::uint32_t bs = sb.block_size;
  std::vector<std::byte> block(bs);

  // The log: zeros, so recovery finds it empty -- a hole punched in an
  // image file, BLKZEROOUT on a block device (BlockDevice::Zero).
  WALFS_RETURN_IF_ERROR(dev->Zero(sb.log_offset(), std::uint64_t{sb.log_blocks} * bs));

  const std::uint32_t root_chunk = AlignChunk(sb, format::AgFirstFree(sb));
  std::uint64_t free_total = 0;
  for (std::uint32_t agno = 0; agno < sb.ag_count; ++agno) {
    WALFS_ASSIGN_OR_RETURN(const std::uint32_t free, WriteAg(dev, sb, agno, agno == 0 ? root_chunk : 0));
    free_total += free;
  }

  // The root chunk: the root directory, empty and inline, and 63 free inodes.
  {
    const std::uint64_t first_block = sb.AgStart(0) + root_chunk;
    const format::Timestamp now{sb.created_s, 0};
    for (std::uint32_t b = 0; b < sb.blocks_per_chunk(); ++b) {
      std::memset(block.data(), 0, bs);
      for (std::uint32_t s = 0; s < sb.inodes_per_block(); ++s) {
        const std::uint64_t ino = (first_block + b) * sb.inodes_per_block() + s;
        format::InodeCore n = format::FreeInode(ino, 0);
        if (ino == sb.root_ino) {
          n.mode = S_IFDIR | 0755;
          n.uid = o.root_uid;
          n.gid = o.root_gid;
          n.nlink = 2;
          n.generation = 1;
          n.format = format::ForkFormat::kLocal;
          n.literal = format::EncodeLocalDir(ino, {});
          n.size = n.literal.size();
          n.atime = n.mtime = n.ctime = n.crtime = now;
        }
        format::EncodeInode(n, std::span<std::byte>(block).subspan(std::size_t{s} * sb.inode_size,
                                                                   sb.inode_size));
      }
      WALFS_RETURN_IF_ERROR(dev->Write((first_block + b) * bs, block.data(), bs));
    }
  }

  // The superblock last, then make it all durable.
  sb.free_blocks = free_total;
  sb.icount = sb.inodes_per_chunk;
  sb.ifree = sb.inodes_per_chunk - 1;
  std::memset(block.data(), 0, bs);
  format::EncodeSuperblock(sb, block);
  WALFS_RETURN_IF_ERROR(dev->Write(0, block.data(), bs));
  WALFS_RETURN_IF_ERROR(dev->Flush());
  return sb;
}

}  // namespace walfs::fs
