// BlockDevice: the byte-addressed device a walfs image lives on, and the one
// seam between walfs and the storage stack.  Implementations: FileDevice (a
// file or block device, io_uring or pread/pwrite), MemoryDevice (unit tests),
// FaultDevice and RecordingDevice (wrappers for error and crash tests).
//
//   WALFS_ASSIGN_OR_RETURN(std::unique_ptr<FileDevice> dev, FileDevice::Open(path, {}));
//   WALFS_RETURN_IF_ERROR(dev->Write(offset, buf, len));
//   WALFS_RETURN_IF_ERROR(dev->Flush());        // everything written so far is durable
//   WALFS_RETURN_IF_ERROR(dev->Discard(offset, len));  // give free space back (FITRIM)
//
//   // The log writer's batched path: an iclog whose commit record must not
//   // reach the disk before the earlier iclogs (already completed) are stable.
//   std::vector<IoRequest> batch;
//   batch.push_back(IoRequest::Write(lsn_offset, iclog->data(), iclog->size(),
//                                    kIoPreflush | kIoFua,
//                                    [iclog](Status s) { iclog->IoDone(std::move(s)); }));
//   WALFS_RETURN_IF_ERROR(dev->Submit(std::move(batch)));
//
// The contract every implementation keeps (docs/block_device.md says why):
//
//  - Ranges.  Every request must lie inside [0, size_bytes()); a request that
//    does not, has a null buffer, a flag that makes no sense for its op, or
//    (on an O_DIRECT device) breaks io_alignment(), is refused with
//    InvalidArgument before anything is issued.  It never crashes.
//  - Errors.  A failure carries the errno the kernel (or fault device) gave,
//    through Status::FromErrno; a read that meets end-of-file is IoError
//    (EIO) with "unexpected end of file" in the message.  Short reads and
//    writes are continued until the whole range is done or an error occurs.
//  - Durability.  A completed write may sit in a volatile cache.  Flush()
//    (and a kFlush request) makes every write whose completion was observed
//    before the flush was issued durable; a write still in flight when the
//    flush is issued is not covered.  kIoPreflush on a write is such a flush
//    that completes before the write starts; kIoFua makes that one write
//    durable by the time it completes.  These are the Linux block layer's
//    REQ_PREFLUSH and REQ_FUA, which XFS uses for its commit iclogs.
//  - Ordering.  Requests in flight together may execute, and land, in any
//    order.  The only ways to order two writes are to issue the second after
//    the first has completed, or to make the first durable first.
//  - Completions.  Once Submit() returns OK every request's callback runs
//    exactly once, with OK or the request's error.  Callbacks run on a thread
//    the device owns (its completion thread), never inside Submit(), one at a
//    time, and in submission order across all Submit() calls on the device,
//    whatever order the hardware finished them in.  The log's iclog
//    completion code can therefore process them in LSN order without
//    sorting.  A callback may call Submit() and the synchronous calls; it
//    must not call SubmitAndWait() (that would wait for itself: it CHECKs),
//    and should be short, because it holds up every later callback.
//  - Threading.  Every call may be made from any thread, concurrently.  The
//    synchronous calls do not wait for batched requests, and vice versa.
//  - Discard.  Discard() gives a range back to the storage below: a hole
//    punched in an image file, BLKDISCARD on a block device, zeros on a
//    memory device.  The range then reads as zeros or (a block device's
//    discard need not zero) as anything, so the caller discards only space
//    nothing reads before writing it again.  Synchronous on the calling
//    thread, like Read/Write; a device that cannot discard returns
//    NotSupported (EOPNOTSUPP) and says so in SupportsDiscard().
//  - Lifetime.  Destroying a device waits until every submitted request has
//    completed and its callback has run.  A callback must not destroy its
//    device.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace walfs {

enum class IoOp : std::uint8_t { kRead, kWrite, kFlush };
// "read", "write", "flush": for messages, traces and stats.
std::string_view IoOpName(IoOp op);

// Flags on a write request (and on the synchronous Write).
using IoFlags = std::uint32_t;
inline constexpr IoFlags kIoFua = 1u << 0;       // durable when it completes
inline constexpr IoFlags kIoPreflush = 1u << 1;  // flush the device before it starts
inline constexpr IoFlags kIoAllFlags = kIoFua | kIoPreflush;
// "fua|preflush", "-" for none.
std::string IoFlagsToString(IoFlags flags);

using IoCallback = std::function<void(Status)>;

// One request of a batch.  The buffer belongs to the caller and must stay
// valid (and, for a write, unchanged) until the callback runs.
struct IoRequest {
  IoOp op = IoOp::kFlush;
  IoFlags flags = 0;
  std::uint64_t offset = 0;
  std::byte* buf = nullptr;  // a write only reads it
  std::size_t len = 0;
  IoCallback done;

  static IoRequest Read(std::uint64_t offset, void* buf, std::size_t len, IoCallback done);
  static IoRequest Write(std::uint64_t offset, const void* buf, std::size_t len,
                         IoFlags flags, IoCallback done);
  static IoRequest Flush(IoCallback done);
};

// What a device has done since it was created.  Counted when a call is
// accepted, not when it completes; I/O is far too slow for these relaxed
// increments to need their own cache lines.
struct BlockDeviceStats {
  std::uint64_t reads = 0;
  std::uint64_t writes = 0;
  std::uint64_t flushes = 0;  // Flush() calls and kFlush requests
  std::uint64_t fua_writes = 0;
  std::uint64_t preflush_writes = 0;
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t discards = 0;
  std::uint64_t bytes_discarded = 0;
  std::uint64_t batches = 0;  // Submit() calls accepted
  std::uint64_t refused = 0;  // calls refused with InvalidArgument
};

class BlockDevice {
 public:
  virtual ~BlockDevice() = default;
  BlockDevice(const BlockDevice&) = delete;
  BlockDevice& operator=(const BlockDevice&) = delete;

  // May grow while the device is in use (Grow): a request checked against
  // an older size is only refused, never misplaced.
  std::uint64_t size_bytes() const { return size_bytes_.load(std::memory_order_acquire); }
  // The sector size: the unit a torn write is made of, and the alignment
  // O_DIRECT needs.  A power of two.
  std::uint32_t logical_block_size() const { return logical_block_size_; }
  // Every offset, length and buffer address must be a multiple of this (1
  // unless the device uses O_DIRECT).
  std::uint32_t io_alignment() const { return io_alignment_; }
  // A short name of the implementation: "io_uring", "pwrite", "memory",
  // "fault", "recording".
  virtual std::string_view kind() const = 0;
  // One line for the mount to print: kind, engine and why, geometry.
  virtual std::string Describe() const;

  // Reads exactly len bytes at offset into buf.
  Status Read(std::uint64_t offset, void* buf, std::size_t len);
  // Writes exactly len bytes from buf at offset; flags as for a request.
  Status Write(std::uint64_t offset, const void* buf, std::size_t len, IoFlags flags = 0);
  // The durability barrier: see the contract above.
  Status Flush();

  // Gives [offset, offset + len) back to the storage (see the contract).
  // The range must lie inside the device and be a multiple of
  // logical_block_size() in offset and length (InvalidArgument otherwise).
  Status Discard(std::uint64_t offset, std::uint64_t len);
  // Whether Discard() can do anything on this device.
  virtual bool SupportsDiscard() const { return false; }
  // Makes [offset, offset + len) read as zeros, as cheaply as the device
  // can: a hole punched in an image file (no space allocated), BLKZEROOUT
  // on a block device, zeros written otherwise (the default, through
  // DoWrite, so wrappers see writes).  Synchronous; aligned as Discard.
  Status Zero(std::uint64_t offset, std::uint64_t len);

  // Growing (walfs-growfs).  ProbeSize() is the size the storage below has
  // now -- a regular file's length, a block device's BLKGETSIZE64 -- which
  // may exceed size_bytes() once it has been extended from outside (the
  // default: size_bytes()).  Grow(n) makes size_bytes() n: a regular image
  // file shorter than n is extended (ftruncate); a block device must be at
  // least n bytes already (NoSpace otherwise, saying how large it is).  A
  // device that cannot grow returns NotSupported; n <= size_bytes() is a
  // no-op.  Not concurrent with another Grow.
  virtual Result<std::uint64_t> ProbeSize() { return size_bytes(); }
  Status Grow(std::uint64_t new_size);

  // Issues a batch.  Refuses the whole batch (no request issued, no callback
  // run) with InvalidArgument naming the first bad request; otherwise
  // returns OK and every callback runs later, as the contract says.
  Status Submit(std::vector<IoRequest> batch);
  // Submit() and wait for every callback; returns the first error in request
  // order.  Callbacks are optional here.  Not from a completion thread.
  Status SubmitAndWait(std::vector<IoRequest> batch);

  BlockDeviceStats stats() const;

  // Flush tickets: every flush this device accepts (Flush(), a kFlush
  // request, a write's kIoPreflush) gets the next number.  FlushTicket() is
  // the last number handed out; FlushedSince(t) is true once a flush with a
  // later number has completed successfully -- so every write whose
  // completion was observed before FlushTicket() returned t is durable.
  // fsync uses it to skip its data flush when the log force's preflush,
  // issued after the data writes, has already covered them.
  std::uint64_t FlushTicket() const { return flush_tickets_.load(std::memory_order_acquire); }
  bool FlushedSince(std::uint64_t ticket) const {
    return flushed_through_.load(std::memory_order_acquire) > ticket;
  }

  // Checks one request against the contract (for wrappers and tests).
  Status Validate(const IoRequest& req) const;

 protected:
  BlockDevice(std::uint64_t size_bytes, std::uint32_t logical_block_size,
              std::uint32_t io_alignment);

  // The implementation's half.  Called only with requests that passed
  // Validate(); len may be 0 (a no-op, or with kIoPreflush just a flush).
  virtual Status DoRead(std::uint64_t offset, std::byte* buf, std::size_t len) = 0;
  virtual Status DoWrite(std::uint64_t offset, const std::byte* buf, std::size_t len,
                         IoFlags flags) = 0;
  virtual Status DoFlush() = 0;
  virtual void DoSubmit(std::vector<IoRequest> batch) = 0;
  // Called only with a validated, non-empty range.  The default is
  // NotSupported (EOPNOTSUPP).
  virtual Status DoDiscard(std::uint64_t offset, std::uint64_t len);
  // Called only with a validated, non-empty range.
  virtual Status DoZero(std::uint64_t offset, std::uint64_t len);
  // Called with new_size > size_bytes(); on OK the size becomes new_size.
  // The default is NotSupported.
  virtual Status DoGrow(std::uint64_t new_size);

  // Runs one validated request through DoRead/DoWrite/DoFlush: the body of
  // a BlockDeviceWorker task.
  Status Execute(const IoRequest& req);

 private:
  Status Refuse(Status s);
  // Discard's and Zero's checks: inside the device, sector-aligned.
  Status CheckRange(std::string_view what, std::uint64_t offset, std::uint64_t len);
  void Count(const IoRequest& req);
  std::uint64_t NextFlushTicket() { return flush_tickets_.fetch_add(1, std::memory_order_acq_rel) + 1; }
  void FlushDone(std::uint64_t ticket);

  std::atomic<std::uint64_t> size_bytes_;  // only grows (Grow)
  const std::uint32_t logical_block_size_;
  const std::uint32_t io_alignment_;

  std::atomic<std::uint64_t> reads_{0};
  std::atomic<std::uint64_t> writes_{0};
  std::atomic<std::uint64_t> flushes_{0};
  std::atomic<std::uint64_t> fua_writes_{0};
  std::atomic<std::uint64_t> preflush_writes_{0};
  std::atomic<std::uint64_t> bytes_read_{0};
  std::atomic<std::uint64_t> bytes_written_{0};
  std::atomic<std::uint64_t> discards_{0};
  std::atomic<std::uint64_t> bytes_discarded_{0};
  std::atomic<std::uint64_t> batches_{0};
  std::atomic<std::uint64_t> refused_{0};
  std::atomic<std::uint64_t> flush_tickets_{0};
  std::atomic<std::uint64_t> flushed_through_{0};  // the highest ticket completed
};

// How many bytes of a write of len bytes at offset land when only its first
// `sectors` sectors (of sector_size bytes, counted from the sector holding
// offset) reach the disk.  The one definition of a torn write, shared by
// FaultDevice and RecordingDevice.
std::uint64_t TornWriteLength(std::uint64_t offset, std::uint64_t len,
                              std::uint32_t sector_size, std::uint64_t sectors);

namespace internal {
// Marks the calling thread as a device's completion thread, for the
// SubmitAndWait() deadlock check.  Called once, first thing, by every
// completion thread.
void MarkCompletionThread();
bool IsCompletionThread();
}  // namespace internal

}  // namespace walfs
