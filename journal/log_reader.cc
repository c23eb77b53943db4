#include "journal/log_reader.h"

#include <fmt/format.h>

#include "base/check.h"
#include "base/coding.h"

namespace walfs::journal {

Lsn AdvanceLsn(Lsn lsn, std::uint64_t sectors, std::uint32_t log_sectors) {
  std::uint64_t cycle = CycleOf(lsn);
  std::uint64_t sector = SectorOf(lsn) + sectors;
  cycle += sector / log_sectors;
  sector %= log_sectors;
  return MakeLsn(static_cast<std::uint32_t>(cycle), static_cast<std::uint32_t>(sector));
}

std::uint64_t SectorsBetween(Lsn from, Lsn to, std::uint32_t log_sectors) {
  const std::uint64_t a = std::uint64_t{CycleOf(from)} * log_sectors + SectorOf(from);
  const std::uint64_t b = std::uint64_t{CycleOf(to)} * log_sectors + SectorOf(to);
  WALFS_CHECK(b >= a);
  return b - a;
}

Result<LogRecordAt> ReadRecordAt(const LogRegion& region, std::uint32_t sector,
                                 std::uint32_t cycle) {
  LogRecordAt out;
  out.lsn = MakeLsn(cycle, sector);
  WALFS_ASSIGN_OR_RETURN(std::string header, region.ReadSectors(sector, 1));
  if (header.size() < kLogSectorSize || DecodeFixed32(header.data()) != kRecordMagic) {
    out.record.reason = "no record header here";
    return out;
  }
  if (SectorCycle(header) != cycle) {
    out.record.reason = fmt::format("header of cycle {}, expected {}", SectorCycle(header), cycle);
    return out;
  }
  // Size the read from the header's length; DecodeRecord checks it properly.
  const std::uint32_t len = DecodeFixed32(header.data() + 40);
  const std::uint64_t bytes = RecordBytes(std::min<std::uint64_t>(len, kMaxRecordPayload));
  out.sectors = static_cast<std::uint32_t>(std::min<std::uint64_t>(bytes / kLogSectorSize,
                                                                   region.sectors));
  WALFS_ASSIGN_OR_RETURN(std::string data, region.ReadSectors(sector, out.sectors));
  const std::size_t wrap_at =
      sector + out.sectors > region.sectors ? region.sectors - sector : SIZE_MAX;
  out.record = DecodeRecord(data, wrap_at);
  if (out.record.kind == DecodedRecord::Kind::kOk && out.record.header.lsn != out.lsn) {
    out.record.kind = DecodedRecord::Kind::kCorrupt;
    out.record.reason = fmt::format("record at {} says it is at {}", LsnString(out.lsn),
                                    LsnString(out.record.header.lsn));
  }
  return out;
}

bool LogReader::Next(LogRecordAt* out) {
  if (!status_.ok() || pos_ == end_) return false;
  const auto abs = [this](Lsn l) { return std::uint64_t{CycleOf(l)} * region_.sectors + SectorOf(l); };
  if (abs(end_) < abs(pos_) || abs(end_) - abs(pos_) > region_.sectors) {
    status_ = Status::Corruption(fmt::format("log span {} to {} is not within one pass of the log",
                                             LsnString(pos_), LsnString(end_)));
    return false;
  }
  Result<LogRecordAt> r = ReadRecordAt(region_, SectorOf(pos_), CycleOf(pos_));
  if (!r.ok()) {
    status_ = r.status();
    return false;
  }
  if (r->record.kind != DecodedRecord::Kind::kOk) {
    status_ = Status::Corruption(fmt::format("log record at {}: {} ({})", LsnString(pos_),
                                             DecodedRecordKindName(r->record.kind),
                                             r->record.reason));
    return false;
  }
  const Lsn next = AdvanceLsn(pos_, r->sectors, region_.sectors);
  if (SectorsBetween(pos_, next, region_.sectors) > SectorsBetween(pos_, end_, region_.sectors)) {
    status_ = Status::Corruption(fmt::format("log record at {} runs past the head {}",
                                             LsnString(pos_), LsnString(end_)));
    return false;
  }
  *out = std::move(r).value();
  pos_ = next;
  return true;
}

}  // namespace walfs::journal
