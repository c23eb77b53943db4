#include "fs/fsck_log.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "base/coding.h"
#include "journal/log.h"
#include "journal/log_format.h"
#include "journal/log_head.h"
#include "journal/log_reader.h"
#include "journal/log_region.h"
#include "journal/log_transactions.h"

namespace walfs::fs {

namespace {

journal::LogRegion RegionOf(BlockDevice* device, const format::Superblock& sb) {
  return journal::LogRegion{device, sb.log_offset(), sb.log_sectors()};
}

// The log is rewritten this many sectors at a time.
constexpr std::uint32_t kChunkSectors = 256;

// The cycle the new log must start past.  Every LSN stamped on a metadata
// block is the LSN of a record that was written whole, so the highest cycle
// of a record that still reads whole (its header, payload stamps and CRC
// agree) bounds them: a record since damaged was written in that cycle or
// the one after it (a log holds at most two passes), and the new log starts
// two past it.  A damaged sector's stamp says nothing -- one flipped to
// 0xffffffff once made -L refuse to restart the log at all -- so a stamp
// counts only when its record reads whole.  With no whole record the
// sectors' stamps are all there is: the highest below the refusal limit.
Result<std::uint32_t> HighestRecordCycle(const journal::LogRegion& region) {
  std::uint32_t best = 0, best_stamp = 0;
  for (std::uint32_t first = 0; first < region.sectors; first += kChunkSectors) {
    const std::uint32_t n = std::min(kChunkSectors, region.sectors - first);
    WALFS_ASSIGN_OR_RETURN(std::string bytes, region.ReadSectors(first, n));
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::string_view sector = std::string_view(bytes).substr(std::size_t{i} * journal::kLogSectorSize,
                                                                     journal::kLogSectorSize);
      const std::uint32_t cycle = journal::SectorCycle(sector);
      if (cycle < 0xfffffff0u) best_stamp = std::max(best_stamp, cycle);
      if (cycle == 0 || cycle <= best || DecodeFixed32(sector.data()) != journal::kRecordMagic) continue;
      WALFS_ASSIGN_OR_RETURN(journal::LogRecordAt rec, journal::ReadRecordAt(region, first + i, cycle));
      if (rec.record.kind == journal::DecodedRecord::Kind::kOk) best = cycle;
    }
  }
  return best != 0 ? best : best_stamp;
}

}  // namespace

Result<std::string> DescribeLogLoss(BlockDevice* device, const format::Superblock& sb) {
  const journal::LogRegion region = RegionOf(device, sb);
  auto pos = journal::FindLogPosition(region, journal::RecoveryWindowSectors(region.sectors));
  if (!pos.ok())
    return fmt::format("the log cannot be searched ({}): every change it holds is lost",
                       pos.status().message());
  if (pos->empty || pos->clean) return std::string();
  journal::TransactionAssembler tx;
  journal::LogReader reader(region, pos->tail, pos->head);
  journal::LogRecordAt rec;
  std::uint64_t records = 0;
  while (reader.Next(&rec)) {
    if (!tx.AddRecord(rec.lsn, rec.record.payload).ok()) break;
    ++records;
  }
  if (reader.status().ok())
    return fmt::format("the log reads whole ({} records, {} committed transactions); zeroing it loses "
                       "them all",
                       records, tx.committed().size());
  return fmt::format("{} committed transactions in {} readable records before the damage at {} ({}), "
                     "and everything after it up to the head at {}, are lost",
                     tx.committed().size(), records, journal::LsnString(reader.position()),
                     reader.status().message(), journal::LsnString(pos->head));
}

Status ZeroLog(BlockDevice* device, const format::Superblock& sb) {
  const journal::LogRegion region = RegionOf(device, sb);
  WALFS_ASSIGN_OR_RETURN(const std::uint32_t max_cycle, HighestRecordCycle(region));
  // Damage may have left a huge cycle in a record that still reads whole;
  // past it the cycle would wrap, which nothing can order.
  if (max_cycle >= 0xfffffff0u)
    return Status::Corruption(fmt::format("the log carries cycle {}, too near the largest to restart past it",
                                          max_cycle));
  const std::uint32_t cycle = max_cycle + 2;
  std::string payload;
  journal::AppendOp(&payload, journal::OpHeader{1, 0, journal::kOpUnmount, journal::ItemType::kNone}, "");
  journal::RecordHeader h;
  h.cycle = cycle;
  h.flags = journal::kRecordUnmount;
  h.lsn = journal::MakeLsn(cycle, 0);
  h.tail_lsn = h.lsn;
  h.num_ops = 1;
  const std::string record = journal::EncodeRecord(h, payload);
  const std::uint32_t record_sectors = static_cast<std::uint32_t>(record.size() / journal::kLogSectorSize);
  std::string sector(journal::kLogSectorSize, '\0');
  EncodeFixed32(sector.data(), cycle - 1);
  for (std::uint32_t first = record_sectors; first < region.sectors; first += kChunkSectors) {
    const std::uint32_t n = std::min(kChunkSectors, region.sectors - first);
    std::string bytes;
    bytes.reserve(std::size_t{n} * journal::kLogSectorSize);
    for (std::uint32_t i = 0; i < n; ++i) bytes += sector;
    WALFS_RETURN_IF_ERROR(region.WriteSectors(first, bytes));
  }
  // The record last, once the rest is down: a crash before it leaves a log
  // of stale sectors, which -L can zero again.
  WALFS_RETURN_IF_ERROR(device->Flush());
  WALFS_RETURN_IF_ERROR(region.WriteSectors(0, record));
  WALFS_RETURN_IF_ERROR(device->Flush());
  // What a mount will find: a clean log in the new cycle.
  WALFS_ASSIGN_OR_RETURN(journal::LogPosition p,
                         journal::FindLogPosition(region, journal::RecoveryWindowSectors(region.sectors)));
  if (!p.clean || journal::CycleOf(p.head) != cycle)
    return Status::Corruption(fmt::format("the rewritten log does not read back clean ({})",
                                          journal::LogPositionString(p)));
  return Status::Ok();
}

}  // namespace walfs::fs
