#include "journal/log.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/check.h"
#include "base/messages.h"
#include "base/coding.h"
#include "journal/log_head.h"
#include "journal/log_reader.h"

namespace walfs::journal {

std::uint32_t RecoveryWindowSectors(std::uint32_t log_sectors) {
  return std::min<std::uint32_t>(
      LogWriter::kMaxIclogCount * (LogWriter::kMaxIclogBytes / kLogSectorSize), log_sectors / 2);
}

Result<std::unique_ptr<Log>> Log::Open(const LogOptions& options) {
  if (options.device == nullptr) return Status::InvalidArgument("the log needs a device");
  const ReservationTable table(options.geometry);
  std::unique_ptr<Log> log(new Log(options, table));
  WALFS_RETURN_IF_ERROR(log->region_.Validate());

  // Recovery first: it decides where the log goes on from.
  RecoverOptions ro;
  ro.log = log->region_;
  ro.metadata = log->metadata_;
  ro.max_inflight_sectors = log->max_inflight_sectors_;
  ro.dry_run = !options.recover || options.ignore;
  ro.seal = options.seal;
  ro.stamp_valid = options.stamp_valid;
  if (options.ignore) {
    // Read only to say what is being ignored; a log that cannot be read is
    // ignored too (nothing will be written from its head).
    Result<RecoverReport> looked = RecoverLog(ro);
    if (looked.ok()) {
      log->recovery_ = *looked;
      log->recovery_.replayed = false;
      const LogPosition& p = looked->position;
      if (!p.clean && !p.empty && looked->transactions > 0)
        log->recovery_.ignored = fmt::format("it holds {} committed transactions from {} to {}",
                                             looked->transactions, LsnString(p.tail), LsnString(p.head));
    } else {
      log->recovery_.ignored = fmt::format("it cannot be read ({})", looked.status().message());
    }
  } else {
    WALFS_ASSIGN_OR_RETURN(log->recovery_, RecoverLog(ro));
  }
  const LogPosition& p = log->recovery_.position;
  if (!options.ignore && !options.recover && !p.clean && !p.empty && log->recovery_.transactions > 0)
    return Status::InvalidArgument(fmt::format(
        "the log needs recovery ({} committed transactions from {} to {}) and recovery is off",
        log->recovery_.transactions, LsnString(p.tail), LsnString(p.head)));
  // Whatever `recover` says, the log will be written from its head on --
  // unless it is ignored, and then it is never written.
  if (!options.ignore) WALFS_RETURN_IF_ERROR(log->ClearStaleBlocks(p));

  // A sliver of the log is never granted, so the head never catches the
  // tail exactly (a completely full log has no cycle drop to find).
  const std::int64_t log_bytes =
      std::int64_t{options.log_sectors} * kLogSectorSize - options.iclog_bytes;
  Log* raw = log.get();
  WALFS_ASSIGN_OR_RETURN(log->space_, LogSpace::Create({.log_bytes = log_bytes,
                                                        .min_log_bytes = table.MinLogBytes(),
                                                        .wake_mode = options.wake_mode,
                                                        .head_lock = options.head_lock,
                                                        .push_tail = [raw] { raw->PushTail(); }}));
  log->ail_ = std::make_unique<Ail>(AilOptions{.space = log->space_.get(),
                                               .log_sectors = options.log_sectors,
                                               .initial_head = p.head,
                                               .force_log = [raw] { (void)raw->cil_->Force(0); }});
  WALFS_ASSIGN_OR_RETURN(
      log->writer_,
      LogWriter::Create({.region = log->region_,
                         .iclog_count = options.iclog_count,
                         .iclog_bytes = options.iclog_bytes,
                         .head = p.head,
                         .prev = p.last_record,
                         .space = log->space_.get(),
                         .tail_lsn = [raw] { return raw->ail_->tail_lsn(); },
                         .on_error = [raw](const Status& s) { raw->Shutdown(s); },
                         // A record with a preflush is at most a ring past
                         // the stable end; one without, at most this: so
                         // every record a power cut may lose lies in the
                         // window the next mount's head search scans.
                         .unstable_sectors = log->max_inflight_sectors_ -
                                             options.iclog_bytes / kLogSectorSize,
                         .inline_force_io = options.inline_force_io}));
  // Tids only need to differ from those of records still in the log.
  std::uint32_t first_tid = std::random_device{}();
  if (first_tid == 0) first_tid = 1;
  log->cil_ = std::make_unique<Cil>(CilOptions{.writer = log->writer_.get(),
                                               .ail = log->ail_.get(),
                                               .space = log->space_.get(),
                                               .push_bytes = options.push_bytes,
                                               .push_interval_ns = options.push_interval_ns,
                                               .lazy_push_ns = options.lazy_push_ns,
                                               .first_tid = first_tid,
                                               .on_error = [raw](const Status& s) {
                                                 raw->Shutdown(s);
                                               }});
  log->ail_->Start();
  log->cil_->Start();
  log->ready_.store(true, std::memory_order_release);
  return log;
}

Log::Log(const LogOptions& options, const ReservationTable& table)
    : region_{options.device, options.log_offset, options.log_sectors},
      metadata_(options.metadata ? options.metadata : options.device),
      max_inflight_sectors_(RecoveryWindowSectors(options.log_sectors)),
      table_(table) {}

Log::~Log() {
  Halt();
  cil_.reset();
  writer_.reset();
}

void Log::Halt() {
  if (ail_) ail_->Stop();
  if (cil_) cil_->Stop();
  {
    MutexLock l(&mu_);
    if (status_.ok()) status_ = Status::Shutdown("the log was halted");
  }
  shutdown_.store(true, std::memory_order_release);
  const Status halted = Status::Shutdown("the log was halted");
  if (cil_) cil_->Shutdown(halted);
  if (writer_) {
    writer_->Shutdown(halted);
    writer_->WaitIdle();  // in-flight checkpoints fail and unpin their items
  }
  if (space_) space_->Shutdown();
  if (ail_) ail_->RemoveAll();
}

// xlog_clear_stale_blocks: records that were in flight at a crash may have
// landed partly past the head.  Once new records are written there, an old
// sector that happens to carry the same cycle would make the next head
// search run on into garbage.  So the window past the head that could hold
// such sectors (never reaching the tail) gets the previous pass's cycle.
Status Log::ClearStaleBlocks(const LogPosition& p) {
  const std::uint32_t n = region_.sectors;
  const std::uint64_t used = SectorsBetween(p.tail, p.head, n);
  std::uint64_t window = std::uint64_t{max_inflight_sectors_};
  if (window > n - used) window = n - used;
  const std::uint32_t cycle = CycleOf(p.head);
  const std::uint32_t start = SectorOf(p.head);
  std::string sectors;
  sectors.reserve(window * kLogSectorSize);
  auto flush_run = [&](std::uint32_t first) -> Status {
    if (sectors.empty()) return Status::Ok();
    Status s = region_.WriteSectors(first, sectors);
    sectors.clear();
    return s;
  };
  std::uint32_t run_start = start;
  for (std::uint64_t i = 0; i < window; ++i) {
    const std::uint64_t pos = start + i;
    if (pos == n) {
      WALFS_RETURN_IF_ERROR(flush_run(run_start));
      run_start = 0;
    }
    const std::uint32_t stamp = pos < n ? cycle - 1 : cycle;
    const std::size_t at = sectors.size();
    sectors.resize(at + kLogSectorSize);  // zeros, then the stamp
    EncodeFixed32(sectors.data() + at, stamp);
  }
  WALFS_RETURN_IF_ERROR(flush_run(run_start));
  return region_.device->Flush();
}

Status Log::Close() {
  {
    MutexLock l(&mu_);
    if (closed_) return Status::Ok();
    if (!status_.ok()) return status_;
  }
  WALFS_RETURN_IF_ERROR(Force(0));
  if (!ail_->WaitEmpty()) return status();
  if (metadata_ != region_.device) WALFS_RETURN_IF_ERROR(metadata_->Flush());
  // The unmount record has a ticket of its own, like every write to the log.
  WALFS_ASSIGN_OR_RETURN(TicketRef tic,
                         space_->Reserve(LogWriter::kUnmountBytes, 1, /*permanent=*/false));
  WALFS_CHECK(tic->Consume(LogWriter::kUnmountBytes));
  space_->TicketUngrant(tic.get());
  WALFS_RETURN_IF_ERROR(writer_->WriteUnmount(tic->tid(), LogWriter::kUnmountBytes));
  // Everything up to the head is on disk and needed by nothing: its space
  // and the writer's fund go back, leaving the grant heads at zero.
  ail_->AdvanceHead(writer_->head());
  writer_->ReturnFund();
  {
    MutexLock l(&mu_);
    closed_ = true;
    status_ = Status::Shutdown("the log is closed");
  }
  shutdown_.store(true, std::memory_order_release);
  ail_->Stop();
  cil_->Stop();
  space_->Shutdown();  // reservations fail from now on
  return Status::Ok();
}

Status Log::Force(std::uint64_t seq) {
  WALFS_RETURN_IF_ERROR(status());
  Status s = cil_->Force(seq);
  // The component that failed reports to Shutdown too, maybe from another
  // thread a moment later: make the log's state match what we return.
  if (!s.ok()) Shutdown(s);
  return s;
}

void Log::Shutdown(const Status& why) {
  {
    MutexLock l(&mu_);
    if (!status_.ok()) return;
    status_ = why.IsShutdown() ? why : Status::Shutdown(fmt::format("log shut down: {}", why.ToString()));
  }
  shutdown_.store(true, std::memory_order_release);
  Message(Severity::kError,
          "log shut down: {}; nothing more is written: unmount, and the next mount recovers the log",
          why.ToString());
  if (space_) space_->Shutdown();
  if (ail_) ail_->Shutdown();
  if (cil_) cil_->Shutdown(why);
  if (writer_) writer_->Shutdown(why);
}

Status Log::status() const {
  MutexLock l(&mu_);
  return status_;
}

void Log::PushTail() {
  if (!ready_.load(std::memory_order_acquire)) return;
  ail_->PushAll();
  cil_->PushAsync();
}

LogStats Log::Stats() const {
  LogStats s;
  s.space = space_->Stats();
  s.writer = writer_->Stats();
  s.cil = cil_->Stats();
  s.ail = ail_->Stats();
  s.head = s.writer.head;
  s.durable = s.writer.durable;
  s.tail = s.ail.tail;
  s.shutdown = IsShutdown();
  return s;
}

}  // namespace walfs::journal
