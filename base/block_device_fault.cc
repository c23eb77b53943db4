#include "base/block_device_fault.h"

#include <utility>

#include <fmt/format.h>

#include "base/check.h"

namespace walfs {

FaultDevice::FaultDevice(BlockDevice* inner)
    : BlockDevice(inner->size_bytes(), inner->logical_block_size(), inner->io_alignment()),
      inner_(inner) {}

FaultDevice::~FaultDevice() { worker_.Stop(); }

std::string FaultDevice::Describe() const {
  return fmt::format("fault injection over {}", inner_->Describe());
}

void FaultDevice::FailNthWrite(std::uint64_t n, int err) {
  WALFS_CHECK(n >= 1 && err > 0);
  MutexLock l(&mu_);
  write_rule_ = {Rule::Kind::kFail, n, /*sticky=*/false, err, 0};
}

void FaultDevice::FailWritesFrom(std::uint64_t n, int err) {
  WALFS_CHECK(n >= 1 && err > 0);
  MutexLock l(&mu_);
  write_rule_ = {Rule::Kind::kFail, n, /*sticky=*/true, err, 0};
}

void FaultDevice::TearNthWrite(std::uint64_t n, std::uint64_t sectors, int err) {
  WALFS_CHECK(n >= 1 && err >= 0);
  MutexLock l(&mu_);
  write_rule_ = {Rule::Kind::kTear, n, /*sticky=*/false, err, sectors};
}

void FaultDevice::FailNthFlush(std::uint64_t n, int err) {
  WALFS_CHECK(n >= 1 && err > 0);
  MutexLock l(&mu_);
  flush_rule_ = {Rule::Kind::kFail, n, /*sticky=*/false, err, 0};
}

void FaultDevice::FailFlushes(int err) {
  WALFS_CHECK(err > 0);
  MutexLock l(&mu_);
  flush_rule_ = {Rule::Kind::kFail, 1, /*sticky=*/true, err, 0};
}

void FaultDevice::FailReads(std::uint64_t offset, std::uint64_t len, int err) {
  WALFS_CHECK(err > 0);
  MutexLock l(&mu_);
  // Saturate: FailReads(x, UINT64_MAX) means "from x to the end".
  const std::uint64_t end = len > UINT64_MAX - offset ? UINT64_MAX : offset + len;
  read_ranges_.push_back({offset, end, err});
}

void FaultDevice::ClearFaults() {
  MutexLock l(&mu_);
  write_rule_ = {};
  flush_rule_ = {};
  read_ranges_.clear();
}

FaultCounters FaultDevice::counters() const {
  MutexLock l(&mu_);
  return counters_;
}

FaultDevice::Rule FaultDevice::Consult(Rule* rule) {
  if (rule->kind == Rule::Kind::kNone) return {};
  // Invariant: an armed rule has countdown >= 1 until it fires.
  WALFS_CHECK(rule->countdown >= 1);
  if (--rule->countdown > 0) return {};
  Rule fired = *rule;
  if (rule->sticky) {
    rule->countdown = 1;  // fire on the next one too
  } else {
    *rule = {};
  }
  return fired;
}

Status FaultDevice::DoRead(std::uint64_t offset, std::byte* buf, std::size_t len) {
  int err = 0;
  {
    MutexLock l(&mu_);
    ++counters_.reads;
    for (const ReadRange& r : read_ranges_) {
      // offset + len cannot overflow: Validate() kept it within the device.
      if (len > 0 && offset < r.end && r.offset < offset + len) {
        err = r.err;
        break;
      }
    }
    if (err != 0) ++counters_.failed_reads;
  }
  if (err != 0)
    return Status::FromErrno(
        err, fmt::format("fault device: injected read failure [{}, +{})", offset, len));
  return inner_->Read(offset, buf, len);
}

Status FaultDevice::DoFlush() {
  Rule fired;
  {
    MutexLock l(&mu_);
    ++counters_.flushes;
    fired = Consult(&flush_rule_);
    if (fired.kind != Rule::Kind::kNone) ++counters_.failed_flushes;
  }
  if (fired.kind != Rule::Kind::kNone)
    return Status::FromErrno(fired.err, "fault device: injected flush failure");
  return inner_->Flush();
}

Status FaultDevice::DoDiscard(std::uint64_t offset, std::uint64_t len) {
  return inner_->Discard(offset, len);
}

Status FaultDevice::DoWrite(std::uint64_t offset, const std::byte* buf, std::size_t len,
                            IoFlags flags) {
  if (flags & kIoPreflush) WALFS_RETURN_IF_ERROR(DoFlush());
  flags &= ~kIoPreflush;  // done above, through the flush rule
  Rule fired;
  {
    MutexLock l(&mu_);
    ++counters_.writes;
    fired = Consult(&write_rule_);
    if (fired.kind == Rule::Kind::kTear) ++counters_.torn_writes;
    if (fired.kind != Rule::Kind::kNone && fired.err != 0) ++counters_.failed_writes;
  }
  const std::string where = fmt::format("[{}, +{})", offset, len);
  switch (fired.kind) {
    case Rule::Kind::kNone:
      return inner_->Write(offset, buf, len, flags);
    case Rule::Kind::kFail:
      return Status::FromErrno(fired.err, "fault device: injected write failure " + where);
    case Rule::Kind::kTear: {
      const std::uint64_t kept =
          TornWriteLength(offset, len, logical_block_size(), fired.sectors);
      if (kept > 0) WALFS_RETURN_IF_ERROR(inner_->Write(offset, buf, kept, flags));
      if (fired.err == 0) return Status::Ok();
      return Status::FromErrno(
          fired.err, fmt::format("fault device: torn write {}: {} of {} bytes landed", where,
                                 kept, len));
    }
  }
  return Status::Internal("unknown fault rule");
}

void FaultDevice::DoSubmit(std::vector<IoRequest> batch) {
  worker_.EnqueueRequests(std::move(batch), [this](const IoRequest& r) { return Execute(r); });
}

}  // namespace walfs
