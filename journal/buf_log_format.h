// The body of an ItemType::kBuffer op: one logged metadata block (XFS's
// xfs_buf_log_format).  A block is logged in 128-byte chunks; the body names
// the block, says which chunks it carries, and then carries them.  The
// grammar, a worked example and the replay rules are in docs/log_format.md
// ("Buffer items").  It depends on nothing but base/ (coding, Status): the
// buffer log item encodes through this file, recovery and walfs-logprint
// decode through it.
//
//   body := header chunk_map chunk*
//   header (20 bytes, little-endian):
//     0 magic u16   2 flags u8   3 type u8   4 blkno u64   12 block_size u32   16 lsn_offset u32
//   chunk_map := u32 × ceil(block_size / 128 / 32)   bit i of word i/32 = chunk i logged
//   chunk     := 128 bytes, one per set bit, in ascending chunk order
//
//   BufLogFormat f{.blkno = 7, .block_size = 4096, .lsn_offset = 8};
//   SetChunks(&f.chunk_map, 0, 200);             // bytes [0, 200] -> chunks 0 and 1
//   ... f.data = the bytes of those chunks ...
//   std::string body = EncodeBufLog(f);
//   Result<BufLogFormat> back = DecodeBufLog(body);   // never crashes
//   WALFS_RETURN_IF_ERROR(ApplyBufLog(*back, block));
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "journal/lsn.h"

namespace walfs::journal {

inline constexpr std::uint16_t kBufLogMagic = 0x4c42;  // "BL" little-endian
inline constexpr std::size_t kBufLogHeaderSize = 20;
inline constexpr std::uint32_t kBufChunkSize = 128;    // XFS_BLF_CHUNK
inline constexpr std::uint32_t kBufMinBlockSize = 512;
inline constexpr std::uint32_t kBufMaxBlockSize = 64 * 1024;
inline constexpr std::uint32_t kDefaultBufBlockSize = 4096;
// lsn_offset of a block that carries no LSN stamp (always replayed).
inline constexpr std::uint32_t kBufNoLsn = 0xFFFFFFFF;
inline constexpr std::uint32_t kBufLsnSize = 8;

enum BufLogFlags : std::uint8_t {
  // The block was freed: replay must not write any version of it logged
  // before this record.  A cancel body carries no chunks.
  kBufCancel = 1u << 0,
  kBufKnownFlags = kBufCancel,
};

struct BufLogFormat {
  std::uint8_t flags = 0;
  // What kind of block this is, for whoever owns the format (the
  // filesystem's block types; 0: raw).  Replay hands it to the seal hook
  // (RecoverOptions::seal), which recomputes the block's checksums.
  std::uint8_t type = 0;
  std::uint64_t blkno = 0;  // the block is at byte blkno * block_size of the device
  std::uint32_t block_size = kDefaultBufBlockSize;
  std::uint32_t lsn_offset = kBufNoLsn;
  std::vector<std::uint32_t> chunk_map;  // BufMapWords(block_size) words
  std::string data;                      // the logged chunks, ascending

  bool cancelled() const { return (flags & kBufCancel) != 0; }
  std::uint64_t byte_offset() const { return blkno * block_size; }
};

constexpr std::uint32_t BufChunks(std::uint32_t block_size) { return block_size / kBufChunkSize; }
constexpr std::uint32_t BufMapWords(std::uint32_t block_size) {
  return (BufChunks(block_size) + 31) / 32;
}
// Whether `block_size` is a power of two in [kBufMinBlockSize, kBufMaxBlockSize].
constexpr bool ValidBufBlockSize(std::uint32_t block_size) {
  return block_size >= kBufMinBlockSize && block_size <= kBufMaxBlockSize &&
         (block_size & (block_size - 1)) == 0;
}

// Sets the bits of the chunks holding bytes [first_byte, last_byte].
void SetChunks(std::vector<std::uint32_t>* map, std::uint32_t first_byte,
               std::uint32_t last_byte);
inline bool ChunkSet(std::span<const std::uint32_t> map, std::uint32_t chunk) {
  return (map[chunk / 32] >> (chunk % 32)) & 1u;
}
std::uint32_t CountChunks(std::span<const std::uint32_t> map);

// Appends the body of `f` to *out.  f must be well formed (a valid block
// size, a map of BufMapWords words, data of 128 bytes per set bit): a
// malformed one is a caller bug and aborts.
void EncodeBufLog(const BufLogFormat& f, std::string* out);
std::string EncodeBufLog(const BufLogFormat& f);

// Parses a body.  Never reads outside `body`; Corruption, with the reason,
// for a bad magic, unknown flags, a block size that is not a power of two in
// [512, 64 KiB], a block whose byte offset overflows, an LSN stamp that does
// not fit the block, map bits past the last chunk, a data length that does
// not match the map, a cancel that carries chunks, or a non-cancel body that
// carries none.
Result<BufLogFormat> DecodeBufLog(std::string_view body);

// Copies the logged chunks of `f` into `block` (block_size bytes).  A cancel
// body carries none and changes nothing.  InvalidArgument if the block or
// `f` do not fit together.
Status ApplyBufLog(const BufLogFormat& f, std::span<std::byte> block);

// The LSN stamped in a block at lsn_offset (kNullLsn for kBufNoLsn), and
// stamping one.  lsn_offset + 8 must fit the block.
Lsn BufStampedLsn(std::span<const std::byte> block, std::uint32_t lsn_offset);
void StampBufLsn(std::span<std::byte> block, std::uint32_t lsn_offset, Lsn lsn);

}  // namespace walfs::journal
