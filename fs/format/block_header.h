// The header every walfs metadata block but the superblock and inode chunks
// starts with (docs/disk_format.md, "Block header"):
//
//   0 magic u32   4 crc u32   8 lsn u64   16 blkno u64   24 owner u64   32 uuid[16]
//
// magic names the block type; crc is CRC32C of the whole block with the crc
// field zeroed; lsn is the LSN of the last checkpoint written back into the
// block (stamped by the buffer log item at writeback, read by recovery to
// skip changes the block already has); blkno is where the block belongs (a
// misdirected write is caught); owner is the AG number or inode number that
// owns it; uuid is the filesystem's, so a block left by an earlier mkfs is
// not mistaken for one of ours.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"

namespace walfs::fs::format {

using Uuid = std::array<std::uint8_t, 16>;

inline constexpr std::size_t kBlockHeaderSize = 48;
inline constexpr std::uint32_t kHeaderCrcOffset = 4;
inline constexpr std::uint32_t kHeaderLsnOffset = 8;  // BufLogItem's lsn_offset

struct BlockHeader {
  std::uint32_t magic = 0;
  std::uint64_t lsn = 0;
  std::uint64_t blkno = 0;
  std::uint64_t owner = 0;
  Uuid uuid{};
};

// Writes the header into block[0, kBlockHeaderSize) (the crc is left for
// SealBlock).
void EncodeBlockHeader(const BlockHeader& h, std::span<std::byte> block);
BlockHeader DecodeBlockHeader(std::span<const std::byte> block);

// Computes and stores the CRC of a block with a header.
void SealBlock(std::span<std::byte> block);
// Whether the block's stored CRC is the one its bytes give (no other check).
bool BlockCrcMatches(std::span<const std::byte> block);
// Checks magic, CRC, blkno and uuid.  Corruption with a reason naming the
// block and what is wrong.
Status VerifyBlock(std::span<const std::byte> block, std::uint32_t magic, std::uint64_t blkno,
                   const Uuid& uuid, std::string_view what);

std::string MagicString(std::uint32_t magic);  // "AGHD"
std::string UuidString(const Uuid& uuid);
// The inverse of UuidString: 36 characters, 8-4-4-4-12 hex digits (either
// case).  InvalidArgument saying what is wrong with anything else.
Result<Uuid> ParseUuid(std::string_view text);

}  // namespace walfs::fs::format
