#include "fs/format/block_header.h"

#include <cstring>

#include <fmt/format.h>

#include "base/check.h"
#include "base/coding.h"
#include "base/crc32c.h"

namespace walfs::fs::format {

namespace {
std::uint32_t BlockCrc(std::span<const std::byte> block) {
  static constexpr char kZero[4] = {0, 0, 0, 0};
  std::uint32_t crc = crc32c::Extend(0, block.data(), kHeaderCrcOffset);
  crc = crc32c::Extend(crc, kZero, 4);
  return crc32c::Extend(crc, block.data() + kHeaderCrcOffset + 4,
                        block.size() - kHeaderCrcOffset - 4);
}
}  // namespace

bool BlockCrcMatches(std::span<const std::byte> block) {
  return block.size() >= kBlockHeaderSize && DecodeFixed32(AsChars(block) + kHeaderCrcOffset) == BlockCrc(block);
}

void EncodeBlockHeader(const BlockHeader& h, std::span<std::byte> block) {
  WALFS_CHECK(block.size() >= kBlockHeaderSize);
  char* p = AsChars(block);
  EncodeFixed32(p, h.magic);
  EncodeFixed32(p + 4, 0);
  EncodeFixed64(p + 8, h.lsn);
  EncodeFixed64(p + 16, h.blkno);
  EncodeFixed64(p + 24, h.owner);
  std::memcpy(p + 32, h.uuid.data(), h.uuid.size());
}

BlockHeader DecodeBlockHeader(std::span<const std::byte> block) {
  WALFS_CHECK(block.size() >= kBlockHeaderSize);
  const char* p = AsChars(block);
  BlockHeader h;
  h.magic = DecodeFixed32(p);
  h.lsn = DecodeFixed64(p + 8);
  h.blkno = DecodeFixed64(p + 16);
  h.owner = DecodeFixed64(p + 24);
  std::memcpy(h.uuid.data(), p + 32, h.uuid.size());
  return h;
}

void SealBlock(std::span<std::byte> block) {
  EncodeFixed32(AsChars(block) + kHeaderCrcOffset, BlockCrc(block));
}

Status VerifyBlock(std::span<const std::byte> block, std::uint32_t magic, std::uint64_t blkno,
                   const Uuid& uuid, std::string_view what) {
  if (block.size() < kBlockHeaderSize)
    return Status::Corruption(fmt::format("{} at block {}: {} bytes is too short", what, blkno,
                                          block.size()));
  const BlockHeader h = DecodeBlockHeader(block);
  if (h.magic != magic)
    return Status::Corruption(fmt::format("{} at block {}: magic {} is not {}", what, blkno,
                                          MagicString(h.magic), MagicString(magic)));
  const std::uint32_t stored = DecodeFixed32(AsChars(block) + kHeaderCrcOffset);
  const std::uint32_t crc = BlockCrc(block);
  if (stored != crc)
    return Status::Corruption(fmt::format("{} at block {}: CRC {:#010x} does not match {:#010x}",
                                          what, blkno, stored, crc));
  if (h.blkno != blkno)
    return Status::Corruption(fmt::format("{} at block {} says it belongs at block {}", what,
                                          blkno, h.blkno));
  if (h.uuid != uuid)
    return Status::Corruption(fmt::format("{} at block {} belongs to filesystem {}, not {}", what,
                                          blkno, UuidString(h.uuid), UuidString(uuid)));
  return Status::Ok();
}

std::string MagicString(std::uint32_t magic) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    const char c = static_cast<char>((magic >> (8 * i)) & 0xff);
    s += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return fmt::format("{:#010x} \"{}\"", magic, s);
}

std::string UuidString(const Uuid& u) {
  return fmt::format("{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-"
                     "{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
                     u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
                     u[12], u[13], u[14], u[15]);
}

Result<Uuid> ParseUuid(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format(
        "\"{}\" is not a UUID ({}); write it as 8-4-4-4-12 hex digits, "
        "e.g. 01234567-89ab-cdef-0123-456789abcdef",
        text, why));
  };
  if (text.size() != 36) return bad(fmt::format("{} characters, not 36", text.size()));
  Uuid u{};
  std::size_t byte = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (text[i] != '-') return bad(fmt::format("no '-' at character {}", i + 1));
      ++i;
      continue;
    }
    int nibbles[2];
    for (int k = 0; k < 2; ++k, ++i) {
      const char c = text[i];
      if (c >= '0' && c <= '9') nibbles[k] = c - '0';
      else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') nibbles[k] = (c | 0x20) - 'a' + 10;
      else return bad(fmt::format("'{}' at character {} is not a hex digit", c, i + 1));
    }
    u[byte++] = static_cast<std::uint8_t>(nibbles[0] << 4 | nibbles[1]);
  }
  return u;
}

}  // namespace walfs::fs::format
