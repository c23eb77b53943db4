// FaultDevice: a BlockDevice wrapper that fails chosen requests, so tests can
// drive every error path of the layers above (the log's I/O completion, the
// mount's shutdown) without real bad disks.
//
//   MemoryDevice disk(1 << 20);
//   FaultDevice dev(&disk);
//   dev.FailNthWrite(3, ENOSPC);     // the third write from now fails with ENOSPC
//   dev.TearNthWrite(1, 2);          // the next write lands 2 sectors, then fails EIO
//   dev.FailFlushes();               // every flush from now fails with EIO
//   dev.FailReads(0, 4096);          // reads touching the first 4 KiB fail
//   ...
//   EXPECT_EQ(dev.counters().failed_writes, 1u);
//   dev.ClearFaults();
//
// Rules are switched at run time from any thread; each is consulted under a
// lock when a request reaches it, so a rule set before a call applies to it.
// One write rule and one flush rule are active at a time (setting one
// replaces the previous); read ranges accumulate.  Counting is "from now":
// n = 1 means the next write (or flush).
//
// What a fault does:
//  - A failed write or flush issues nothing to the inner device and returns
//    Status::FromErrno(err) (EIO unless chosen).
//  - A torn write issues only its first `sectors` sectors (TornWriteLength()
//    in block_device.h: sector granularity, counted from the sector that
//    holds its offset) and then returns err -- or OK when err is 0, a disk
//    that loses the tail without saying so.
//  - A kIoPreflush write first passes its preflush through the flush rule;
//    if that fails the write is not attempted and does not count as a write.
//    A kIoFua write is a write: only write rules apply.
//  - A read that overlaps a failing range reads nothing.
//
// The inner device is not owned and must outlive the wrapper.  Batched
// requests run one at a time on the wrapper's own completion thread through
// the same fault logic and the inner device's synchronous calls (so the
// inner device's own engine is not exercised through a FaultDevice).
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/block_device.h"
#include "base/block_device_worker.h"
#include "base/mutex.h"

namespace walfs {

struct FaultCounters {
  std::uint64_t reads = 0;  // requests that reached the wrapper
  std::uint64_t writes = 0;
  std::uint64_t flushes = 0;  // including preflushes
  std::uint64_t failed_reads = 0;
  std::uint64_t failed_writes = 0;  // including torn writes that reported an error
  std::uint64_t failed_flushes = 0;
  std::uint64_t torn_writes = 0;
};

class FaultDevice final : public BlockDevice {
 public:
  explicit FaultDevice(BlockDevice* inner);
  ~FaultDevice() override;

  std::string_view kind() const override { return "fault"; }
  std::string Describe() const override;
  // Discard passes straight through to the inner device (no rules apply).
  bool SupportsDiscard() const override { return inner_->SupportsDiscard(); }
  // Growing passes through too.
  Result<std::uint64_t> ProbeSize() override { return inner_->ProbeSize(); }

  // The n-th write from now (n >= 1) fails with err.
  void FailNthWrite(std::uint64_t n, int err = EIO) EXCLUDES(mu_);
  // The n-th write from now and every later one fail with err.
  void FailWritesFrom(std::uint64_t n, int err = EIO) EXCLUDES(mu_);
  // The n-th write from now lands only its first `sectors` sectors, then
  // reports err (0: reports success).
  void TearNthWrite(std::uint64_t n, std::uint64_t sectors, int err = EIO) EXCLUDES(mu_);
  // The n-th flush from now fails with err.
  void FailNthFlush(std::uint64_t n, int err = EIO) EXCLUDES(mu_);
  // Every flush from now fails with err.
  void FailFlushes(int err = EIO) EXCLUDES(mu_);
  // Reads overlapping [offset, offset + len) fail with err.
  void FailReads(std::uint64_t offset, std::uint64_t len, int err = EIO) EXCLUDES(mu_);
  // Removes every rule; counters are kept.
  void ClearFaults() EXCLUDES(mu_);

  FaultCounters counters() const EXCLUDES(mu_);
  BlockDevice* inner() const { return inner_; }

 protected:
  Status DoRead(std::uint64_t offset, std::byte* buf, std::size_t len) override EXCLUDES(mu_);
  Status DoWrite(std::uint64_t offset, const std::byte* buf, std::size_t len,
                 IoFlags flags) override EXCLUDES(mu_);
  Status DoFlush() override EXCLUDES(mu_);
  void DoSubmit(std::vector<IoRequest> batch) override;
  Status DoDiscard(std::uint64_t offset, std::uint64_t len) override;
  Status DoGrow(std::uint64_t new_size) override { return inner_->Grow(new_size); }

 private:
  // A rule that fires on the countdown-th matching request from when it was
  // set; `sticky` keeps firing on every later one.
  struct Rule {
    enum class Kind : std::uint8_t { kNone, kFail, kTear } kind = Kind::kNone;
    std::uint64_t countdown = 0;
    bool sticky = false;
    int err = EIO;
    std::uint64_t sectors = 0;  // kTear
  };
  struct ReadRange {
    std::uint64_t offset, end;  // [offset, end)
    int err;
  };

  // Counts one request against `rule`; the rule when it fires, else kNone.
  static Rule Consult(Rule* rule);

  BlockDevice* const inner_;
  mutable Mutex mu_;  // leaf lock: never held across inner I/O
  Rule write_rule_ GUARDED_BY(mu_);
  Rule flush_rule_ GUARDED_BY(mu_);
  std::vector<ReadRange> read_ranges_ GUARDED_BY(mu_);
  FaultCounters counters_ GUARDED_BY(mu_);
  BlockDeviceWorker worker_{"walfs-faultdev"};  // last: stopped first
};

}  // namespace walfs
