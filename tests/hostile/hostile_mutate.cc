#include "tests/hostile/hostile_mutate.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <span>

#include <fmt/format.h>

#include "base/coding.h"
#include "base/crc32c.h"
#include "fs/format/block_header.h"
#include "fs/format/inode_format.h"
#include "fs/format/superblock_format.h"
#include "journal/log_format.h"

namespace walfs::hostile {

std::string_view MutationOpName(MutationOp op) {
  switch (op) {
    case MutationOp::kFlipBits: return "flip_bits";
    case MutationOp::kRandomBytes: return "random_bytes";
    case MutationOp::kExtremeField: return "extreme_field";
    case MutationOp::kZero: return "zero";
    case MutationOp::kBadMagic: return "bad_magic";
    case MutationOp::kCount: break;
  }
  return "?";
}

namespace {

// Damages bytes [0, region.size()) of one structure; `hot` is the length of
// its header, where half of the field and byte changes go.  Returns what
// was done.
std::string Damage(Rng& rng, MutationOp op, std::span<std::byte> region, std::size_t hot, std::size_t magic_width) {
  char* p = reinterpret_cast<char*>(region.data());
  const std::size_t n = region.size();
  const std::size_t span = (rng() & 1) ? std::min(hot, n) : n;
  switch (op) {
    case MutationOp::kFlipBits: {
      const int bits = 1 + static_cast<int>(Below(rng, 4));
      std::string what = "flip bits";
      for (int i = 0; i < bits; ++i) {
        const std::size_t bit = Below(rng, span * 8);
        p[bit / 8] = static_cast<char>(p[bit / 8] ^ (1 << (bit % 8)));
        what += fmt::format(" {}.{}", bit / 8, bit % 8);
      }
      return what;
    }
    case MutationOp::kRandomBytes: {
      const std::size_t len = std::min<std::size_t>(1 + Below(rng, 8), span);
      const std::size_t at = Below(rng, span - len + 1);
      for (std::size_t i = 0; i < len; ++i) p[at + i] = static_cast<char>(rng());
      return fmt::format("{} random bytes @{}", len, at);
    }
    case MutationOp::kExtremeField: {
      const std::size_t width = std::size_t{1} << Below(rng, 4);
      const std::size_t at = Below(rng, span / width) * width;
      std::uint64_t old = 0;
      std::memcpy(&old, p + at, width);
      const std::uint64_t ones = width == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * width)) - 1;
      const std::uint64_t top = std::uint64_t{1} << (8 * width - 1);
      const std::uint64_t choices[] = {0, 1, ones, top - 1, top, old + 1, old - 1, rng()};
      const std::uint64_t v = choices[Below(rng, std::size(choices))] & ones;
      std::memcpy(p + at, &v, width);  // little-endian host, as the format
      return fmt::format("set u{} @{} = {:#x}", width * 8, at, v);
    }
    case MutationOp::kZero:
      std::memset(p, 0, n);
      return "zero";
    case MutationOp::kBadMagic: {
      std::uint64_t v = rng();
      std::memcpy(p, &v, magic_width);
      return "bad magic";
    }
    case MutationOp::kCount: break;
  }
  return "";
}

void SealSuperblock(std::span<std::byte> sb) {
  // The superblock's CRC (superblock_format.cc): bytes [0, 4), four zero
  // bytes for the crc field, then [8, kSuperSize).
  const char* p = reinterpret_cast<const char*>(sb.data());
  static constexpr char kZero[4] = {};
  std::uint32_t crc = crc32c::Extend(0, p, 4);
  crc = crc32c::Extend(crc, kZero, 4);
  crc = crc32c::Extend(crc, p + 8, fs::format::kSuperSize - 8);
  EncodeFixed32(reinterpret_cast<char*>(sb.data()) + 4, crc);
}

// A log record, re-encoded around a damaged payload or header so its CRC
// and cycle stamps are right again.  False if the record no longer decodes
// (the base image changed under the catalogue).
bool DamageRecordResealed(Rng& rng, MutationOp op, std::span<std::byte> bytes, std::string* what, bool* payload_changed) {
  const std::string_view raw(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  journal::DecodedRecord r = journal::DecodeRecord(raw);
  if (r.kind != journal::DecodedRecord::Kind::kOk) return false;
  journal::RecordHeader h = r.header;
  std::string payload = r.payload;
  if ((rng() & 1) && op != MutationOp::kZero && !payload.empty()) {
    *what = "payload: " + Damage(rng, op, std::as_writable_bytes(std::span(payload.data(), payload.size())),
                                 journal::kOpHeaderSize + 64, 4);
    *payload_changed = true;
  } else {
    // A header field: the ones the reader and recovery interpret.
    const std::uint64_t extreme[] = {0, 1, ~std::uint64_t{0}, rng(), 0x7fffffff};
    const std::uint64_t v = extreme[Below(rng, std::size(extreme))];
    switch (Below(rng, 6)) {
      case 0: h.flags ^= 1u << Below(rng, 32); *what = "header flags"; break;
      case 1: h.lsn = v; *what = fmt::format("header lsn = {:#x}", v); break;
      case 2: h.prev_lsn = v; *what = fmt::format("header prev_lsn = {:#x}", v); break;
      case 3: h.tail_lsn = v; *what = fmt::format("header tail_lsn = {:#x}", v); break;
      case 4: h.num_ops = static_cast<std::uint32_t>(v); *what = fmt::format("header num_ops = {}", h.num_ops); break;
      default:
        h.cycle = static_cast<std::uint32_t>(v);
        if (h.cycle == 0 || h.cycle == journal::kRecordMagic) h.cycle = 0x7fffffff;
        *what = fmt::format("header cycle = {}", h.cycle);
        break;
    }
  }
  const std::string out = journal::EncodeRecord(h, payload);
  if (out.size() != bytes.size()) return false;
  std::memcpy(bytes.data(), out.data(), out.size());
  *what += ", re-encoded";
  return true;
}

}  // namespace

Mutation Mutate(const BaseImage& base, std::uint64_t seed, std::span<std::byte> image, int kind) {
  Rng rng(seed * 0x9e3779b97f4a7c15ull + 1);
  Mutation m;
  m.kind = static_cast<BlockKind>(kind >= 0 ? kind : static_cast<int>(Below(rng, kBlockKinds)));
  m.op = static_cast<MutationOp>(Below(rng, kMutationOps));
  bool reseal = (rng() & 1) != 0;
  const std::vector<MetaBlock>& targets = base.blocks[static_cast<int>(m.kind)];
  const MetaBlock& t = targets[Below(rng, targets.size())];
  m.blkno = t.blkno;
  m.offset = t.offset;
  m.length = t.length;
  std::span<std::byte> block = image.subspan(t.offset, t.length);
  std::string what;

  switch (m.kind) {
    case BlockKind::kSuperblock:
      what = Damage(rng, m.op, block, 160, 4);
      if (reseal) SealSuperblock(block);
      break;
    case BlockKind::kInodeChunk: {
      // Mostly an in-use inode: those are what the tree walks read.
      const std::uint32_t per_block = t.length / fs::format::kInodeSize;
      const std::uint32_t slot = (rng() % 5 != 0) ? t.in_use_inodes[Below(rng, t.in_use_inodes.size())]
                                                 : static_cast<std::uint32_t>(Below(rng, per_block));
      auto inode = block.subspan(slot * fs::format::kInodeSize, fs::format::kInodeSize);
      what = fmt::format("inode slot {}: {}", slot, Damage(rng, m.op, inode, fs::format::kInodeCoreSize, 2));
      if (reseal) fs::format::SealInodeBlock(block);
      break;
    }
    case BlockKind::kLogRecord:
      if (reseal && DamageRecordResealed(rng, m.op, block, &what, &m.payload)) break;
      m.payload = false;
      reseal = false;
      // Raw damage, mostly in the header sector.
      what = Damage(rng, m.op, (rng() & 1) ? block.first(journal::kLogSectorSize) : block, 64, 4);
      break;
    default:
      what = Damage(rng, m.op, block, fs::format::kBlockHeaderSize + 16, 4);
      if (reseal) fs::format::SealBlock(block);
      break;
  }
  m.resealed = reseal;
  m.changed = !std::equal(block.begin(), block.end(), base.image.begin() + static_cast<std::ptrdiff_t>(t.offset));
  m.must_flag = base.flavour == Flavour::kClean && m.changed && m.kind != BlockKind::kLogRecord &&
                (!m.resealed || m.op == MutationOp::kBadMagic || m.op == MutationOp::kZero);
  m.description = fmt::format("{} {} blk {}: {}{}", FlavourName(base.flavour), BlockKindName(m.kind), m.blkno, what,
                              m.resealed ? ", resealed" : "");
  return m;
}

Mutation FlipOneByte(const BaseImage& base, std::uint64_t seed, std::span<std::byte> image, int kind) {
  Rng rng(seed * 0xbf58476d1ce4e5b9ull + 7);
  Mutation m;
  m.kind = static_cast<BlockKind>(kind >= 0 ? kind : static_cast<int>(seed % kBlockKinds));
  m.op = MutationOp::kFlipBits;
  const std::vector<MetaBlock>& targets = base.blocks[static_cast<int>(m.kind)];
  const MetaBlock& t = targets[Below(rng, targets.size())];
  m.blkno = t.blkno;
  m.offset = t.offset;
  m.length = t.length;
  // The superblock's checksummed bytes only: the rest of block 0 is unused.
  const std::uint64_t span = m.kind == BlockKind::kSuperblock ? fs::format::kSuperSize : t.length;
  const std::uint64_t at = Below(rng, span);
  const auto x = static_cast<std::uint8_t>(1 + Below(rng, 255));
  image[t.offset + at] ^= static_cast<std::byte>(x);
  m.changed = true;
  // Nothing asserted about the first check: the repair round asserts what
  // the repair leaves (hostile_repair_round.h).
  m.must_flag = false;
  m.description = fmt::format("{} {} blk {}: byte @{} ^= {:#04x}", FlavourName(base.flavour), BlockKindName(m.kind),
                              m.blkno, at, x);
  return m;
}

}  // namespace walfs::hostile
