// Log: the journal assembled — log-space reservation, the CIL, the log
// writer and its iclogs, the AIL and its pusher — over one log region, with
// recovery at open and a clean-unmount record at close.
//
//   WALFS_ASSIGN_OR_RETURN(std::unique_ptr<Log> log, Log::Open({.device = dev,
//       .log_offset = off, .log_sectors = n}));
//   WALFS_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(log.get(), TransType::kCreate));
//   ... change items, tx.Join(item) ...
//   WALFS_ASSIGN_OR_RETURN(std::uint64_t seq, tx.Commit());
//   WALFS_RETURN_IF_ERROR(log->Force(seq));   // fsync
//   WALFS_RETURN_IF_ERROR(log->Close());      // unmount
//
// Failure: any log I/O error, an overrun of a reservation or a failed
// checkpoint shuts the log down (Shutdown): reservations, commits and
// forces fail with the reason, waiters are woken, nothing more is written,
// and the image is left for recovery at the next open.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <memory>
#include <string>

#include "base/block_device.h"
#include "base/mutex.h"
#include "base/status.h"
#include "journal/ail.h"
#include "journal/cil.h"
#include "journal/log_recover.h"
#include "journal/log_space.h"
#include "journal/log_writer.h"
#include "journal/reservation.h"
#include "journal/wake_mode.h"

namespace walfs::journal {

// The in-flight window recovery and stale-block clearing cover: the widest
// any mount could have used (kMaxIclogCount iclogs of the largest size), at
// most half the log.  A mount's own logbufs x logbsize cannot be used: the
// crashed mount's options are not known.
std::uint32_t RecoveryWindowSectors(std::uint32_t log_sectors);

struct LogOptions {
  BlockDevice* device = nullptr;      // holds the log
  std::uint64_t log_offset = 0;       // byte offset of the log on it
  std::uint32_t log_sectors = 0;
  BlockDevice* metadata = nullptr;    // where logged buffers live; default: device
  ReservationGeometry geometry{};
  WakeMode wake_mode = WakeMode::kWakeQueue;
  HeadLockKind head_lock = HeadLockKind::kMutex;
  std::uint32_t iclog_count = 8;          // logbufs
  std::uint32_t iclog_bytes = 32 * 1024;  // logbsize
  std::int64_t push_bytes = 0;            // CIL background push; 0: min(log/8, 32 MiB)
  std::int64_t push_interval_ns = 0;      // CilOptions::push_interval_ns; 0: off
  std::int64_t lazy_push_ns = 0;          // CilOptions::lazy_push_ns; 0: off
  bool inline_force_io = true;            // LogWriterOptions::inline_force_io
  // Recomputes the checksums of a replayed block by its type (see
  // RecoverOptions::seal).  The filesystem passes fs::SealMetadataBlock.
  std::function<void(std::uint8_t type, std::span<std::byte> block)> seal{};
  // Whether a block's LSN stamp can be trusted (RecoverOptions::stamp_valid).
  // The filesystem passes fs::format::BlockStampValid.
  std::function<bool(std::uint8_t type, std::uint64_t blkno, std::span<const std::byte> block)>
      stamp_valid{};
  // false: refuse to open a log that needs recovery (FailedPrecondition-like
  // InvalidArgument naming the reason) instead of replaying it.
  bool recover = true;
  // The mount's norecovery: the log is neither replayed nor written, and
  // whatever it holds -- committed transactions, even damage -- is left as
  // it is and said in recovery().ignored.  Only for a user that commits
  // nothing (a read-only mount); `recover` does not matter then.
  bool ignore = false;
};

struct LogStats {
  Lsn head = kNullLsn;
  Lsn durable = kNullLsn;
  Lsn tail = kNullLsn;
  bool shutdown = false;
  LogSpaceStats space;
  LogWriterStats writer;
  CilStats cil;
  AilStats ail;
};

class Log {
 public:
  // Recovers the log (unless it is clean), clears the in-flight window past
  // its head, and starts the CIL and AIL threads.
  static Result<std::unique_ptr<Log>> Open(const LogOptions& options);
  // Without Close() this is a crash as far as the image is concerned: the
  // threads stop, nothing more is written.
  ~Log();
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  // Clean unmount: forces the CIL, waits for the AIL to write everything
  // back, writes the unmount record.  The log is unusable afterwards.
  Status Close();

  // Stops the log as a crash would: threads stop, nothing more is written,
  // checkpoints in flight are failed, and the AIL lets go of every item, so
  // the items' owners may be destroyed.  The destructor halts a log that
  // was not closed.  Item writebacks already submitted still complete into
  // the Ail: destroy the items (their destructors wait for writeback)
  // before the Log.
  void Halt();

  // Durability of commit sequence `seq` (0: everything committed so far).
  Status Force(std::uint64_t seq = 0);

  void Shutdown(const Status& why);
  Status status() const;
  bool IsShutdown() const { return shutdown_.load(std::memory_order_acquire); }

  LogSpace& space() { return *space_; }
  Ail& ail() { return *ail_; }
  Cil& cil() { return *cil_; }
  LogWriter& writer() { return *writer_; }
  const ReservationTable& table() const { return table_; }
  const RecoverReport& recovery() const { return recovery_; }
  const LogRegion& region() const { return region_; }
  BlockDevice* metadata() const { return metadata_; }
  LogStats Stats() const;

 private:
  Log(const LogOptions& options, const ReservationTable& table);
  Status ClearStaleBlocks(const LogPosition& p);
  void PushTail();

  const LogRegion region_;
  BlockDevice* const metadata_;
  const std::uint32_t max_inflight_sectors_;  // the widest window any mount may use
  const ReservationTable table_;
  RecoverReport recovery_;
  std::unique_ptr<LogSpace> space_;
  std::unique_ptr<Ail> ail_;
  std::unique_ptr<LogWriter> writer_;
  std::unique_ptr<Cil> cil_;
  std::atomic<bool> shutdown_{false};
  std::atomic<bool> ready_{false};  // every component built (PushTail may run)
  mutable Mutex mu_;
  Status status_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
};

}  // namespace walfs::journal
