// RecordingDevice: a BlockDevice wrapper that records every write (offset and
// data) and every flush, in the order they were issued, and when each one
// was seen to complete, so a crash test can rebuild the image as it could be
// after a crash at any point (DESIGN.md, "Tests": every prefix up to each
// flush, torn last writes, and reorderings of the writes in flight).
//
//   MemoryDevice disk(kImageBytes);
//   ... mkfs onto disk ...
//   WALFS_ASSIGN_OR_RETURN(auto rec, RecordingDevice::Create(&disk));
//   ... mount on *rec, run the workload ...
//   for (std::size_t f : rec->FlushPoints()) {
//     auto img = rec->MaterializePrefix(f + 1);        // crash just after flush f
//     ... recover + fsck *img, check every fsynced file ...
//   }
//   auto torn = rec->MaterializePrefix(n, /*torn_sectors=*/1);
//   auto sample = rec->SampleCrashState(n, {.seed = 7});
//
// The crash model ("crash at n").  Ops are numbered in issue order: a sync
// Write/Flush is issued when called, a batched request when Submit() takes
// it (batch order); a kIoPreflush write is two ops, a flush then the write.
// Each op also records completed_before: how many ops had been issued when
// its completion was observed (before its callback, or before the sync call
// returned).  A crash at n (0 <= n <= op_count()) is the moment just before
// op n was issued: ops [0, n) had been issued, and exactly the completions
// with completed_before <= n had been observed ("seen").  (With
// CrashSampleOptions::before_completions the crash is instead the instant
// after op n - 1 was issued, before any completion observed after it:
// seen = completed_before <= n - 1.  Together the two cover every moment.)
// In the state the disk may hold:
//  - a flush f < n is complete if its completion was seen and it succeeded;
//    it made durable every write that had completed before f was issued
//    (completed_before(w) <= f).  A write still in flight when the flush was
//    issued is not covered: that is BlockDevice's contract, and the one the
//    Linux block layer keeps for REQ_PREFLUSH.
//  - a successful kIoFua write w < n is durable if its completion was seen.
//  - every durable write landed, whole.  Every other write in [0, n) --
//    including a failed one, which may have partly landed -- landed whole,
//    landed torn (its first K sectors), or not at all.
//  - landed writes are applied in an order where a precedes b whenever a
//    completed before b was issued (completed_before(a) <= b): device caches
//    are coherent, so a later write to a sector wins over an earlier one.
//    Writes that were in flight together may land in either order.
// MaterializePrefix(n) is the one state where every write in [0, n) landed,
// in issue order; a prefix ending just after a flush (n = f + 1, f from
// FlushPoints()) is what the brief calls a prefix ending at a flush point.
// SampleCrashState() draws one state from the model above, seeded.
// Reads are not recorded: they change nothing.  A Discard is recorded as a
// write of zeros (what the memory device it materialises into does), so a
// crash state may or may not hold it, like any write not yet made durable.
//
// Thread-safe.  The inner device is not owned and must outlive the wrapper;
// its contents when Create() runs are the base image every state starts
// from (read into an ordinary buffer, so an O_DIRECT inner device is
// refused there with InvalidArgument: record over a MemoryDevice or a
// buffered FileDevice).  Batched requests run one at a time on the wrapper's own completion
// thread through the inner device's synchronous calls.  Every write's data
// is kept in memory for the life of the recording.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/block_device.h"
#include "base/block_device_memory.h"
#include "base/frozen_image.h"
#include "base/block_device_worker.h"
#include "base/mutex.h"

namespace walfs {

struct RecordedOp {
  static constexpr std::uint64_t kNotCompleted = std::numeric_limits<std::uint64_t>::max();
  enum class Kind : std::uint8_t { kWrite, kFlush };

  Kind kind = Kind::kWrite;
  std::uint64_t offset = 0;
  std::vector<std::byte> data;  // a write's bytes
  bool fua = false;
  bool failed = false;  // the inner device returned an error
  std::uint64_t completed_before = kNotCompleted;
  // The write half of a kIoPreflush write: the index of its flush, which
  // had to complete before the write was issued.  kNoPreflush otherwise.
  static constexpr std::size_t kNoPreflush = std::numeric_limits<std::size_t>::max();
  std::size_t preflush = kNoPreflush;
};

// One write of a crash state, in the order it is applied.
struct PlannedWrite {
  std::size_t op = 0;          // index into the recording
  std::uint64_t bytes = 0;     // how much of it landed (all, or a torn prefix)
  bool durable = false;        // the model says it must have landed
};

struct CrashSampleOptions {
  std::uint64_t seed = 0;
  double land_probability = 0.5;  // for each write that is not durable
  double tear_probability = 0.0;  // for each landed write that is not durable
  // false: ignore completion order and apply landed writes in any order (a
  // harsher device than the model; see the header comment).
  bool keep_completion_order = true;
  // Crash right after op n - 1 was issued, before the completions observed
  // between it and op n (see the crash model above).
  bool before_completions = false;
};

class RecordingDevice final : public BlockDevice {
 public:
  // Reads inner's whole contents as the base image, then records.
  static Result<std::unique_ptr<RecordingDevice>> Create(BlockDevice* inner);
  ~RecordingDevice() override;

  std::string_view kind() const override { return "recording"; }
  std::string Describe() const override;
  bool SupportsDiscard() const override { return inner_->SupportsDiscard(); }

  std::size_t op_count() const EXCLUDES(mu_);
  // A copy of the recording (data included).
  std::vector<RecordedOp> ops() const EXCLUDES(mu_);
  // The index of every flush op, ascending (Flush(), kFlush, and the flush
  // half of each kIoPreflush write).
  std::vector<std::size_t> FlushPoints() const EXCLUDES(mu_);

  // The image after ops [0, n) all landed in order.  With torn_sectors, the
  // last write in [0, n) lands only its first torn_sectors sectors.
  // InvalidArgument if n > op_count(), or torn with no write in the prefix.
  Result<std::unique_ptr<MemoryDevice>> MaterializePrefix(
      std::size_t n, std::uint64_t torn_sectors = kWholeWrite) const EXCLUDES(mu_);
  static constexpr std::uint64_t kWholeWrite = std::numeric_limits<std::uint64_t>::max();

  // Draws a crash state at n from the model (deterministic in the seed).
  Result<std::vector<PlannedWrite>> PlanCrash(std::size_t n,
                                              const CrashSampleOptions& options) const
      EXCLUDES(mu_);
  Result<std::unique_ptr<MemoryDevice>> SampleCrashState(
      std::size_t n, const CrashSampleOptions& options) const EXCLUDES(mu_);
  // The image after applying `plan` to the base image.
  Result<std::unique_ptr<MemoryDevice>> Apply(const std::vector<PlannedWrite>& plan) const
      EXCLUDES(mu_);

  BlockDevice* inner() const { return inner_; }

 protected:
  Status DoRead(std::uint64_t offset, std::byte* buf, std::size_t len) override;
  Status DoWrite(std::uint64_t offset, const std::byte* buf, std::size_t len,
                 IoFlags flags) override EXCLUDES(mu_);
  Status DoFlush() override EXCLUDES(mu_);
  void DoSubmit(std::vector<IoRequest> batch) override EXCLUDES(mu_);
  Status DoDiscard(std::uint64_t offset, std::uint64_t len) override EXCLUDES(mu_);

 private:
  // Indices of a request's ops: the preflush's flush (or kNone) and the
  // write or flush itself.
  struct Recorded {
    static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
    std::size_t preflush = kNone;
    std::size_t op = kNone;
  };

  RecordingDevice(BlockDevice* inner, std::shared_ptr<const FrozenImage> base);

  Recorded RecordLocked(const IoRequest& req) REQUIRES(mu_);
  void MarkCompleted(std::size_t op, const Status& s) EXCLUDES(mu_);
  // Issues a recorded request to the inner device, marking each op done.
  Status Run(const IoRequest& req, const Recorded& rec);

  BlockDevice* const inner_;
  const std::shared_ptr<const FrozenImage> base_;  // what every image starts from
  mutable Mutex mu_;  // leaf lock: never held across inner I/O
  std::vector<RecordedOp> ops_ GUARDED_BY(mu_);
  BlockDeviceWorker worker_{"walfs-recdev"};  // last: stopped first
};

}  // namespace walfs
