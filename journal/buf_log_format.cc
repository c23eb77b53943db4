#include "journal/buf_log_format.h"

#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "base/check.h"
#include "base/coding.h"

namespace walfs::journal {

namespace {

// Field offsets in the body header (see buf_log_format.h).
constexpr std::size_t kBodyMagic = 0, kBodyFlags = 2, kBodyBlkno = 4, kBodyBlockSize = 12,
                      kBodyLsnOffset = 16, kBodyMap = kBufLogHeaderSize;
static_assert(kBodyLsnOffset + 4 == kBufLogHeaderSize, "body header layout");
static_assert(kBufMaxBlockSize / kBufChunkSize % 32 == 0 && kBufMinBlockSize % kBufChunkSize == 0);

// Why f cannot be encoded or applied as it is; empty when it can.
std::string Malformed(const BufLogFormat& f) {
  if (!ValidBufBlockSize(f.block_size))
    return fmt::format("block size {} is not a power of two in [{}, {}]", f.block_size,
                       kBufMinBlockSize, kBufMaxBlockSize);
  if (f.chunk_map.size() != BufMapWords(f.block_size))
    return fmt::format("chunk map of {} words, a {}-byte block needs {}", f.chunk_map.size(),
                       f.block_size, BufMapWords(f.block_size));
  const std::uint32_t chunks = BufChunks(f.block_size);
  if (chunks % 32 != 0 && (f.chunk_map.back() >> (chunks % 32)) != 0)
    return fmt::format("chunk map has bits past chunk {} of a {}-byte block", chunks - 1,
                       f.block_size);
  const std::uint64_t want = std::uint64_t{CountChunks(f.chunk_map)} * kBufChunkSize;
  if (f.data.size() != want)
    return fmt::format("{} bytes of chunk data, the map says {}", f.data.size(), want);
  if (f.lsn_offset != kBufNoLsn && std::uint64_t{f.lsn_offset} + kBufLsnSize > f.block_size)
    return fmt::format("LSN stamp at {} does not fit a {}-byte block", f.lsn_offset,
                       f.block_size);
  return {};
}

}  // namespace

void SetChunks(std::vector<std::uint32_t>* map, std::uint32_t first_byte,
               std::uint32_t last_byte) {
  WALFS_CHECK(first_byte <= last_byte);
  WALFS_CHECK_MSG(last_byte / kBufChunkSize < map->size() * 32, "byte range past the chunk map");
  for (std::uint32_t c = first_byte / kBufChunkSize; c <= last_byte / kBufChunkSize; ++c)
    (*map)[c / 32] |= 1u << (c % 32);
}

std::uint32_t CountChunks(std::span<const std::uint32_t> map) {
  std::uint32_t n = 0;
  for (std::uint32_t w : map) n += static_cast<std::uint32_t>(std::popcount(w));
  return n;
}

void EncodeBufLog(const BufLogFormat& f, std::string* out) {
  const std::string why = Malformed(f);
  WALFS_CHECK_MSG(why.empty(), why.c_str());
  PutFixed16(out, kBufLogMagic);
  out->push_back(static_cast<char>(f.flags));
  out->push_back(static_cast<char>(f.type));
  PutFixed64(out, f.blkno);
  PutFixed32(out, f.block_size);
  PutFixed32(out, f.lsn_offset);
  for (std::uint32_t w : f.chunk_map) PutFixed32(out, w);
  out->append(f.data);
}

std::string EncodeBufLog(const BufLogFormat& f) {
  std::string out;
  EncodeBufLog(f, &out);
  return out;
}

Result<BufLogFormat> DecodeBufLog(std::string_view body) {
  const auto bad = [](std::string_view why) {
    return Status::Corruption(fmt::format("buffer log body: {}", why));
  };
  if (body.size() < kBufLogHeaderSize)
    return bad(fmt::format("{} bytes, the header needs {}", body.size(), kBufLogHeaderSize));
  const char* p = body.data();
  if (const std::uint16_t magic = DecodeFixed16(p + kBodyMagic); magic != kBufLogMagic)
    return bad(fmt::format("magic {:#06x} is not {:#06x}", magic, kBufLogMagic));
  BufLogFormat f;
  f.flags = static_cast<std::uint8_t>(p[kBodyFlags]);
  f.type = static_cast<std::uint8_t>(p[kBodyFlags + 1]);
  f.blkno = DecodeFixed64(p + kBodyBlkno);
  f.block_size = DecodeFixed32(p + kBodyBlockSize);
  f.lsn_offset = DecodeFixed32(p + kBodyLsnOffset);
  if (f.flags & ~kBufKnownFlags) return bad(fmt::format("unknown flags {:#04x}", f.flags));
  if (!ValidBufBlockSize(f.block_size))
    return bad(fmt::format("block size {} is not a power of two in [{}, {}]", f.block_size,
                           kBufMinBlockSize, kBufMaxBlockSize));
  // The block's byte offset, blkno * block_size, and its end must not wrap.
  if (f.blkno > UINT64_MAX / f.block_size - 1)
    return bad(fmt::format("block {} of {} bytes lies past the largest byte offset", f.blkno,
                           f.block_size));
  const std::size_t words = BufMapWords(f.block_size);
  if (body.size() - kBufLogHeaderSize < words * 4)
    return bad(fmt::format("{} bytes after the header, the chunk map needs {}",
                           body.size() - kBufLogHeaderSize, words * 4));
  f.chunk_map.resize(words);
  for (std::size_t i = 0; i < words; ++i) f.chunk_map[i] = DecodeFixed32(p + kBodyMap + 4 * i);
  f.data.assign(body.substr(kBodyMap + 4 * words));
  if (std::string why = Malformed(f); !why.empty())
    return bad(fmt::format("block {}: {}", f.blkno, why));
  const std::uint32_t chunks = CountChunks(f.chunk_map);
  if (f.cancelled() && chunks != 0)
    return bad(fmt::format("block {}: a cancel carries {} chunk(s)", f.blkno, chunks));
  if (!f.cancelled() && chunks == 0) return bad(fmt::format("block {}: no chunk logged", f.blkno));
  return f;
}

Status ApplyBufLog(const BufLogFormat& f, std::span<std::byte> block) {
  if (std::string why = Malformed(f); !why.empty())
    return Status::InvalidArgument(fmt::format("applying buffer log of block {}: {}", f.blkno, why));
  if (block.size() != f.block_size)
    return Status::InvalidArgument(fmt::format("buffer log of a {}-byte block applied to {} bytes",
                                               f.block_size, block.size()));
  std::size_t from = 0;
  for (std::uint32_t c = 0; c < BufChunks(f.block_size); ++c) {
    if (!ChunkSet(f.chunk_map, c)) continue;
    std::memcpy(block.data() + std::size_t{c} * kBufChunkSize, f.data.data() + from, kBufChunkSize);
    from += kBufChunkSize;
  }
  return Status::Ok();
}

Lsn BufStampedLsn(std::span<const std::byte> block, std::uint32_t lsn_offset) {
  if (lsn_offset == kBufNoLsn) return kNullLsn;
  WALFS_CHECK(std::uint64_t{lsn_offset} + kBufLsnSize <= block.size());
  return DecodeFixed64(reinterpret_cast<const char*>(block.data()) + lsn_offset);
}

void StampBufLsn(std::span<std::byte> block, std::uint32_t lsn_offset, Lsn lsn) {
  if (lsn_offset == kBufNoLsn) return;
  WALFS_CHECK(std::uint64_t{lsn_offset} + kBufLsnSize <= block.size());
  EncodeFixed64(reinterpret_cast<char*>(block.data()) + lsn_offset, lsn);
}

}  // namespace walfs::journal
