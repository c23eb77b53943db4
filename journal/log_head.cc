#include "journal/log_head.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/coding.h"
#include "journal/log_reader.h"

namespace walfs::journal {

namespace {

// The first sector in [lo, hi) whose cycle is not `cycle`, assuming the
// sectors are `cycle` up to some point and something else after it.
Result<std::uint32_t> FirstOtherCycle(const LogRegion& region, std::uint32_t lo, std::uint32_t hi,
                                      std::uint32_t cycle) {
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    WALFS_ASSIGN_OR_RETURN(std::uint32_t c, region.CycleAt(mid));
    if (c == cycle)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace

std::string LogPositionString(const LogPosition& p) {
  if (p.empty) return "empty log";
  return fmt::format("head {} tail {} last record {}{}{}{}{}", LsnString(p.head), LsnString(p.tail),
                     LsnString(p.last_record), p.clean ? " (clean)" : "",
                     p.trimmed_records ? fmt::format(", {} torn record(s) dropped", p.trimmed_records)
                                       : "",
                     p.hole_sectors ? fmt::format(", {} unwritten sector(s) before the head",
                                                  p.hole_sectors)
                                    : "",
                     p.tail_skipped_sectors
                         ? fmt::format(", tail moved past {} reused sector(s)", p.tail_skipped_sectors)
                         : "");
}

namespace {

// xlog_verify_tail: the tail a record names is where the oldest record
// recovery needs starts -- as of when that record was written.  Writeback
// may have moved the tail further since, freeing space that a later record
// then reused; if that record was torn by the crash (so the head is before
// it), the start of the old tail's records may be gone.  That can only
// happen within the in-flight window past the head; there, a record that
// does not read back is skipped, and the tail moves to the first whole
// record after it.  Skipping is safe: the space was reused only after the
// writeback that freed it completed, and the reusing record's preflush made
// that writeback durable before any of it landed.
Status VerifyTail(const LogRegion& region, std::uint32_t max_inflight, LogPosition* pos) {
  const std::uint32_t n = region.sectors;
  const auto abs = [n](Lsn l) { return std::uint64_t{CycleOf(l)} * n + SectorOf(l); };
  const std::uint64_t t = abs(pos->tail), h = abs(pos->head);
  if (h - t + max_inflight <= n) return Status::Ok();  // the window cannot reach the tail
  const std::uint64_t danger_end = h + max_inflight - n;
  bool skipped = false;
  for (std::uint64_t a = t; a < h;) {
    if (!skipped && a >= danger_end) return Status::Ok();
    const auto cycle = static_cast<std::uint32_t>(a / n);
    const auto sector = static_cast<std::uint32_t>(a % n);
    WALFS_ASSIGN_OR_RETURN(std::string s, region.ReadSectors(sector, 1));
    bool good = false;
    std::uint32_t len = 1;
    if (DecodeFixed32(s.data()) == kRecordMagic && SectorCycle(s) == cycle) {
      WALFS_ASSIGN_OR_RETURN(LogRecordAt rec, ReadRecordAt(region, sector, cycle));
      good = rec.record.kind == DecodedRecord::Kind::kOk && a + rec.sectors <= h;
      len = rec.sectors;
    }
    if (good && skipped) {
      pos->tail_skipped_sectors = static_cast<std::uint32_t>(a - t);
      pos->tail = MakeLsn(cycle, sector);
      return Status::Ok();
    }
    if (good) {
      a += len;
      continue;
    }
    if (a >= danger_end)
      return Status::Corruption(fmt::format(
          "log record at {} between the tail and the head does not read back",
          LsnString(MakeLsn(cycle, sector))));
    skipped = true;
    a += 1;
  }
  if (!skipped) return Status::Ok();
  // Everything from the tail to the head was reused or torn: nothing to replay.
  pos->tail_skipped_sectors = static_cast<std::uint32_t>(h - t);
  pos->tail = pos->head;
  return Status::Ok();
}

}  // namespace

Result<LogPosition> FindLogPosition(const LogRegion& region, std::uint32_t max_inflight_sectors) {
  WALFS_RETURN_IF_ERROR(region.Validate());
  const std::uint32_t n = region.sectors;
  // No writer keeps more than half the log in flight (LogWriter refuses a
  // ring that large), and a wider window would let damage anywhere pass for
  // a torn write.
  max_inflight_sectors = std::min(max_inflight_sectors, n / 2);
  LogPosition pos;
  WALFS_ASSIGN_OR_RETURN(const std::uint32_t first_cycle, region.CycleAt(0));
  if (first_cycle == 0) {
    pos.empty = true;
    return pos;
  }
  // The current pass wrote [0, h) with first_cycle; [h, n) still holds the
  // previous pass (first_cycle - 1) or was never written (0).
  WALFS_ASSIGN_OR_RETURN(const std::uint32_t last_cycle, region.CycleAt(n - 1));
  std::uint32_t h = n;
  if (last_cycle != first_cycle) {
    if (last_cycle != first_cycle - 1 && last_cycle != 0)
      return Status::Corruption(fmt::format("log cycles {} at its start and {} at its end",
                                            first_cycle, last_cycle));
    WALFS_ASSIGN_OR_RETURN(h, FirstOtherCycle(region, 0, n, first_cycle));
  }
  // Out-of-order completion: the last in-flight window may hold sectors
  // not yet written in this pass.  The head is the first of them.
  const std::uint32_t window = std::min(max_inflight_sectors, h);
  for (std::uint32_t s = h - window; s < h; ++s) {
    WALFS_ASSIGN_OR_RETURN(std::uint32_t c, region.CycleAt(s));
    if (c != first_cycle) {
      pos.hole_sectors = h - s;
      h = s;
      break;
    }
  }
  Lsn head = h == n ? MakeLsn(first_cycle + 1, 0) : MakeLsn(first_cycle, h);

  // Walk back from the head to the last complete record.  The scan covers
  // the largest record plus the in-flight window; records found broken in
  // the window are dropped (the head moves to their start).
  const std::uint64_t max_scan =
      std::min<std::uint64_t>(n, RecordBytes(kMaxRecordPayload) / kLogSectorSize +
                                     std::uint64_t{max_inflight_sectors});
  const auto abs = [n](Lsn l) { return std::uint64_t{CycleOf(l)} * n + SectorOf(l); };
  const std::uint64_t scan_floor = abs(head) > max_scan ? abs(head) - max_scan : n;
  // Only records that start inside the in-flight window can be incomplete:
  // an iclog is reused only after its write completed, so every record that
  // starts earlier was whole before the crash.
  const std::uint64_t window_floor =
      abs(head) > max_inflight_sectors ? abs(head) - max_inflight_sectors : 0;
  for (std::uint64_t a = abs(head); a > scan_floor;) {
    --a;
    const auto cycle = static_cast<std::uint32_t>(a / n);
    const auto sector = static_cast<std::uint32_t>(a % n);
    if (cycle == 0) break;
    WALFS_ASSIGN_OR_RETURN(std::string s, region.ReadSectors(sector, 1));
    if (DecodeFixed32(s.data()) != kRecordMagic || SectorCycle(s) != cycle) continue;
    WALFS_ASSIGN_OR_RETURN(LogRecordAt rec, ReadRecordAt(region, sector, cycle));
    const bool fits = rec.record.kind == DecodedRecord::Kind::kOk &&
                      a + rec.sectors <= abs(head);
    if (!fits) {
      if (a < window_floor)
        return Status::Corruption(fmt::format("log record at {} before the head is {}: {}",
                                              LsnString(rec.lsn),
                                              DecodedRecordKindName(rec.record.kind),
                                              rec.record.reason));
      // Cut short by the crash: the log ends before it.
      ++pos.trimmed_records;
      head = rec.lsn;
      continue;
    }
    pos.head = head;
    pos.last_record = rec.lsn;
    pos.tail = rec.record.header.tail_lsn;
    pos.clean = (rec.record.header.flags & kRecordUnmount) != 0;
    if (abs(pos.tail) > abs(rec.lsn) || abs(rec.lsn) - abs(pos.tail) >= n || CycleOf(pos.tail) == 0)
      return Status::Corruption(fmt::format("record {} names tail {}, outside the log",
                                            LsnString(rec.lsn), LsnString(pos.tail)));
    WALFS_RETURN_IF_ERROR(VerifyTail(region, max_inflight_sectors, &pos));
    return pos;
  }
  // Written sectors but no complete record: everything was torn.  The log
  // holds nothing to replay; the next record starts where the head is.
  pos.head = head;
  pos.tail = head;
  return pos;
}

}  // namespace walfs::journal
