#include "journal/log_head.h"

#include <algorithm>
#include <string_view>

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
    if (s.size() >= kLogSectorSize && DecodeFixed32(s.data()) == kRecordMagic && SectorCycle(s) == cycle) {
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
  // Positions are absolute from here on, cycle * n + sector, so that the
  // window and the walk back run across the physical end of the log.
  const auto abs = [n](Lsn l) { return std::uint64_t{CycleOf(l)} * n + SectorOf(l); };

  // 1. The cycle boundary.  The current pass wrote [0, h) with first_cycle;
  // [h, n) still holds the previous pass (first_cycle - 1), or was never
  // written (0) in the first pass.
  WALFS_ASSIGN_OR_RETURN(const std::uint32_t last_cycle, region.CycleAt(n - 1));
  std::uint32_t h = n;
  if (last_cycle != first_cycle) {
    WALFS_ASSIGN_OR_RETURN(h, FirstOtherCycle(region, 0, n, first_cycle));
  }
  const std::uint64_t boundary = std::uint64_t{first_cycle} * n + h;

  // 2. The in-flight window (xlog_find_verify_cycle).  Iclogs complete out of
  // order, so the last max_inflight_sectors before the boundary may hold
  // holes: sectors the pass that should have written them did not.  Every
  // sector there must carry the cycle of its own pass, a / n; the first that
  // does not is the head.  When the boundary is near the start of the log
  // the window straddles its physical end, and its first part is the end of
  // the previous pass, which must carry first_cycle - 1 (the two-part scan
  // of xlog_find_head): a record split across the end whose first half did
  // not land leaves such a hole, with its second half, in the current
  // cycle, after it.  Cycle 0 was never written: the window stops there.
  const std::uint64_t window_start = std::max<std::uint64_t>(
      boundary - std::min<std::uint64_t>(boundary, max_inflight_sectors), n);
  std::uint64_t head_abs = boundary;
  if (window_start < boundary) {
    const auto count = static_cast<std::uint32_t>(boundary - window_start);
    WALFS_ASSIGN_OR_RETURN(
        const std::string window,
        region.ReadSectors(static_cast<std::uint32_t>(window_start % n), count));
    for (std::uint32_t i = 0; i < count; ++i) {
      const std::uint64_t a = window_start + i;
      const std::string_view sector(window.data() + std::size_t{i} * kLogSectorSize,
                                    kLogSectorSize);
      if (SectorCycle(sector) != a / n) {
        head_abs = a;
        pos.hole_sectors = static_cast<std::uint32_t>(boundary - a);
        break;
      }
    }
  }
  // Outside the window the last sector carries the current pass or the one
  // before it; anything else is not a crash the writer can leave behind.
  // (Inside the window, a hole there was dealt with above.)
  const std::uint64_t last_abs = std::uint64_t{first_cycle} * n - 1;
  if (last_cycle != first_cycle && last_cycle != first_cycle - 1 && last_abs < window_start)
    return Status::Corruption(fmt::format("log cycles {} at its start and {} at its end",
                                          first_cycle, last_cycle));
  const auto lsn_at = [n](std::uint64_t a) {
    return MakeLsn(static_cast<std::uint32_t>(a / n), static_cast<std::uint32_t>(a % n));
  };
  Lsn head = lsn_at(head_abs);

  // 3. The last record (xlog_find_verify_log_record).  Walk back from the
  // head to the last complete record; the scan covers the largest record
  // plus the in-flight window.  Records found broken in the window are
  // dropped (the head moves to their start).
  const std::uint64_t max_scan =
      std::min<std::uint64_t>(n, RecordBytes(kMaxRecordPayload) / kLogSectorSize +
                                     std::uint64_t{max_inflight_sectors});
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
    // The last record must end at the head.  Sectors between carry the
    // right cycle but no record header: a record whose header sector did
    // not land (or was damaged).  In the window that is the end of the log;
    // further back it is corruption, as for a bad record.
    const std::uint64_t end = a + rec.sectors;
    if (end < abs(head)) {
      if (end < window_floor)
        return Status::Corruption(fmt::format(
            "log sectors {} to {} before the head are not a record", LsnString(lsn_at(end)),
            LsnString(head)));
      pos.hole_sectors += static_cast<std::uint32_t>(abs(head) - end);
      head = lsn_at(end);
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
