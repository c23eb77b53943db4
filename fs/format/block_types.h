// The kinds of metadata block the filesystem logs, as the buffer log item
// records them (BufLogFormat::type), and the one function that makes a
// block's derived bytes (checksums) current again -- at writeback and after
// recovery replays logged chunks into it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace walfs::fs::format {

enum class BlockType : std::uint8_t {
  kRaw = 0,       // no checksums (tests, the log's own use)
  kAgHeader = 1,  // blocks with a block header (block_header.h)
  kBitmap = 2,
  kImap = 3,
  kInodes = 4,    // an inode chunk block: one CRC per inode
  kDirectory = 5, // reserved for directory blocks
  kExtents = 6,   // reserved for extent tree blocks
  kXattr = 7,     // reserved for xattr blocks
  // Block 0, logged by walfs-growfs (its geometry): no block header and no
  // LSN stamp, so recovery always replays what the log holds for it.
  kSuper = 8,
};
std::string_view BlockTypeName(BlockType t);

// Recomputes the checksums of `block` as its type defines them.  Unknown
// types are left alone.
void SealMetadataBlock(std::uint8_t type, std::span<std::byte> block);

// Whether `block`, read from disk at `blkno`, is a block of this type at
// this address (its magic, and the address it names), so that its LSN stamp
// means something to recovery.  A freed metadata block reused for file data
// and then reused again as metadata holds file bytes where the stamp would
// be: recovery must replay over those, not trust them.  Nor is a stamp
// trusted in a block that was not written whole (a torn write puts the new
// stamp, in the first sector, over old bytes): its CRC must match, and in
// an inode chunk block every inode must carry the same LSN.
bool BlockStampValid(std::uint8_t type, std::uint64_t blkno, std::span<const std::byte> block);

}  // namespace walfs::fs::format
