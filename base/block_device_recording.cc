#include "base/block_device_recording.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "base/check.h"

namespace walfs {

Result<std::unique_ptr<RecordingDevice>> RecordingDevice::Create(BlockDevice* inner) {
  const std::uint64_t size = inner->size_bytes();
  WALFS_ASSIGN_OR_RETURN(std::shared_ptr<const FrozenImage> base,
                         FrozenImage::Make(size, [&](std::byte* p) { return inner->Read(0, p, size); }));
  return std::unique_ptr<RecordingDevice>(new RecordingDevice(inner, std::move(base)));
}

RecordingDevice::RecordingDevice(BlockDevice* inner, std::shared_ptr<const FrozenImage> base)
    : BlockDevice(inner->size_bytes(), inner->logical_block_size(), inner->io_alignment()),
      inner_(inner),
      base_(std::move(base)) {}

RecordingDevice::~RecordingDevice() { worker_.Stop(); }

std::string RecordingDevice::Describe() const {
  return fmt::format("write recording over {}", inner_->Describe());
}

std::size_t RecordingDevice::op_count() const {
  MutexLock l(&mu_);
  return ops_.size();
}

std::vector<RecordedOp> RecordingDevice::ops() const {
  MutexLock l(&mu_);
  return ops_;
}

std::vector<std::size_t> RecordingDevice::FlushPoints() const {
  MutexLock l(&mu_);
  std::vector<std::size_t> points;
  for (std::size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i].kind == RecordedOp::Kind::kFlush) points.push_back(i);
  return points;
}

RecordingDevice::Recorded RecordingDevice::RecordLocked(const IoRequest& req) {
  Recorded rec;
  if (req.op == IoOp::kFlush || (req.flags & kIoPreflush)) {
    ops_.push_back({RecordedOp::Kind::kFlush, 0, {}, false, false, RecordedOp::kNotCompleted,
                    RecordedOp::kNoPreflush});
    (req.op == IoOp::kFlush ? rec.op : rec.preflush) = ops_.size() - 1;
  }
  if (req.op == IoOp::kWrite) {
    RecordedOp w;
    w.offset = req.offset;
    w.data.assign(req.buf, req.buf + req.len);
    w.fua = (req.flags & kIoFua) != 0;
    if (rec.preflush != Recorded::kNone) w.preflush = rec.preflush;
    ops_.push_back(std::move(w));
    rec.op = ops_.size() - 1;
  }
  return rec;
}

void RecordingDevice::MarkCompleted(std::size_t op, const Status& s) {
  MutexLock l(&mu_);
  // Observed now: every op recorded from here on was issued after this one
  // completed.
  ops_[op].completed_before = ops_.size();
  ops_[op].failed = !s.ok();
}

Status RecordingDevice::Run(const IoRequest& req, const Recorded& rec) {
  if (rec.preflush != Recorded::kNone) {
    Status s = inner_->Flush();
    MarkCompleted(rec.preflush, s);
    if (!s.ok()) {
      MarkCompleted(rec.op, s);  // the write was never issued: failed, not durable
      return s;
    }
  }
  Status s;
  if (req.op == IoOp::kFlush) {
    s = inner_->Flush();
  } else {
    s = inner_->Write(req.offset, req.buf, req.len, req.flags & ~kIoPreflush);
  }
  MarkCompleted(rec.op, s);
  return s;
}

Status RecordingDevice::DoRead(std::uint64_t offset, std::byte* buf, std::size_t len) {
  return inner_->Read(offset, buf, len);
}

Status RecordingDevice::DoWrite(std::uint64_t offset, const std::byte* buf, std::size_t len,
                                IoFlags flags) {
  const IoRequest req = IoRequest::Write(offset, buf, len, flags, nullptr);
  Recorded rec;
  {
    MutexLock l(&mu_);
    rec = RecordLocked(req);
  }
  return Run(req, rec);
}

Status RecordingDevice::DoFlush() {
  const IoRequest req = IoRequest::Flush(nullptr);
  Recorded rec;
  {
    MutexLock l(&mu_);
    rec = RecordLocked(req);
  }
  return Run(req, rec);
}

Status RecordingDevice::DoDiscard(std::uint64_t offset, std::uint64_t len) {
  std::size_t op;
  {
    MutexLock l(&mu_);
    RecordedOp w;
    w.offset = offset;
    w.data.assign(len, std::byte{0});
    ops_.push_back(std::move(w));
    op = ops_.size() - 1;
  }
  Status s = inner_->Discard(offset, len);
  MarkCompleted(op, s);
  return s;
}

void RecordingDevice::DoSubmit(std::vector<IoRequest> batch) {
  std::vector<BlockDeviceWorker::Task> tasks;
  tasks.reserve(batch.size());
  {
    // Record the whole batch at once: its ops are issued together, in order.
    MutexLock l(&mu_);
    for (IoRequest& req : batch) {
      IoCallback done = std::move(req.done);
      if (req.op == IoOp::kRead) {
        tasks.push_back(
            {[this, r = std::move(req)] { return inner_->Read(r.offset, r.buf, r.len); },
             std::move(done)});
        continue;
      }
      const Recorded rec = RecordLocked(req);
      tasks.push_back({[this, r = std::move(req), rec] { return Run(r, rec); }, std::move(done)});
    }
  }
  worker_.Enqueue(std::move(tasks));
}

Result<std::unique_ptr<MemoryDevice>> RecordingDevice::MaterializePrefix(
    std::size_t n, std::uint64_t torn_sectors) const {
  std::vector<PlannedWrite> plan;
  {
    MutexLock l(&mu_);
    if (n > ops_.size())
      return Status::InvalidArgument(
          fmt::format("prefix of {} ops, but only {} were recorded", n, ops_.size()));
    for (std::size_t i = 0; i < n; ++i)
      if (ops_[i].kind == RecordedOp::Kind::kWrite)
        plan.push_back({i, ops_[i].data.size(), false});
    if (torn_sectors != kWholeWrite) {
      if (plan.empty())
        return Status::InvalidArgument(
            fmt::format("no write to tear in the first {} ops", n));
      const RecordedOp& last = ops_[plan.back().op];
      plan.back().bytes =
          TornWriteLength(last.offset, last.data.size(), logical_block_size(), torn_sectors);
    }
  }
  return Apply(plan);
}

Result<std::vector<PlannedWrite>> RecordingDevice::PlanCrash(
    std::size_t n, const CrashSampleOptions& options) const {
  MutexLock l(&mu_);
  if (n > ops_.size())
    return Status::InvalidArgument(
        fmt::format("crash at op {}, but only {} were recorded", n, ops_.size()));
  // The latest complete, successful flush: it covers every write that
  // completed before it was issued.  (Covering is monotonic in the flush's
  // index, so the latest one decides.)
  // Writes with completed_before <= barrier are covered.  0 covers nothing:
  // an op's completion is observed after it is issued, so completed_before >= 1.
  std::uint64_t barrier = 0;
  // Completions with completed_before <= seen had been observed at the crash.
  const std::uint64_t seen = options.before_completions && n > 0 ? n - 1 : n;
  for (std::size_t f = 0; f < n; ++f) {
    const RecordedOp& op = ops_[f];
    if (op.kind == RecordedOp::Kind::kFlush && !op.failed && op.completed_before <= seen)
      barrier = f;
  }
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  struct Landed {
    double time;
    PlannedWrite write;
  };
  std::vector<Landed> landed;
  for (std::size_t w = 0; w < n; ++w) {
    const RecordedOp& op = ops_[w];
    if (op.kind != RecordedOp::Kind::kWrite) continue;
    const bool durable = !op.failed && (op.completed_before <= barrier ||
                                        (op.fua && op.completed_before <= seen));
    // Draw every number for every write, so that one write's fate does not
    // shift the draws of the next: a seed means the same thing for any n.
    const double land = unit(rng), tear = unit(rng), where = unit(rng), when = unit(rng);
    if (!durable && land >= options.land_probability) continue;
    // The write half of a preflush write was issued only once its flush
    // completed: if that completion came after the crash (or failed), the
    // write never reached the device.  (When it did come before, the flush
    // is at or before the barrier, so what it covers is durable.)
    if (op.preflush != RecordedOp::kNoPreflush &&
        (ops_[op.preflush].failed || ops_[op.preflush].completed_before > seen))
      continue;
    PlannedWrite pw{w, op.data.size(), durable};
    if (!durable && tear < options.tear_probability && !op.data.empty()) {
      // Keep a strict prefix of the sectors the write spans: 0 .. span-1.
      const std::uint64_t sector = logical_block_size();
      const std::uint64_t span = (op.offset % sector + op.data.size() + sector - 1) / sector;
      const auto kept = static_cast<std::uint64_t>(where * static_cast<double>(span));
      pw.bytes = TornWriteLength(op.offset, op.data.size(), logical_block_size(), kept);
    }
    // A landing time inside the window the write could reach the device's
    // (coherent) cache in: after it was issued, before its completion was
    // seen (or the crash).  Sorting by it keeps every completion order.
    const double lo = options.keep_completion_order ? static_cast<double>(w) : 0.0;
    const double hi = options.keep_completion_order
                          ? static_cast<double>(std::min<std::uint64_t>(op.completed_before, n))
                          : static_cast<double>(n);
    landed.push_back({lo + when * (hi - lo), pw});
  }
  std::stable_sort(landed.begin(), landed.end(),
                   [](const Landed& a, const Landed& b) { return a.time < b.time; });
  std::vector<PlannedWrite> plan;
  plan.reserve(landed.size());
  for (const Landed& entry : landed) plan.push_back(entry.write);
  return plan;
}

Result<std::unique_ptr<MemoryDevice>> RecordingDevice::SampleCrashState(
    std::size_t n, const CrashSampleOptions& options) const {
  WALFS_ASSIGN_OR_RETURN(std::vector<PlannedWrite> plan, PlanCrash(n, options));
  return Apply(plan);
}

Result<std::unique_ptr<MemoryDevice>> RecordingDevice::Apply(
    const std::vector<PlannedWrite>& plan) const {
  MutexLock l(&mu_);
  std::vector<ImagePatch> patches;
  patches.reserve(plan.size());
  for (const PlannedWrite& pw : plan) {
    if (pw.op >= ops_.size() || ops_[pw.op].kind != RecordedOp::Kind::kWrite ||
        pw.bytes > ops_[pw.op].data.size())
      return Status::InvalidArgument(fmt::format("plan names op {}, not a recorded write "
                                                 "of at least {} bytes", pw.op, pw.bytes));
    const RecordedOp& op = ops_[pw.op];
    // Invariant: the write passed Validate(), so it lies inside the image.
    WALFS_CHECK(op.offset + op.data.size() <= base_->size());
    patches.push_back({op.offset, std::span<const std::byte>(op.data.data(), pw.bytes)});
  }
  // The patches point into ops_, which mu_ keeps still until they are laid.
  return std::make_unique<MemoryDevice>(base_, patches, logical_block_size());
}

}  // namespace walfs
