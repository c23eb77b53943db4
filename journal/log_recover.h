// Log recovery (XFS's xlog_recover): after a crash, replay the committed
// metadata changes between the log's tail and head onto the metadata device.
//
//   WALFS_ASSIGN_OR_RETURN(RecoverReport r,
//                          RecoverLog({.log = region, .metadata = dev}));
//   fmt::print("{}\n", RecoverReportString(r));
//   // the log head is r.position.head; the next record goes there
//
// The steps (docs/log_format.md, "Recovery"):
//   1. FindLogPosition.  An empty log, or one whose last record is a clean
//      unmount record, has nothing to replay.
//   2. Read every record from the tail to the head and reassemble the
//      transactions (TransactionAssembler); only committed ones count.
//   3. Pass 1: decode every buffer body and build the cancel table (the
//      last cancel record of each block).
//   4. Pass 2: replay the buffer versions in commit order into an in-memory
//      cache of blocks, skipping a version that a later cancel record
//      supersedes and one whose block already carries its change (the LSN
//      stamped on disk is at or past the transaction's start LSN).
//   5. Write every changed block, then Flush().
// Everything is read and decided before the first write, so a corrupt
// record (anywhere between tail and head) or an unreadable block fails
// recovery with the device untouched.  Replay is idempotent: running it
// again, after it finished or after a crash among its block writes, leaves
// the same image.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "base/block_device.h"
#include "base/status.h"
#include "journal/log_head.h"
#include "journal/log_region.h"

namespace walfs::journal {

struct RecoverOptions {
  LogRegion log;
  // Buffers are replayed onto this device at blkno * block_size; the log's
  // device when null.
  BlockDevice* metadata = nullptr;
  std::uint32_t max_inflight_sectors = kDefaultMaxInflightSectors;
  // Decide and count everything, write nothing.
  bool dry_run = false;
  // Called on every replayed block before it is written, with the type of
  // the last version applied (BufLogFormat::type): recomputes the block's
  // checksums, which the logged chunks do not keep current.  Optional.
  std::function<void(std::uint8_t type, std::span<std::byte> block)> seal{};
  // Whether the block on disk is a block of this type at this address, so
  // that its LSN stamp means something (XFS's xlog_recover_get_buf_lsn
  // looks at the magic first).  A block that is not -- file data, or a
  // block never written as metadata since it was allocated -- is replayed
  // whatever its bytes at lsn_offset say.  Optional: without it every
  // stamp is trusted.
  std::function<bool(std::uint8_t type, std::uint64_t blkno, std::span<const std::byte> block)>
      stamp_valid{};
};

struct RecoverReport {
  LogPosition position;
  bool replayed = false;             // false: empty or clean log, nothing read
  std::uint64_t records = 0;         // records read from tail to head
  std::uint64_t transactions = 0;    // committed transactions
  std::uint64_t dropped_open = 0;    // transactions started but not committed
  std::uint64_t orphan_ops = 0;      // ops of transactions started before the tail
  std::uint64_t skipped_ops = 0;     // ops of skippable item types not known here
  std::uint64_t buffers_replayed = 0;
  std::uint64_t buffers_skipped_newer = 0;  // the block on disk already had them
  std::uint64_t buffers_cancelled = 0;      // superseded by a later cancel record
  std::uint64_t cancel_records = 0;
  std::uint64_t blocks_written = 0;  // distinct blocks changed (written unless dry_run)
  // LogOptions::ignore: what the log held that was not replayed ("it holds
  // 3 committed transactions ...", "it cannot be read (...)"); empty if nothing.
  std::string ignored;
};

// What replay did with one logged buffer version (the recover_buffer
// trace event's `action` field).
enum class ReplayAction : std::uint8_t {
  kReplayed = 0,
  kSkippedNewer = 1,  // the block on disk carries a stamp at or past the transaction
  kCancelled = 2,     // a later cancel record says the block was freed
};
std::string_view ReplayActionName(ReplayAction a);

Result<RecoverReport> RecoverLog(const RecoverOptions& options);

// "head 1:40 tail 1:0: 5 records, 3 transactions (1 open dropped, ...), ..."
std::string RecoverReportString(const RecoverReport& r);

}  // namespace walfs::journal
