// The getuid table: what waking the trace_pipe reader from the commit path
// costs the traced threads (ftrace, "Schedule a delayed work to call
// wakeup()": with sys_enter/sys_exit on and 1-5 processes calling getuid() in
// a loop, 720 / 1166 / 1784 / 4483 / 6500 ns per call with the reader woken
// from the commit, 728-1140 ns per call with a 2 ms deferred wakeup).
//
// What it isolates: the reader-wakeup policy.  P threads each call
// syscall(SYS_getuid) `calls` times, each call between a getuid_enter and a
// getuid_exit event, while one reader thread drains the rings continuously
// with a blocking consuming read (Drainer).  The variants differ only in
// tracer options; the threads, the reader and the loop are the same:
//   off          events disabled (WALFS_TRACE costs one load and a branch)
//   noreader     events on, no reader until the threads are joined: the
//                commit path alone (the ring wraps; overruns are counted)
//   immediate    wakeup=immediate: a commit that finds the reader asleep
//                wakes it with a futex syscall
//   deferred     wakeup=deferred, buffer_percent=0: only the waker thread
//                wakes the reader, wakeup_delay_us after the first commit
//   deferred+wm  wakeup=deferred, buffer_percent=W: as deferred, plus an
//                early wake from the commit when a ring is W% full
// Each thread attaches its ring and warms up (`warmup` calls, traced and
// counted) before a common start; its loop time is its own wall time.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "bench/trace/drainer.h"
#include "tracing/options.h"

namespace walfs::bench {

enum class GetuidMode : std::uint8_t { kOff, kNoReader, kImmediate, kDeferred, kDeferredWatermark };

std::string_view GetuidModeName(GetuidMode m);
Result<GetuidMode> ParseGetuidMode(std::string_view s);

struct GetuidConfig {
  int threads = 1;
  GetuidMode mode = GetuidMode::kDeferred;
  std::uint64_t calls = 1'000'000;  // measured calls per thread
  std::uint64_t warmup = 1000;      // traced calls per thread before the start
  std::uint32_t wakeup_delay_us = 2000;
  std::uint32_t watermark_percent = 50;  // deferred+wm only
  std::uint32_t buffer_kb = 4096;        // per-thread ring
  tracing::ClockKind clock = tracing::DefaultClockKind();
  ReaderKind reader = ReaderKind::kEntries;  // the drainer's read (drainer.h)
};

struct GetuidResult {
  double ns_per_call = 0;      // mean over threads of loop wall time / calls
  double cpu_ns_per_call = 0;  // process CPU (writers, reader, waker) / all calls
  std::uint64_t events_expected = 0;
  std::uint64_t events_read = 0;
  std::uint64_t lost = 0;  // overruns + drops + recursion misses + lost unattached
  std::uint64_t lost_in_stream = 0;  // what the reader saw as [LOST N EVENTS]
  std::uint64_t writer_syscalls = 0;
  std::uint64_t reader_wakeups = 0;
  std::uint64_t reader_sleeps = 0;
  std::uint64_t waker_arms = 0;
  std::uint64_t watermark_wakes = 0;
  std::uint64_t empty_returns = 0;  // see DrainCounts
  double max_lag_us = 0;
  double reader_cpu_ns_per_record = 0;  // the drainer thread's CPU / records it read
};

// Runs one cell: resets the tracer, sets the options, runs, drains.
Result<GetuidResult> RunGetuidCell(const GetuidConfig& config);

}  // namespace walfs::bench
