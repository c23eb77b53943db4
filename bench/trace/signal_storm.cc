#include "bench/trace/signal_storm.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <csignal>
#include <ctime>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "bench/trace/bench_events.h"
#include "bench/trace/drainer.h"
#include "bench/trace/start_gate.h"
#include "tracing/signals.h"
#include "tracing/tracer.h"

namespace walfs::bench {

namespace {

using tracing::Tracer;
using tracing::TracerOptions;

// Handler runs on this thread.  Atomic because in safe mode a held handler
// runs from the write's epilogue, in normal context, and another signal can
// interrupt its increment.
thread_local std::atomic<std::uint64_t> tls_attempts{0};

void StormHandler(int sig, siginfo_t*, void*) {
  const std::uint64_t n = tls_attempts.fetch_add(1, std::memory_order_relaxed) + 1;
  WALFS_TRACE(kStormSignal, n, sig);
}

int StormSignal() { return SIGRTMIN; }

// A ring that holds the whole cell: main-loop records plus room for the
// handler's (a quarter more, at least 16 Ki records), as a power of two.  A
// storm that outgrew it would show as drops, and the cell's check fails.
std::uint32_t BufferKbFor(std::uint64_t records) {
  const std::uint64_t slots = std::bit_ceil(records + std::max<std::uint64_t>(records / 4, 16384));
  return static_cast<std::uint32_t>(slots * sizeof(tracing::Record) / 1024);
}

// A timer that sends StormSignal() to the calling thread every interval_us.
class ThreadTimer {
 public:
  Status Create(std::int64_t interval_us) {
    interval_us_ = interval_us;
    if (interval_us <= 0) return Status::Ok();
    sigevent sev{};
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = StormSignal();
    sev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));  // sigev_notify_thread_id
    if (timer_create(CLOCK_MONOTONIC, &sev, &timer_) != 0)
      return Status::FromErrno(errno, "timer_create(SIGEV_THREAD_ID)");
    created_ = true;
    return Status::Ok();
  }
  void Start() {
    if (!created_) return;
    itimerspec its{};
    its.it_interval.tv_sec = interval_us_ / 1'000'000;
    its.it_interval.tv_nsec = (interval_us_ % 1'000'000) * 1000;
    its.it_value = its.it_interval;
    timer_settime(timer_, 0, &its, nullptr);
  }
  // Deletes the timer and blocks the signal, so that no handler runs once
  // the thread starts exiting (its events would be dropped uncounted, and
  // its attempt would already have been counted).
  void Stop() {
    if (!created_) return;
    timer_delete(timer_);
    created_ = false;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, StormSignal());
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  }

 private:
  std::int64_t interval_us_ = 0;
  timer_t timer_{};
  bool created_ = false;
};

}  // namespace

Result<StormResult> RunStormCell(const StormConfig& c) {
  Tracer& tracer = Tracer::Get();
  tracer.ResetForTesting();
  const std::uint64_t per_thread = 2 * (c.iterations + c.warmup);
  TracerOptions o;
  o.overwrite = false;
  o.buffer_size_kb = BufferKbFor(per_thread);
  o.recursion = c.mode;
  o.clock = c.clock;
  WALFS_RETURN_IF_ERROR(tracer.SetOptions(o));
  WALFS_RETURN_IF_ERROR(EnableBenchEvents(true));
  // Stays installed after the cell: a signal still pending somewhere must
  // never meet the default action (termination).
  WALFS_RETURN_IF_ERROR(tracing::InstallSignalHandler(StormSignal(), StormHandler));

  StartGate gate(c.threads);
  std::vector<std::int64_t> elapsed(c.threads);
  std::vector<std::uint64_t> attempts(c.threads);
  std::vector<Status> errors(c.threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < c.threads; ++t) {
    workers.emplace_back([&, t] {
      const auto thread = static_cast<std::uint64_t>(t);
      // The first event attaches (and zero-fills) the ring: before the start.
      for (std::uint64_t i = 0; i < c.warmup; ++i) {
        WALFS_TRACE(kGetuidEnter, i, thread);
        WALFS_TRACE(kGetuidExit, i, thread);
      }
      ThreadTimer timer;
      errors[t] = timer.Create(c.interval_us);
      gate.ArriveAndWait();
      const std::int64_t t0 = MonotonicNanos();
      timer.Start();
      for (std::uint64_t i = 0; i < c.iterations; ++i) {
        WALFS_TRACE(kGetuidEnter, i, thread);
        WALFS_TRACE(kGetuidExit, i, thread);
      }
      elapsed[t] = MonotonicNanos() - t0;
      timer.Stop();
      attempts[t] = tls_attempts.load(std::memory_order_relaxed);
    });
  }
  gate.WaitArrived();
  gate.Open();
  for (auto& w : workers) w.join();
  for (const Status& s : errors) WALFS_RETURN_IF_ERROR(s);

  const DrainCounts d = DrainNow();
  const tracing::TracerStats s = tracer.Stats();

  StormResult r;
  r.buffer_kb = o.buffer_size_kb;
  double sum = 0;
  std::int64_t longest = 1;
  for (std::int64_t e : elapsed) {
    sum += static_cast<double>(e);
    longest = std::max(longest, e);
  }
  r.ns_per_event = sum / c.threads / (2.0 * static_cast<double>(c.iterations));
  for (std::uint64_t a : attempts) r.handler_attempted += a;
  r.signals_per_s = static_cast<double>(r.handler_attempted) * 1e9 / static_cast<double>(longest);
  r.events_expected = per_thread * c.threads;
  r.events_recorded = d.Count(kGetuidEnter.id()) + d.Count(kGetuidExit.id());
  r.handler_recorded = d.Count(kStormSignal.id());
  r.recursion_misses = s.totals.recursion_misses;
  r.lost_other = s.totals.overruns + s.totals.drops + s.lost_unattached;
  r.consistent = r.events_recorded == r.events_expected && r.lost_other == 0 &&
                 r.handler_attempted >= r.handler_recorded &&
                 r.recursion_misses == r.handler_attempted - r.handler_recorded;
  return r;
}

}  // namespace walfs::bench
