#include "fs/super_copy.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "base/coding.h"
#include "fs/format/ag_format.h"
#include "fs/format/block_header.h"

namespace walfs::fs {

namespace {

using format::kMinBlockSize;

const char* C(const std::vector<std::byte>& b) { return reinterpret_cast<const char*>(b.data()); }

// The AG header at byte `offset`, when it is one: its copy decodes, the
// copy's geometry puts this AG's header at that offset, and the whole
// block verifies as that header (CRC, block number, metadata UUID).
std::optional<SuperblockCopy> WitnessAt(BlockDevice* device, std::uint64_t offset) {
  const std::uint64_t device_bytes = device->size_bytes();
  if (offset > device_bytes || device_bytes - offset < kMinBlockSize) return std::nullopt;
  std::vector<std::byte> b(kMinBlockSize);
  if (!device->Read(offset, b.data(), b.size()).ok()) return std::nullopt;
  if (DecodeFixed32(C(b)) != format::kAgHeaderMagic) return std::nullopt;
  Result<format::Superblock> copy = format::DecodeAgSuperCopy(b, device_bytes);
  if (!copy.ok()) return std::nullopt;
  const std::uint32_t agno = DecodeFixed32(C(b) + 48);
  if (agno >= copy->ag_count) return std::nullopt;
  const std::uint64_t bs = copy->block_size;
  const std::uint64_t blkno = copy->AgStart(agno);
  if (blkno * bs != offset || device_bytes - offset < bs) return std::nullopt;
  b.resize(bs);
  if (!device->Read(offset, b.data(), b.size()).ok()) return std::nullopt;
  if (!format::VerifyBlock(b, format::kAgHeaderMagic, blkno, copy->metadata_uuid(), "AG header").ok())
    return std::nullopt;
  return SuperblockCopy{.sb = std::move(*copy), .agno = agno, .witnesses = 1};
}

// Where a superblock's own fields put AG 0, if they can be read as numbers
// that make sense (they are not trusted: WitnessAt checks what is there).
std::optional<std::uint64_t> Ag0Offset(const std::vector<std::byte>& b0) {
  const std::uint32_t bs = DecodeFixed32(C(b0) + 48);
  const std::uint64_t log_start = DecodeFixed64(C(b0) + 72);
  const std::uint32_t log_blocks = DecodeFixed32(C(b0) + 80);
  if (!std::has_single_bit(bs) || bs < kMinBlockSize || bs > format::kMaxBlockSize) return std::nullopt;
  if (log_start == 0 || log_start > (std::uint64_t{1} << 47)) return std::nullopt;
  return (log_start + log_blocks) * bs;
}

// Block 0 is a walfs superblock, perhaps damaged: its magic at most one
// byte off (a one-byte flip there is as likely as anywhere), or all zero
// (wiped).
bool LooksLikeSuperblock(const std::vector<std::byte>& b0) {
  if (std::all_of(b0.begin(), b0.end(), [](std::byte x) { return x == std::byte{0}; })) return true;  // wiped
  const std::uint32_t magic = DecodeFixed32(C(b0));
  int bytes_off = 0;
  for (int i = 0; i < 4; ++i) bytes_off += ((magic >> (8 * i)) & 0xff) != ((format::kSuperMagic >> (8 * i)) & 0xff);
  return bytes_off <= 1;
}

// The first AG header at a 1 KiB boundary from block 1 on that is a witness.
std::optional<SuperblockCopy> Scan(BlockDevice* device) {
  constexpr std::uint64_t kWindow = 1 << 20;
  const std::uint64_t end = device->size_bytes();
  std::vector<std::byte> w(kWindow);
  for (std::uint64_t off = kMinBlockSize; off < end; off += kWindow) {
    const std::uint64_t n = std::min(kWindow, end - off);
    if (!device->Read(off, w.data(), n).ok()) continue;
    for (std::uint64_t at = 0; at + 4 <= n; at += kMinBlockSize) {
      if (DecodeFixed32(C(w) + at) != format::kAgHeaderMagic) continue;
      if (std::optional<SuperblockCopy> c = WitnessAt(device, off + at)) return c;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<SuperblockCopy> FindSuperblockCopy(BlockDevice* device, bool scan) {
  std::vector<std::byte> b0(format::kSuperSize);
  if (device->size_bytes() < format::kSuperSize || !device->Read(0, b0.data(), b0.size()).ok())
    return Status::NotFound("block 0 cannot be read");
  std::optional<SuperblockCopy> first;
  if (std::optional<std::uint64_t> at = Ag0Offset(b0)) first = WitnessAt(device, *at);
  if (!first && scan && LooksLikeSuperblock(b0)) first = Scan(device);
  if (!first) return Status::NotFound("no AG header holds a copy of the superblock that verifies");

  // The size: the largest any witness of the same filesystem says.
  SuperblockCopy best = *first;
  best.witnesses = 0;
  const format::Superblock& geo = first->sb;
  const std::uint64_t bs = geo.block_size;
  for (std::uint32_t agno = 0; agno < format::kMaxAgCount; ++agno) {
    const std::uint64_t blkno = geo.AgStart(agno);
    if (blkno >= device->size_bytes() / bs) break;
    std::optional<SuperblockCopy> w = WitnessAt(device, blkno * bs);
    if (!w || w->agno != agno || !format::SuperblockCopyMismatch(w->sb, geo).empty()) continue;
    ++best.witnesses;
    if (w->sb.total_blocks > best.sb.total_blocks) {
      best.sb = w->sb;
      best.agno = agno;
    }
  }
  return best;
}

Status WriteSuperblockCopies(BlockDevice* device, const format::Superblock& sb) {
  if (!sb.super_copies()) return Status::Ok();
  const format::Superblock copy = format::SuperblockCopyOf(sb);
  std::vector<std::byte> b(sb.block_size);
  for (std::uint32_t agno = 0; agno < sb.ag_count; ++agno) {
    const std::uint64_t blkno = sb.AgStart(agno);
    WALFS_RETURN_IF_ERROR(device->Read(blkno * sb.block_size, b.data(), b.size()));
    if (!format::VerifyBlock(b, format::kAgHeaderMagic, blkno, sb.metadata_uuid(), "AG header").ok()) continue;
    format::EncodeSuperblock(copy, std::span<std::byte>(b).subspan(format::kAgSuperCopyOffset, format::kSuperSize));
    format::SealBlock(b);
    WALFS_RETURN_IF_ERROR(device->Write(blkno * sb.block_size, b.data(), b.size()));
  }
  return device->Flush();
}

}  // namespace walfs::fs
