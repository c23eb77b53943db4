// The log-damage flavour's image: its stepped crash session, what each step
// leaves visible, the durable set, and the ways its log is damaged
// (hostile_log_damage.h).
#include "tests/hostile/hostile_log_damage.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <span>

#include <fmt/format.h>

#include "base/coding.h"
#include "fs/filesystem.h"
#include "journal/log_format.h"
#include "journal/log_head.h"
#include "journal/log_region.h"
#include "tests/hostile/hostile_log_steps.h"

namespace walfs::hostile {

std::string_view LogDamageKindName(LogDamageKind k) {
  switch (k) {
    case LogDamageKind::kRecord: return "record";
    case LogDamageKind::kHeadCrc: return "head_crc";
    case LogDamageKind::kTornHead: return "torn_head";
    case LogDamageKind::kZeroSectors: return "zero_sectors";
    case LogDamageKind::kCycleStamp: return "cycle_stamp";
    case LogDamageKind::kHeaderSector: return "header_sector";
    case LogDamageKind::kCount: break;
  }
  return "?";
}

Status LogDamagePhase(fs::Filesystem* fs, const BaseImage& base, MemoryDevice* dev, std::vector<LogStep>* steps) {
  const fs::format::Superblock& sb = fs->superblock();
  const journal::LogRegion region{.device = dev, .offset = sb.log_offset(), .sectors = sb.log_sectors()};
  for (std::size_t i = 0; i < kLogSteps; ++i) {
    WALFS_RETURN_IF_ERROR(ApplyStep(fs, base, i));
    WALFS_RETURN_IF_ERROR(fs->Sync());
    WALFS_ASSIGN_OR_RETURN(journal::LogPosition pos, journal::FindLogPosition(region));
    steps->push_back(LogStep{.what = std::string(StepName(i)), .head = pos.head});
  }
  return Status::Ok();
}

namespace {

constexpr std::size_t kSector = journal::kLogSectorSize;

// The records of the base image's active log, tail to head.
const std::vector<MetaBlock>& Records(const BaseImage& base) {
  return base.blocks[static_cast<int>(BlockKind::kLogRecord)];
}

// Flips 1-4 bits of p[from, to), never in the first 4 bytes of a sector (a
// payload sector's cycle stamp): the CRC is what must catch them.
std::string FlipBitsOffStamps(Rng& rng, std::span<std::byte> p, std::size_t from, std::size_t to) {
  std::string what = "flip bits";
  const int bits = 1 + static_cast<int>(Below(rng, 4));
  for (int i = 0; i < bits; ++i) {
    std::size_t at = from + Below(rng, to - from);
    if (at % kSector < 4) at += 4;
    if (at >= to) at = to - 1;
    const int bit = static_cast<int>(Below(rng, 8));
    p[at] ^= static_cast<std::byte>(1 << bit);
    what += fmt::format(" {}.{}", at, bit);
  }
  return what;
}

// Damage to a record's header sector (magic, cycle, version, lsn, len, crc,
// the cycle-data table).
std::string DamageHeaderSector(Rng& rng, std::span<std::byte> sector) {
  char* p = reinterpret_cast<char*>(sector.data());
  switch (Below(rng, 4)) {
    case 0: {
      const std::size_t at = Below(rng, journal::kRecordHeaderFixedSize * 8);
      p[at / 8] = static_cast<char>(p[at / 8] ^ (1 << (at % 8)));
      return fmt::format("header bit {}.{}", at / 8, at % 8);
    }
    case 1: {
      const std::size_t at = Below(rng, journal::kRecordHeaderFixedSize / 4) * 4;
      const std::uint32_t old = DecodeFixed32(p + at);
      const std::uint32_t choices[] = {0, 1, ~0u, old + 1, old - 1, static_cast<std::uint32_t>(rng())};
      const std::uint32_t v = choices[Below(rng, std::size(choices))];
      EncodeFixed32(p + at, v);
      return fmt::format("header u32 @{} = {:#x}", at, v);
    }
    case 2: {
      const std::size_t at = journal::kRecordHeaderFixedSize + Below(rng, kSector - journal::kRecordHeaderFixedSize);
      p[at] = static_cast<char>(rng());
      return fmt::format("header byte @{} (cycle data)", at);
    }
    default:
      std::memset(p, 0, kSector);
      return "header sector zeroed";
  }
}

// The cycle a sector carries: bytes [0, 4) of a payload sector, the cycle
// field of a header sector.
std::string RestampCycle(Rng& rng, std::span<std::byte> sector, bool header) {
  char* at = reinterpret_cast<char*>(sector.data()) + (header ? 4 : 0);
  const std::uint32_t old = DecodeFixed32(at);
  // Near the largest cycle too: a restarted log must still fit past it.
  const std::uint32_t choices[] = {old - 1, old + 1, 0, static_cast<std::uint32_t>(rng()) | 1u, ~0u, 0x7fffffffu};
  const std::uint32_t v = choices[Below(rng, std::size(choices))];
  EncodeFixed32(at, v);
  return fmt::format("{} sector cycle {} -> {}", header ? "header" : "payload", old, v);
}

}  // namespace

LogMutation MutateLog(const BaseImage& base, std::uint64_t seed, std::span<std::byte> image, int kind) {
  Rng rng(seed * 0xbf58476d1ce4e5b9ull + 7);
  LogMutation m;
  m.kind = static_cast<LogDamageKind>(kind >= 0 ? kind : static_cast<int>(Below(rng, kLogDamageKinds)));
  const std::vector<MetaBlock>& records = Records(base);
  // Half the rounds damage the head record, the rest any record of the
  // active log (the middle of it, or the head again).
  const bool pick_head = (rng() & 1) != 0 || m.kind == LogDamageKind::kHeadCrc;
  const MetaBlock& rec = pick_head ? records.back() : records[Below(rng, records.size())];
  std::span<std::byte> bytes = image.subspan(rec.offset, rec.length);
  const std::size_t sectors = rec.length / kSector;
  const std::uint64_t log_end = records.back().offset + records.back().length;  // the head before the damage
  std::string what;
  switch (m.kind) {
    case LogDamageKind::kRecord: {
      // The campaign's own record mutator (it picks its record itself).
      const Mutation mm = Mutate(base, seed, image, static_cast<int>(BlockKind::kLogRecord));
      m.resealed = mm.resealed;
      m.forged = mm.resealed && mm.payload;
      what = mm.description;
      break;
    }
    case LogDamageKind::kHeadCrc:
      what = sectors > 1 ? "payload " + FlipBitsOffStamps(rng, bytes, kSector, bytes.size())
                         : "crc " + FlipBitsOffStamps(rng, bytes, 48, 52);
      break;
    case LogDamageKind::kTornHead: {
      // Sectors [cut, end) of the record never written, nor anything after.
      const std::size_t cut = sectors > 1 ? 1 + Below(rng, sectors - 1) : 0;
      std::memset(bytes.data() + cut * kSector, 0, (sectors - cut) * kSector);
      const std::uint64_t after = rec.offset + rec.length;
      std::memset(image.data() + after, 0, log_end - after);
      what = fmt::format("torn after {} of {} sectors, the {} bytes after it never written", cut, sectors,
                         log_end - after);
      break;
    }
    case LogDamageKind::kZeroSectors: {
      const std::uint64_t first = rec.offset + Below(rng, sectors) * kSector;
      const std::uint64_t n = std::min<std::uint64_t>(1 + Below(rng, 8), (log_end - first) / kSector);
      std::memset(image.data() + first, 0, n * kSector);
      what = fmt::format("{} sectors zeroed from sector {} of the record", n, (first - rec.offset) / kSector);
      break;
    }
    case LogDamageKind::kCycleStamp: {
      const std::size_t s = Below(rng, sectors);
      what = RestampCycle(rng, bytes.subspan(s * kSector, kSector), s == 0);
      break;
    }
    case LogDamageKind::kHeaderSector:
      what = DamageHeaderSector(rng, bytes.first(kSector));
      break;
    case LogDamageKind::kCount: break;
  }
  // Where the damage begins decides which steps a recovery must keep.
  const MetaBlock* first = nullptr;
  for (const MetaBlock& r : records) {
    if (!std::equal(image.begin() + static_cast<std::ptrdiff_t>(r.offset),
                    image.begin() + static_cast<std::ptrdiff_t>(r.offset + r.length),
                    base.image.begin() + static_cast<std::ptrdiff_t>(r.offset))) {
      first = &r;
      break;
    }
  }
  m.changed = first != nullptr;
  // Every kind writes inside the records (a torn head's zeros end at the
  // last record's end): the range a copy of the damage needs.
  std::uint64_t lo = ~std::uint64_t{0}, hi = 0;
  for (const MetaBlock& r : records) {
    lo = std::min(lo, r.offset);
    hi = std::max(hi, r.offset + r.length);
  }
  m.offset = lo;
  m.length = hi - lo;
  m.damaged_lsn = first != nullptr ? first->lsn : ~std::uint64_t{0};
  m.at_head = first == &records.back() || m.kind == LogDamageKind::kTornHead;
  for (const LogStep& s : base.steps) m.steps_before += s.head <= m.damaged_lsn;
  m.description = fmt::format("{} {} lsn {}:{}: {}{}", LogDamageKindName(m.kind), m.at_head ? "head" : "middle",
                              m.damaged_lsn >> 32, m.damaged_lsn & 0xffffffffu, what,
                              m.resealed && m.kind != LogDamageKind::kRecord ? ", resealed" : "");
  return m;
}

}  // namespace walfs::hostile
