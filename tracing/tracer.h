// Tracer: the process-wide trace buffer set.  One ring per thread (created
// at the thread's first event, retired when it exits and freed once read),
// a commit path that takes no lock, makes no syscall and allocates nothing
// (except the first event of a thread, which registers its ring), reader
// wakeups (immediate or deferred, with a watermark), and the recursion
// protection modes.  docs/tracing.md describes the protocol.
//
//   Catalogue::Get().SetSubsystemEnabled("journal", true);
//   WALFS_TRACE(kGrantSleep, tid, need, free);          // anywhere
//   TraceReader reader(&Tracer::Get());                  // reader.h
//
// Options change at run time.  A new buffer size applies by giving every
// thread a fresh ring at its next event; the old ones are read out first.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/wait_token.h"
#include "tracing/event.h"
#include "tracing/options.h"
#include "tracing/record.h"
#include "tracing/ring.h"

namespace walfs::tracing {

struct RingStats {
  std::uint32_t tid = 0;
  std::string comm;
  std::size_t capacity = 0;
  std::uint64_t unread = 0;
  bool retired = false;
  RingCounters counters;
};

struct TracerStats {
  RingCounters totals;                 // over every ring, freed ones included
  std::uint64_t lost_unattached = 0;   // events from a signal handler of a thread without a
                                       // ring, or from a thread's exit after its ring retired
  std::uint64_t reader_sleeps = 0;     // a reader found nothing and slept (after its nap)
  std::uint64_t reader_naps = 0;       // deferred mode: naps of the wakeup delay before that
  std::uint64_t reader_wakeups = 0;    // wakes that reached a sleeping reader (writer, waker, watermark)
  std::uint64_t waker_arms = 0;        // deferred wakeups armed by a commit
  std::uint64_t watermark_wakes = 0;
  std::uint64_t safety_timeouts = 0;   // a blocked reader found data only by its safety timeout
  bool membarrier = false;             // the reader side uses membarrier(2)
  std::vector<RingStats> rings;
};

class Tracer {
 public:
  static Tracer& Get();

  TracerOptions options() const;
  Status SetOptions(const TracerOptions& options);

  // The commit path (EventDef::Emit lands here).
  void Commit(const EventDef& event, const std::uint64_t* values);

  // Rings that may hold records: live ones, and retired ones not yet drained
  // (drained retired rings are released here).
  std::vector<std::shared_ptr<Ring>> Rings();
  bool HasUnread();
  // Blocks until a ring has unread records (true), or `timeout_ns` passes or
  // InterruptReaders() is called (false).  timeout_ns < 0 waits forever.
  bool WaitForData(std::int64_t timeout_ns);
  // Wakes every waiting reader, making its WaitForData return.
  void InterruptReaders();

  // Discards every record written so far.
  void Clear();
  TracerStats Stats();
  // The trace clock, in nanoseconds on the CLOCK_MONOTONIC time base.
  std::int64_t NowNs() const;

  // Back to a fresh state for a test: defaults, every event disabled and unfiltered,
  // tracing on, all rings retired and dropped, counters zero.
  void ResetForTesting();

  ~Tracer();

 private:
  Tracer();
  Status ApplyOptions(const TracerOptions& options);
  Status SetOptionsAndStartWaker(const TracerOptions& options);
  Ring* Attach(struct ThreadState& ts);
  void Write(struct ThreadState& ts, const EventDef& event, const std::uint64_t* values,
             bool nested);
  void WakeFromWriter(Ring* ring);
  void WakeReaders();
  void WakerMain();
  void EnsureWaker();
  // Ends and joins the waker (at exit, and in the destructor).  Deferred
  // wakeups armed afterwards are not delivered: a reader still waiting
  // finds its data at its safety timeout.
  void StopWaker();
  void CountMiss(struct ThreadState& ts);

  // Hot, read by every commit.
  alignas(kCacheLineSize) std::atomic<RecursionMode> recursion_{RecursionMode::kSafe};
  std::atomic<bool> overwrite_{true};
  std::atomic<ClockKind> clock_{DefaultClockKind()};
  std::atomic<std::uint32_t> generation_{1};
  std::atomic<WakeupMode> wakeup_{WakeupMode::kDeferred};
  std::atomic<std::uint32_t> buffer_percent_{50};
  bool membarrier_ = false;  // set once at construction

  // Written by sleeping readers and wakers, read by every commit.
  alignas(kCacheLineSize) std::atomic<bool> readers_waiting_{false};
  std::atomic<bool> waker_armed_{false};
  alignas(kCacheLineSize) std::atomic<std::uint32_t> reader_seq_{0};  // futex word readers sleep on
  std::atomic<std::uint32_t> interrupts_{0};  // InterruptReaders() calls

  mutable Mutex mu_;  // Lock order: leaf.
  TracerOptions options_ GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Ring>> rings_ GUARDED_BY(mu_);
  RingCounters freed_ GUARDED_BY(mu_);  // counters of rings already released

  std::atomic<std::uint64_t> lost_unattached_{0};
  std::atomic<std::uint64_t> reader_sleeps_{0};
  std::atomic<std::uint64_t> reader_naps_{0};
  std::atomic<std::uint64_t> reader_wakeups_{0};
  std::atomic<std::uint64_t> waker_arms_{0};
  std::atomic<std::uint64_t> watermark_wakes_{0};
  std::atomic<std::uint32_t> wakeup_delay_us_{2000};
  std::atomic<std::uint32_t> safety_timeout_ms_{1000};
  std::atomic<std::uint64_t> safety_timeouts_{0};

  std::atomic<WaitToken*> waker_token_{nullptr};
  std::atomic<bool> waker_stop_{false};
  std::thread waker_;
  pid_t waker_pid_ = 0;  // the process that started waker_ (a forked child did not)
  std::once_flag waker_once_;
};

}  // namespace walfs::tracing
