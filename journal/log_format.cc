#include "journal/log_format.h"

#include <cstring>

#include <fmt/format.h>

#include "base/check.h"
#include "base/coding.h"
#include "base/crc32c.h"

namespace walfs::journal {

namespace {

// Field offsets in the header sector (see log_format.h).
constexpr std::size_t kOffMagic = 0, kOffCycle = 4, kOffVersion = 8, kOffHeaderSize = 10,
                      kOffFlags = 12, kOffLsn = 16, kOffPrevLsn = 24, kOffTailLsn = 32,
                      kOffLen = 40, kOffNumOps = 44, kOffCrc = 48, kOffCycleData = 64;

// CRC32C of the header sector with its crc field and cycle_data zero, then
// the unstamped, padded payload.
std::uint32_t RecordCrc(const char* header_sector, std::string_view padded_payload) {
  char h[kLogSectorSize];
  std::memcpy(h, header_sector, kLogSectorSize);
  EncodeFixed32(h + kOffCrc, 0);
  std::uint32_t crc = crc32c::Value(h, sizeof(h));
  return crc32c::Extend(crc, padded_payload.data(), padded_payload.size());
}

}  // namespace

void EncodeOpHeader(char* dst, const OpHeader& op) {
  EncodeFixed32(dst, op.tid);
  EncodeFixed32(dst + 4, op.len);
  dst[8] = static_cast<char>(op.flags);
  dst[9] = static_cast<char>(op.type);
  EncodeFixed16(dst + 10, 0);
}

void AppendOp(std::string* payload, const OpHeader& op, std::string_view body) {
  WALFS_CHECK(op.len == body.size());
  char header[kOpHeaderSize];
  EncodeOpHeader(header, op);
  payload->append(header, kOpHeaderSize);
  payload->append(body);
}

std::string EncodeRecord(RecordHeader header, std::string_view payload) {
  WALFS_CHECK_MSG(payload.size() <= kMaxRecordPayload, "log record payload too large");
  // A cycle equal to the magic would make a payload sector look like a header.
  WALFS_CHECK(header.cycle != 0 && header.cycle != kRecordMagic);
  header.len = static_cast<std::uint32_t>(payload.size());
  const std::size_t sectors = (payload.size() + kLogSectorSize - 1) / kLogSectorSize;

  std::string out(RecordBytes(payload.size()), '\0');
  char* h = out.data();
  EncodeFixed32(h + kOffMagic, kRecordMagic);
  EncodeFixed32(h + kOffCycle, header.cycle);
  EncodeFixed16(h + kOffVersion, kLogFormatVersion);
  EncodeFixed16(h + kOffHeaderSize, kLogSectorSize);
  EncodeFixed32(h + kOffFlags, header.flags);
  EncodeFixed64(h + kOffLsn, header.lsn);
  EncodeFixed64(h + kOffPrevLsn, header.prev_lsn);
  EncodeFixed64(h + kOffTailLsn, header.tail_lsn);
  EncodeFixed32(h + kOffLen, header.len);
  EncodeFixed32(h + kOffNumOps, header.num_ops);
  std::memcpy(h + kLogSectorSize, payload.data(), payload.size());

  // CRC over the unstamped form, then stamp each payload sector's first word
  // with the cycle, keeping the displaced word in cycle_data.
  const std::string_view padded(out.data() + kLogSectorSize, sectors * kLogSectorSize);
  EncodeFixed32(h + kOffCrc, RecordCrc(h, padded));
  for (std::size_t i = 0; i < sectors; ++i) {
    char* s = out.data() + kLogSectorSize * (i + 1);
    EncodeFixed32(h + kOffCycleData + 4 * i, DecodeFixed32(s));
    EncodeFixed32(s, header.cycle);
  }
  // cycle_data is not covered by the CRC directly (it was zero when the CRC
  // was taken), but a damaged word restores a wrong payload word, which the
  // CRC over the payload then catches.
  return out;
}

std::string_view DecodedRecordKindName(DecodedRecord::Kind kind) {
  switch (kind) {
    case DecodedRecord::Kind::kOk: return "ok";
    case DecodedRecord::Kind::kNotARecord: return "not a record";
    case DecodedRecord::Kind::kTruncated: return "truncated";
    case DecodedRecord::Kind::kTorn: return "torn";
    case DecodedRecord::Kind::kCorrupt: return "corrupt";
  }
  return "?";
}

std::uint32_t SectorCycle(std::string_view sector) {
  if (sector.size() < 8) return 0;
  const std::uint32_t first = DecodeFixed32(sector.data());
  return first == kRecordMagic ? DecodeFixed32(sector.data() + kOffCycle) : first;
}

void StampWrap(std::string* record, std::size_t first_sector_after_wrap) {
  WALFS_CHECK(first_sector_after_wrap >= 1 && record->size() % kLogSectorSize == 0);
  for (std::size_t i = first_sector_after_wrap; i < record->size() / kLogSectorSize; ++i) {
    char* s = record->data() + i * kLogSectorSize;
    EncodeFixed32(s, DecodeFixed32(s) + 1);
  }
}

DecodedRecord DecodeRecord(std::string_view data, std::size_t wrap_at) {
  DecodedRecord r;
  using Kind = DecodedRecord::Kind;
  if (data.size() < 4 || DecodeFixed32(data.data()) != kRecordMagic) {
    r.reason = "no record magic";
    return r;
  }
  if (data.size() < kLogSectorSize) {
    r.kind = Kind::kTruncated;
    r.reason = fmt::format("{} bytes left, a header needs {}", data.size(), kLogSectorSize);
    return r;
  }
  const char* h = data.data();
  RecordHeader& hdr = r.header;
  hdr.cycle = DecodeFixed32(h + kOffCycle);
  hdr.flags = DecodeFixed32(h + kOffFlags);
  hdr.lsn = DecodeFixed64(h + kOffLsn);
  hdr.prev_lsn = DecodeFixed64(h + kOffPrevLsn);
  hdr.tail_lsn = DecodeFixed64(h + kOffTailLsn);
  hdr.len = DecodeFixed32(h + kOffLen);
  hdr.num_ops = DecodeFixed32(h + kOffNumOps);
  const std::uint16_t version = DecodeFixed16(h + kOffVersion);
  const std::uint16_t header_size = DecodeFixed16(h + kOffHeaderSize);
  r.kind = Kind::kCorrupt;
  if (version != kLogFormatVersion) {
    r.reason = fmt::format("record version {} is not {}", version, kLogFormatVersion);
    return r;
  }
  if (header_size != kLogSectorSize) {
    r.reason = fmt::format("record header size {} is not {}", header_size, kLogSectorSize);
    return r;
  }
  if (hdr.len > kMaxRecordPayload) {
    r.reason = fmt::format("record length {} exceeds {}", hdr.len, kMaxRecordPayload);
    return r;
  }
  if (hdr.cycle == 0) {
    r.reason = "record cycle 0";
    return r;
  }
  const std::size_t bytes = RecordBytes(hdr.len);
  if (data.size() < bytes) {
    r.kind = Kind::kTruncated;
    r.reason = fmt::format("record needs {} bytes, {} left", bytes, data.size());
    return r;
  }
  const std::size_t sectors = bytes / kLogSectorSize - 1;
  std::string padded(data.substr(kLogSectorSize, sectors * kLogSectorSize));
  for (std::size_t i = 0; i < sectors; ++i) {
    char* s = padded.data() + kLogSectorSize * i;
    const std::uint32_t want_cycle = i + 1 >= wrap_at ? hdr.cycle + 1 : hdr.cycle;
    if (DecodeFixed32(s) != want_cycle) {
      r.kind = Kind::kTorn;
      r.reason = fmt::format("payload sector {} has cycle {}, expected {}", i,
                             DecodeFixed32(s), want_cycle);
      return r;
    }
    EncodeFixed32(s, DecodeFixed32(h + kOffCycleData + 4 * i));
  }
  // The CRC was computed before cycle_data was filled in: zero it for the check.
  char clean[kLogSectorSize];
  std::memcpy(clean, h, kLogSectorSize);
  std::memset(clean + kOffCycleData, 0, kLogSectorSize - kOffCycleData);
  const std::uint32_t want = DecodeFixed32(h + kOffCrc);
  const std::uint32_t got = RecordCrc(clean, padded);
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  // (Fuzz builds accept mismatches so that mutations reach the op parser.)
  if (want != got) {
    r.reason = fmt::format("record CRC {:#010x} does not match {:#010x}", want, got);
    return r;
  }
#else
  (void)want;
  (void)got;
#endif
  r.kind = Kind::kOk;
  r.reason.clear();
  padded.resize(hdr.len);
  r.payload = std::move(padded);
  r.bytes = bytes;
  return r;
}

bool OpReader::Next(OpHeader* op, std::string_view* body) {
  if (rest_.empty() || !error_.empty()) return false;
  if (rest_.size() < kOpHeaderSize) {
    error_ = fmt::format("{} bytes left, an op header needs {}", rest_.size(), kOpHeaderSize);
    return false;
  }
  op->tid = DecodeFixed32(rest_.data());
  op->len = DecodeFixed32(rest_.data() + 4);
  op->flags = static_cast<std::uint8_t>(rest_[8]);
  op->type = static_cast<ItemType>(static_cast<std::uint8_t>(rest_[9]));
  if (op->len > rest_.size() - kOpHeaderSize) {
    error_ = fmt::format("op of tid {} claims {} bytes, {} left", op->tid, op->len,
                         rest_.size() - kOpHeaderSize);
    return false;
  }
  *body = rest_.substr(kOpHeaderSize, op->len);
  rest_.remove_prefix(kOpHeaderSize + op->len);
  return true;
}

std::string OpFlagsString(std::uint8_t flags) {
  std::string s;
  const std::pair<std::uint8_t, const char*> names[] = {{kOpStart, "START"},
                                                        {kOpCommit, "COMMIT"},
                                                        {kOpContinue, "CONTINUE"},
                                                        {kOpWasCont, "WAS_CONT"},
                                                        {kOpUnmount, "UNMOUNT"}};
  for (const auto& [bit, name] : names) {
    if (!(flags & bit)) continue;
    if (!s.empty()) s += '|';
    s += name;
  }
  return s.empty() ? "0" : s;
}

std::string_view ItemTypeName(ItemType type) {
  switch (type) {
    case ItemType::kNone: return "none";
    case ItemType::kTransHeader: return "trans";
    case ItemType::kBuffer: return "buffer";
    default: return static_cast<std::uint8_t>(type) >= 128 ? "skippable" : "unknown";
  }
}

}  // namespace walfs::journal
