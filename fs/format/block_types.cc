#include "fs/format/block_types.h"

#include "fs/format/block_header.h"
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
      SealInodeBlock(block);
      return;
    case BlockType::kRaw:
      return;
  }
}

}  // namespace walfs::fs::format
