#include "fs/format/block_types.h"

#include "base/coding.h"
#include "fs/format/ag_format.h"
#include "fs/format/block_header.h"
#include "fs/format/btree_format.h"
#include "fs/format/inode_format.h"
#include "fs/format/superblock_format.h"

namespace walfs::fs::format {

std::string_view BlockTypeName(BlockType t) {
  switch (t) {
    case BlockType::kRaw: return "raw";
    case BlockType::kAgHeader: return "ag-header";
    case BlockType::kBitmap: return "bitmap";
    case BlockType::kImap: return "inode-map";
    case BlockType::kInodes: return "inodes";
    case BlockType::kDirectory: return "directory";
    case BlockType::kExtents: return "extents";
    case BlockType::kXattr: return "xattr";
    case BlockType::kSuper: return "superblock";
  }
  return "?";
}

void SealMetadataBlock(std::uint8_t type, std::span<std::byte> block) {
  switch (static_cast<BlockType>(type)) {
    case BlockType::kAgHeader:
    case BlockType::kBitmap:
    case BlockType::kImap:
    case BlockType::kDirectory:
    case BlockType::kExtents:
    case BlockType::kXattr:
      if (block.size() >= kBlockHeaderSize) SealBlock(block);
      return;
    case BlockType::kInodes:
      SpreadInodeBlockLsn(block);
      SealInodeBlock(block);
      return;
    case BlockType::kSuper:
      if (block.size() >= kSuperSize) SealSuperblock(block);
      return;
    case BlockType::kRaw:
      return;
  }
}

bool BlockStampValid(std::uint8_t type, std::uint64_t blkno, std::span<const std::byte> block) {
  // A block written whole: its CRC matches.  One torn after its first
  // sector carries the new stamp over old bytes, and must be replayed.
  auto header_is = [&](std::initializer_list<std::uint32_t> magics) {
    if (block.size() < kBlockHeaderSize) return false;
    const BlockHeader h = DecodeBlockHeader(block);
    if (h.blkno != blkno) return false;
    for (std::uint32_t m : magics)
      if (h.magic == m) return BlockCrcMatches(block);
    return false;
  };
  switch (static_cast<BlockType>(type)) {
    case BlockType::kAgHeader: return header_is({kAgHeaderMagic});
    case BlockType::kBitmap: return header_is({kAgBitmapMagic});
    case BlockType::kImap: return header_is({kAgImapMagic});
    case BlockType::kDirectory:
    case BlockType::kExtents:
    case BlockType::kXattr: return header_is({kBtreeLeafMagic, kBtreeNodeMagic});
    case BlockType::kInodes:
      // The stamp lives in the first inode and writeback copies it into
      // every inode (SealMetadataBlock): all of them must be the block's
      // own inodes with that one LSN, or a write was torn between them.
      return InodeBlockLsnsAgree(block, blkno * (block.size() / kInodeSize));
    case BlockType::kRaw: return true;
    case BlockType::kSuper: return false;  // it has no stamp
  }
  return false;
}

}  // namespace walfs::fs::format
