// Finding where the log ends after a crash (XFS's xlog_find_head and
// xlog_find_tail): the head is where the cycle numbers stamped in the
// sectors drop; the last complete record before it names the tail.
//
// Records are written by several in-core log buffers at once and may
// complete out of order, so the sectors just before the head can hold holes
// (sectors still from an older pass) and records that were cut short.
// Within the last `max_inflight_sectors` before the head -- a window that
// runs back across the physical end of the log when the head is near its
// start -- a hole moves the head back to it, and a record that is torn,
// truncated, fails its CRC or lost its header is the end of the log, not
// corruption.  Further back, a bad record is corruption.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "journal/log_region.h"
#include "journal/lsn.h"

namespace walfs::journal {

struct LogPosition {
  bool empty = false;         // never written: head = tail = 1:0
  Lsn head = MakeLsn(1, 0);   // where the next record goes
  Lsn tail = MakeLsn(1, 0);   // the oldest record recovery must read
  Lsn last_record = kNullLsn; // the last complete record before the head
  bool clean = false;         // that record is a clean-unmount record
  std::uint32_t trimmed_records = 0;  // torn records dropped at the head
  std::uint32_t hole_sectors = 0;     // head moved back over this many sectors
  // The tail moved forward over records reused by a write torn at the head
  // (see VerifyTail in log_head.cc).
  std::uint32_t tail_skipped_sectors = 0;
};

// 8 in-core log buffers of 32 KiB, the default.  FindLogPosition uses at
// most half the log whatever it is given.
inline constexpr std::uint32_t kDefaultMaxInflightSectors = 8 * 32768 / kLogSectorSize;

Result<LogPosition> FindLogPosition(const LogRegion& region,
                                    std::uint32_t max_inflight_sectors = kDefaultMaxInflightSectors);

std::string LogPositionString(const LogPosition& p);

}  // namespace walfs::journal
