#include "bench/trace/getuid_load.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <iterator>
#include <optional>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "bench/trace/bench_events.h"
#include "bench/trace/drainer.h"
#include "bench/trace/start_gate.h"
#include "tracing/tracer.h"

namespace walfs::bench {

namespace {

using tracing::RecursionMode;
using tracing::Tracer;
using tracing::TracerOptions;
using tracing::WakeupMode;

constexpr std::string_view kModeNames[] = {"off", "noreader", "immediate", "deferred",
                                           "deferred+wm"};

// One traced call: the userspace analogue of sys_enter / getuid / sys_exit.
inline void TracedGetuid(std::uint64_t seq, std::uint64_t thread) {
  WALFS_TRACE(kGetuidEnter, seq, thread);
  const long uid = syscall(SYS_getuid);
  WALFS_TRACE(kGetuidExit, seq, uid);
}

}  // namespace

std::string_view GetuidModeName(GetuidMode m) { return kModeNames[static_cast<int>(m)]; }

Result<GetuidMode> ParseGetuidMode(std::string_view s) {
  for (std::size_t i = 0; i < std::size(kModeNames); ++i)
    if (s == kModeNames[i]) return static_cast<GetuidMode>(i);
  return Status::InvalidArgument("unknown getuid mode '" + std::string(s) +
                                 "' (off, noreader, immediate, deferred, deferred+wm)");
}

Result<GetuidResult> RunGetuidCell(const GetuidConfig& c) {
  Tracer& tracer = Tracer::Get();
  tracer.ResetForTesting();
  TracerOptions o;
  o.buffer_size_kb = c.buffer_kb;
  o.clock = c.clock;
  o.overwrite = true;
  o.recursion = RecursionMode::kSafe;
  o.wakeup = c.mode == GetuidMode::kImmediate ? WakeupMode::kImmediate : WakeupMode::kDeferred;
  o.wakeup_delay_us = c.wakeup_delay_us;
  o.buffer_percent = c.mode == GetuidMode::kDeferredWatermark ? c.watermark_percent : 0;
  WALFS_RETURN_IF_ERROR(tracer.SetOptions(o));
  const bool traced = c.mode != GetuidMode::kOff;
  WALFS_RETURN_IF_ERROR(EnableBenchEvents(traced));

  std::optional<Drainer> drainer;
  if (c.mode != GetuidMode::kNoReader) drainer.emplace(c.reader);
  StartGate gate(c.threads);
  std::vector<std::int64_t> elapsed(c.threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < c.threads; ++t) {
    workers.emplace_back([&, t] {
      const auto thread = static_cast<std::uint64_t>(t);
      for (std::uint64_t i = 0; i < c.warmup; ++i) TracedGetuid(i, thread);
      gate.ArriveAndWait();
      const std::int64_t t0 = MonotonicNanos();
      for (std::uint64_t i = 0; i < c.calls; ++i) TracedGetuid(i, thread);
      elapsed[t] = MonotonicNanos() - t0;
    });
  }
  gate.WaitArrived();
  const std::int64_t cpu0 = ProcessCpuNanos();
  gate.Open();
  for (auto& w : workers) w.join();
  const std::int64_t cpu1 = ProcessCpuNanos();
  const DrainCounts d = drainer ? drainer->Stop() : DrainNow();
  const tracing::TracerStats s = tracer.Stats();
  // A deferred wakeup armed by the last commits fires wakeup_delay_us later;
  // let it land here rather than in the next cell's counters.
  if (drainer && traced && o.wakeup == WakeupMode::kDeferred)
    std::this_thread::sleep_for(std::chrono::microseconds(c.wakeup_delay_us + 1000));

  GetuidResult r;
  double sum = 0;
  for (std::int64_t e : elapsed) sum += static_cast<double>(e);
  const double calls = static_cast<double>(c.calls);
  r.ns_per_call = sum / c.threads / calls;
  r.cpu_ns_per_call = static_cast<double>(cpu1 - cpu0) / (calls * c.threads);
  r.events_expected = traced ? 2 * (c.calls + c.warmup) * c.threads : 0;
  r.events_read = d.Count(kGetuidEnter.id()) + d.Count(kGetuidExit.id());
  r.lost = s.totals.overruns + s.totals.drops + s.totals.recursion_misses + s.lost_unattached;
  r.lost_in_stream = d.lost_in_stream;
  r.writer_syscalls = s.totals.writer_wake_syscalls;
  r.reader_wakeups = s.reader_wakeups;
  r.reader_sleeps = s.reader_sleeps;
  r.waker_arms = s.waker_arms;
  r.watermark_wakes = s.watermark_wakes;
  r.empty_returns = d.empty_returns;
  r.max_lag_us = static_cast<double>(d.max_lag_ns) / 1000.0;
  r.reader_cpu_ns_per_record =
      d.records > 0 ? static_cast<double>(d.cpu_ns) / static_cast<double>(d.records) : 0;
  return r;
}

}  // namespace walfs::bench
