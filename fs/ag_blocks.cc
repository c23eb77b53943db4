#include "fs/ag_blocks.h"

#include <fmt/format.h>

#include "base/coding.h"
#include "fs/format/ag_format.h"
#include "fs/format/block_header.h"
#include "fs/format/block_types.h"

namespace walfs::fs {

using format::BlockType;

namespace {

enum class Kind { kBitmap, kImap };

std::uint32_t OnDisk(const format::Superblock& sb, const BufRef& agh, Kind kind) {
  if (!sb.uninit_ag()) return kind == Kind::kBitmap ? sb.bitmap_blocks : sb.imap_blocks;
  return DecodeFixed32(HeldChars(agh) + (kind == Kind::kBitmap ? format::kAgBitmapInitOffset
                                                               : format::kAgImapInitOffset));
}

std::uint64_t BlockNumber(const format::Superblock& sb, std::uint32_t agno, std::uint32_t index, Kind kind) {
  return sb.AgStart(agno) + (kind == Kind::kBitmap ? format::AgBitmapStart() : format::AgImapStart(sb)) + index;
}

Result<BufRef> ReadBlock(BufCache* cache, const format::Superblock& sb, std::uint32_t agno,
                         std::uint32_t index, const BufRef& agh, Kind kind) NO_THREAD_SAFETY_ANALYSIS {
  const std::uint32_t count = kind == Kind::kBitmap ? sb.bitmap_blocks : sb.imap_blocks;
  if (index >= count)
    return Status::Corruption(fmt::format("AG {}: {} block {} of {}", agno,
                                          kind == Kind::kBitmap ? "bitmap" : "inode map", index, count));
  const BlockType type = kind == Kind::kBitmap ? BlockType::kBitmap : BlockType::kImap;
  const std::uint64_t blkno = BlockNumber(sb, agno, index, kind);
  if (index < OnDisk(sb, agh, kind)) return cache->Read(blkno, type);
  // Never written: the cached copy if there is one (made up earlier, or
  // made real by a transaction that has not committed yet), else an empty
  // AG's block, made up now.  A fresh buffer is zeros: no magic.
  WALFS_ASSIGN_OR_RETURN(BufRef buf, cache->Get(blkno, type));
  if (DecodeFixed32(HeldChars(buf)) == 0) {
    if (kind == Kind::kBitmap) {
      const std::uint32_t length = DecodeFixed32(HeldChars(agh) + format::kAgLengthOffset);
      format::FillBitmapBlock(sb, agno, index, length, buf->data());
    } else {
      format::InitImapBlock(sb, agno, index, buf->data());
    }
  }
  return buf;
}

Status Prepare(FsTransaction* tx, BufCache* cache, const format::Superblock& sb, std::uint32_t agno,
               std::uint32_t index, const BufRef& agh, Kind kind) NO_THREAD_SAFETY_ANALYSIS {
  const std::uint32_t on_disk = OnDisk(sb, agh, kind);
  if (index < on_disk) return Status::Ok();
  for (std::uint32_t i = on_disk; i <= index; ++i) {
    WALFS_ASSIGN_OR_RETURN(BufRef buf, ReadBlock(cache, sb, agno, i, agh, kind));
    tx->Hold(buf);
    tx->LogRange(buf, 0, sb.block_size - 1);
  }
  const std::uint32_t offset = kind == Kind::kBitmap ? format::kAgBitmapInitOffset : format::kAgImapInitOffset;
  EncodeFixed32(reinterpret_cast<char*>(agh->data().data()) + offset, index + 1);
  tx->LogRange(agh, offset, offset + 3);
  return Status::Ok();
}

}  // namespace

std::uint32_t BitmapBlocksOnDisk(const format::Superblock& sb, const BufRef& agh) {
  return OnDisk(sb, agh, Kind::kBitmap);
}
std::uint32_t ImapBlocksOnDisk(const format::Superblock& sb, const BufRef& agh) {
  return OnDisk(sb, agh, Kind::kImap);
}

Result<BufRef> ReadBitmapBlock(BufCache* cache, const format::Superblock& sb, std::uint32_t agno,
                               std::uint32_t index, const BufRef& agh) {
  return ReadBlock(cache, sb, agno, index, agh, Kind::kBitmap);
}
Result<BufRef> ReadImapBlock(BufCache* cache, const format::Superblock& sb, std::uint32_t agno,
                             std::uint32_t index, const BufRef& agh) {
  return ReadBlock(cache, sb, agno, index, agh, Kind::kImap);
}

Status PrepareBitmapChange(FsTransaction* tx, BufCache* cache, const format::Superblock& sb,
                           std::uint32_t agno, std::uint32_t index, const BufRef& agh) {
  return Prepare(tx, cache, sb, agno, index, agh, Kind::kBitmap);
}
Status PrepareImapChange(FsTransaction* tx, BufCache* cache, const format::Superblock& sb,
                         std::uint32_t agno, std::uint32_t index, const BufRef& agh) {
  return Prepare(tx, cache, sb, agno, index, agh, Kind::kImap);
}

}  // namespace walfs::fs
