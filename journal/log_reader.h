// Reading records out of the circular log: one record at a position (which
// may wrap past the end of the log), and the records from the tail to the
// head in order.  Recovery and walfs-logprint both read through this.
//
//   LogReader reader(region, position.tail, position.head);
//   LogRecordAt rec;
//   while (reader.Next(&rec)) Use(rec.lsn, rec.record.payload);
//   if (!reader.status().ok()) ...   // corruption between tail and head
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "journal/log_format.h"
#include "journal/log_region.h"
#include "journal/lsn.h"

namespace walfs::journal {

struct LogRecordAt {
  Lsn lsn = kNullLsn;       // where the record starts (its cycle and sector)
  std::uint32_t sectors = 0;  // on-disk size, header included
  DecodedRecord record;
};

// Reads and decodes the record whose header is at `sector`, written in
// `cycle`.  A record that runs past the end of the log continues at sector 0
// with cycle + 1.  I/O errors are returned as Status; format problems as the
// DecodedRecord's kind (kNotARecord also when the header sector belongs to
// another cycle, or its lsn field disagrees with where it was found).
Result<LogRecordAt> ReadRecordAt(const LogRegion& region, std::uint32_t sector,
                                 std::uint32_t cycle);

// The records from `from` (a record start) up to, not including, `to`.
class LogReader {
 public:
  LogReader(const LogRegion& region, Lsn from, Lsn to)
      : region_(region), pos_(from), end_(to) {}

  // The next record; false at `to` or on an error (status() says which).
  bool Next(LogRecordAt* out);
  const Status& status() const { return status_; }
  Lsn position() const { return pos_; }

 private:
  const LogRegion region_;
  Lsn pos_;
  const Lsn end_;
  Status status_;
};

// The LSN `sectors` sectors after `lsn` in a log of `log_sectors`.
Lsn AdvanceLsn(Lsn lsn, std::uint64_t sectors, std::uint32_t log_sectors);
// Sectors from `from` forward to `to` (to must not be behind from).
std::uint64_t SectorsBetween(Lsn from, Lsn to, std::uint32_t log_sectors);

}  // namespace walfs::journal
