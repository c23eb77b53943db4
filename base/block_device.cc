#include "base/block_device.h"

#include <algorithm>
#include <bit>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/check.h"
#include "base/mutex.h"

namespace walfs {

namespace {

thread_local bool tls_completion_thread = false;

}  // namespace

namespace internal {
void MarkCompletionThread() { tls_completion_thread = true; }
bool IsCompletionThread() { return tls_completion_thread; }
}  // namespace internal

std::string_view IoOpName(IoOp op) {
  switch (op) {
    case IoOp::kRead: return "read";
    case IoOp::kWrite: return "write";
    case IoOp::kFlush: return "flush";
  }
  return "?";
}

std::string IoFlagsToString(IoFlags flags) {
  if (flags == 0) return "-";
  std::string out;
  if (flags & kIoFua) out += "fua";
  if (flags & kIoPreflush) out += out.empty() ? "preflush" : "|preflush";
  if (const IoFlags unknown = flags & ~kIoAllFlags; unknown != 0)
    out += fmt::format("{}0x{:x}", out.empty() ? "" : "|", unknown);
  return out;
}

IoRequest IoRequest::Read(std::uint64_t offset, void* buf, std::size_t len, IoCallback done) {
  return IoRequest{IoOp::kRead, 0, offset, static_cast<std::byte*>(buf), len, std::move(done)};
}

IoRequest IoRequest::Write(std::uint64_t offset, const void* buf, std::size_t len,
                           IoFlags flags, IoCallback done) {
  // The one const_cast: a request carries one buffer pointer for both
  // directions, and a write only ever reads through it.
  return IoRequest{IoOp::kWrite, flags, offset,
                   const_cast<std::byte*>(static_cast<const std::byte*>(buf)), len,
                   std::move(done)};
}

IoRequest IoRequest::Flush(IoCallback done) {
  return IoRequest{IoOp::kFlush, 0, 0, nullptr, 0, std::move(done)};
}

BlockDevice::BlockDevice(std::uint64_t size_bytes, std::uint32_t logical_block_size,
                         std::uint32_t io_alignment)
    : size_bytes_(size_bytes),
      logical_block_size_(logical_block_size),
      io_alignment_(io_alignment) {
  WALFS_CHECK_MSG(std::has_single_bit(logical_block_size), "sector size must be a power of two");
  WALFS_CHECK_MSG(std::has_single_bit(io_alignment), "I/O alignment must be a power of two");
}

Status BlockDevice::Grow(std::uint64_t new_size) {
  if (new_size <= size_bytes()) return Status::Ok();
  WALFS_RETURN_IF_ERROR(DoGrow(new_size));
  size_bytes_.store(new_size, std::memory_order_release);
  return Status::Ok();
}

Status BlockDevice::DoGrow(std::uint64_t new_size) {
  return Status::NotSupported(fmt::format("a {} device of {} bytes cannot grow to {} bytes", kind(),
                                          size_bytes(), new_size));
}

std::string BlockDevice::Describe() const {
  return fmt::format("{}: {} bytes, {}-byte sectors", kind(), size_bytes(),
                     logical_block_size_);
}

Status BlockDevice::Validate(const IoRequest& req) const {
  const std::string_view op = IoOpName(req.op);
  if (req.flags & ~kIoAllFlags)
    return Status::InvalidArgument(fmt::format("{}: unknown flags 0x{:x}", op, req.flags));
  if (req.op == IoOp::kFlush) {
    if (req.flags != 0 || req.len != 0)
      return Status::InvalidArgument("flush: takes no range and no flags");
    return Status::Ok();
  }
  if (req.op == IoOp::kRead && req.flags != 0)
    return Status::InvalidArgument(
        fmt::format("read: flags {} apply to writes only", IoFlagsToString(req.flags)));
  if (req.len > 0 && req.buf == nullptr)
    return Status::InvalidArgument(fmt::format("{}: null buffer for {} bytes", op, req.len));
  // Written so that offset + len cannot overflow.
  const std::uint64_t size = size_bytes();
  if (req.offset > size || req.len > size - req.offset)
    return Status::InvalidArgument(
        fmt::format("{} [{}, +{}) is beyond the end of the device ({} bytes)", op,
                    req.offset, req.len, size));
  const std::uint64_t mask = io_alignment_ - 1;
  if ((req.offset & mask) != 0 || (req.len & mask) != 0 ||
      (reinterpret_cast<std::uintptr_t>(req.buf) & mask) != 0)
    return Status::InvalidArgument(
        fmt::format("{} [{}, +{}) buffer {}: not aligned to {} bytes (O_DIRECT)", op,
                    req.offset, req.len, static_cast<const void*>(req.buf), io_alignment_));
  return Status::Ok();
}

Status BlockDevice::Refuse(Status s) {
  refused_.fetch_add(1, std::memory_order_relaxed);
  return s;
}

void BlockDevice::Count(const IoRequest& req) {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  switch (req.op) {
    case IoOp::kRead:
      reads_.fetch_add(1, kRelaxed);
      bytes_read_.fetch_add(req.len, kRelaxed);
      break;
    case IoOp::kWrite:
      writes_.fetch_add(1, kRelaxed);
      bytes_written_.fetch_add(req.len, kRelaxed);
      if (req.flags & kIoFua) fua_writes_.fetch_add(1, kRelaxed);
      if (req.flags & kIoPreflush) preflush_writes_.fetch_add(1, kRelaxed);
      break;
    case IoOp::kFlush:
      flushes_.fetch_add(1, kRelaxed);
      break;
  }
}

Status BlockDevice::Read(std::uint64_t offset, void* buf, std::size_t len) {
  IoRequest req = IoRequest::Read(offset, buf, len, nullptr);
  if (Status s = Validate(req); !s.ok()) return Refuse(std::move(s));
  Count(req);
  return DoRead(offset, req.buf, len);
}

Status BlockDevice::Write(std::uint64_t offset, const void* buf, std::size_t len,
                          IoFlags flags) {
  IoRequest req = IoRequest::Write(offset, buf, len, flags, nullptr);
  if (Status s = Validate(req); !s.ok()) return Refuse(std::move(s));
  Count(req);
  const std::uint64_t ticket = (flags & kIoPreflush) ? NextFlushTicket() : 0;
  Status s = DoWrite(offset, req.buf, len, flags);
  if (s.ok() && ticket != 0) FlushDone(ticket);
  return s;
}

Status BlockDevice::Flush() {
  flushes_.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t ticket = NextFlushTicket();
  Status s = DoFlush();
  if (s.ok()) FlushDone(ticket);
  return s;
}

Status BlockDevice::CheckRange(std::string_view what, std::uint64_t offset, std::uint64_t len) {
  // Written so that offset + len cannot overflow.
  const std::uint64_t size = size_bytes();
  if (offset > size || len > size - offset)
    return Refuse(Status::InvalidArgument(fmt::format(
        "{} [{}, +{}) is beyond the end of the device ({} bytes)", what, offset, len, size)));
  const std::uint64_t mask = logical_block_size_ - 1;
  if ((offset & mask) != 0 || (len & mask) != 0)
    return Refuse(Status::InvalidArgument(fmt::format(
        "{} [{}, +{}): not aligned to the {}-byte sector", what, offset, len, logical_block_size_)));
  return Status::Ok();
}

Status BlockDevice::Discard(std::uint64_t offset, std::uint64_t len) {
  WALFS_RETURN_IF_ERROR(CheckRange("discard", offset, len));
  if (len == 0) return Status::Ok();
  discards_.fetch_add(1, std::memory_order_relaxed);
  Status s = DoDiscard(offset, len);
  if (s.ok()) bytes_discarded_.fetch_add(len, std::memory_order_relaxed);
  return s;
}

Status BlockDevice::Zero(std::uint64_t offset, std::uint64_t len) {
  WALFS_RETURN_IF_ERROR(CheckRange("zeroing", offset, len));
  if (len == 0) return Status::Ok();
  return DoZero(offset, len);
}

Status BlockDevice::DoZero(std::uint64_t offset, std::uint64_t len) {
  constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;
  const std::vector<std::byte> zeros(std::min(kChunk, len));
  for (std::uint64_t done = 0; done < len;) {
    const std::uint64_t n = std::min<std::uint64_t>(zeros.size(), len - done);
    WALFS_RETURN_IF_ERROR(Write(offset + done, zeros.data(), n));
    done += n;
  }
  return Status::Ok();
}

Status BlockDevice::DoDiscard(std::uint64_t offset, std::uint64_t len) {
  return Status::NotSupported(
      fmt::format("discard [{}, +{}): a {} device cannot discard", offset, len, kind()));
}

void BlockDevice::FlushDone(std::uint64_t ticket) {
  std::uint64_t prev = flushed_through_.load(std::memory_order_relaxed);
  while (prev < ticket &&
         !flushed_through_.compare_exchange_weak(prev, ticket, std::memory_order_acq_rel)) {
  }
}

Status BlockDevice::Execute(const IoRequest& req) {
  switch (req.op) {
    case IoOp::kRead: return DoRead(req.offset, req.buf, req.len);
    case IoOp::kWrite: return DoWrite(req.offset, req.buf, req.len, req.flags);
    case IoOp::kFlush: return DoFlush();
  }
  return Status::Internal("unknown I/O op");
}

Status BlockDevice::Submit(std::vector<IoRequest> batch) {
  // Validate everything first: a refused batch issues nothing.
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (!batch[i].done)
      return Refuse(Status::InvalidArgument(
          fmt::format("request {} of {}: no completion callback", i, batch.size())));
    if (Status s = Validate(batch[i]); !s.ok())
      return Refuse(Status::InvalidArgument(
          fmt::format("request {} of {}: {}", i, batch.size(), s.message())));
  }
  if (batch.empty()) return Status::Ok();
  batches_.fetch_add(1, std::memory_order_relaxed);
  for (IoRequest& req : batch) {
    Count(req);
    if (req.op == IoOp::kFlush || (req.op == IoOp::kWrite && (req.flags & kIoPreflush))) {
      // A successful completion means the flush (a preflush: before the
      // write started) is done.
      req.done = [this, ticket = NextFlushTicket(), done = std::move(req.done)](Status s) {
        if (s.ok()) FlushDone(ticket);
        done(std::move(s));
      };
    }
  }
  DoSubmit(std::move(batch));
  return Status::Ok();
}

Status BlockDevice::SubmitAndWait(std::vector<IoRequest> batch) {
  WALFS_CHECK_MSG(!internal::IsCompletionThread(),
                  "SubmitAndWait() on a completion thread would wait for itself");
  struct Waiter {
    Mutex mu;
    CondVar cv{&mu};
    std::size_t pending GUARDED_BY(mu) = 0;
    std::vector<Status> results GUARDED_BY(mu);
  };
  // Shared with the callbacks, which may still be returning when we wake.
  auto w = std::make_shared<Waiter>();
  {
    MutexLock l(&w->mu);
    w->pending = batch.size();
    w->results.resize(batch.size());
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    IoCallback user = std::move(batch[i].done);
    batch[i].done = [w, i, user = std::move(user)](Status s) {
      if (user) user(s);
      MutexLock l(&w->mu);
      w->results[i] = std::move(s);
      if (--w->pending == 0) w->cv.SignalAll();
    };
  }
  WALFS_RETURN_IF_ERROR(Submit(std::move(batch)));
  MutexLock l(&w->mu);
  while (w->pending > 0) w->cv.Wait(&w->mu);
  for (Status& s : w->results)
    if (!s.ok()) return std::move(s);
  return Status::Ok();
}

BlockDeviceStats BlockDevice::stats() const {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  BlockDeviceStats s;
  s.reads = reads_.load(kRelaxed);
  s.writes = writes_.load(kRelaxed);
  s.flushes = flushes_.load(kRelaxed);
  s.fua_writes = fua_writes_.load(kRelaxed);
  s.preflush_writes = preflush_writes_.load(kRelaxed);
  s.bytes_read = bytes_read_.load(kRelaxed);
  s.bytes_written = bytes_written_.load(kRelaxed);
  s.discards = discards_.load(kRelaxed);
  s.bytes_discarded = bytes_discarded_.load(kRelaxed);
  s.batches = batches_.load(kRelaxed);
  s.refused = refused_.load(kRelaxed);
  return s;
}

std::uint64_t TornWriteLength(std::uint64_t offset, std::uint64_t len,
                              std::uint32_t sector_size, std::uint64_t sectors) {
  WALFS_CHECK(std::has_single_bit(sector_size));
  const std::uint64_t first_sector_start = offset & ~std::uint64_t{sector_size - 1};
  const std::uint64_t span = offset + len - first_sector_start;
  // Kept sectors beyond the write's last one change nothing.
  if (sectors >= (span + sector_size - 1) / sector_size) return len;
  const std::uint64_t end = first_sector_start + sectors * sector_size;
  return end > offset ? end - offset : 0;
}

}  // namespace walfs
