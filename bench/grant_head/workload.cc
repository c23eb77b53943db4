#include "bench/grant_head/workload.h"

#include <sys/prctl.h>

#include <atomic>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/cpu.h"
#include "base/histogram.h"

namespace walfs::bench {

namespace {

using journal::LogSpace;
using journal::Ticket;
using journal::TicketRef;

void SpinFor(std::int64_t ns) {
  if (ns <= 0) return;
  const std::int64_t end = MonotonicNanos() + ns;
  while (MonotonicNanos() < end) CpuRelax();
}

// Hands written bytes to the "AIL" each tick and moves the tail past what was
// written writeback_us ago.
class TailMover {
 public:
  TailMover(LogSpace* space, const WorkloadConfig& c) : space_(space), config_(c) {}

  void AddWritten(std::int64_t bytes) { pending_.fetch_add(bytes, std::memory_order_relaxed); }

  void Run(const std::atomic<bool>& stop) {
    prctl(PR_SET_TIMERSLACK, 1UL);  // 50 µs ticks, not 50 µs + 50 µs of slack
    while (!stop.load(std::memory_order_acquire)) {
      Tick(MonotonicNanos());
      std::this_thread::sleep_for(std::chrono::microseconds(config_.tick_us));
    }
  }

  // Returns everything still written and moves the tail to the head.
  void Quiesce() {
    Tick(MonotonicNanos());
    space_->MoveTail(space_->tail_space());
    samples_.clear();
  }

 private:
  void Tick(std::int64_t now) {
    const std::int64_t w = pending_.exchange(0, std::memory_order_relaxed);
    if (w > 0) {
      space_->ReturnSpace(w);
      written_ += w;
    }
    samples_.push_back({now, written_});
    std::int64_t target = moved_;
    while (!samples_.empty() && samples_.front().at_ns <= now - config_.writeback_us * 1000) {
      target = samples_.front().written;
      samples_.pop_front();
    }
    if (target > moved_) {
      space_->MoveTail(target - moved_);
      moved_ = target;
    }
  }

  struct Sample {
    std::int64_t at_ns;
    std::int64_t written;  // cumulative bytes handed to the AIL by then
  };
  LogSpace* const space_;
  const WorkloadConfig config_;
  std::atomic<std::int64_t> pending_{0};
  std::int64_t written_ = 0;  // mover thread only
  std::int64_t moved_ = 0;
  std::deque<Sample> samples_;
};

}  // namespace

Result<CellResult> RunWorkload(const WorkloadConfig& c) {
  if (c.threads < 1 || c.unit_bytes <= 0 || c.cnt < 1 || c.steps < 1 || c.duration_ms <= 0 ||
      c.use_fraction < 0 || c.use_fraction > 1)
    return Status::InvalidArgument("bad grant-head workload configuration");

  std::unique_ptr<TailMover> mover;
  std::atomic<std::uint64_t> pushes{0};
  WALFS_ASSIGN_OR_RETURN(
      std::unique_ptr<LogSpace> space,
      LogSpace::Create({.log_bytes = c.log_bytes,
                        .min_log_bytes = c.min_log_bytes,
                        .wake_mode = c.mode,
                        .head_lock = c.lock,
                        .push_tail = [&pushes] { pushes.fetch_add(1, std::memory_order_relaxed); }}));
  mover = std::make_unique<TailMover>(space.get(), c);

  const auto used = static_cast<std::int32_t>(c.unit_bytes * c.use_fraction);
  std::atomic<bool> stop_workers{false}, stop_mover{false};
  std::atomic<std::uint64_t> transactions{0};
  std::atomic<int> failures{0};
  std::vector<std::unique_ptr<Histogram>> latency;
  for (int t = 0; t < c.threads; ++t) latency.push_back(std::make_unique<Histogram>());

  std::thread mover_thread([&] { mover->Run(stop_mover); });
  const std::int64_t cpu0 = ProcessCpuNanos();
  const std::int64_t t0 = MonotonicNanos();
  std::vector<std::thread> workers;
  for (int t = 0; t < c.threads; ++t) {
    workers.emplace_back([&, t] {
      Histogram& lat = *latency[t];
      std::uint64_t done = 0;
      while (!stop_workers.load(std::memory_order_relaxed)) {
        std::int64_t s = MonotonicNanos();
        Result<TicketRef> r = space->Reserve(c.unit_bytes, c.cnt, true);
        lat.Record(MonotonicNanos() - s);
        if (!r.ok()) {
          failures.fetch_add(1);
          break;
        }
        Ticket* tic = r->get();
        for (int step = 0; step < c.steps; ++step) {
          SpinFor(c.work_ns);
          if (!tic->Consume(used)) failures.fetch_add(1);
          mover->AddWritten(used);
          ++done;
          if (step + 1 == c.steps) {
            space->TicketUngrant(tic);
            break;
          }
          space->TicketRegrant(tic);
          s = MonotonicNanos();
          const Status st = space->Regrant(tic);
          lat.Record(MonotonicNanos() - s);
          if (!st.ok()) failures.fetch_add(1);
        }
      }
      transactions.fetch_add(done, std::memory_order_relaxed);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(c.duration_ms));
  stop_workers.store(true);
  for (auto& w : workers) w.join();
  const std::int64_t t1 = MonotonicNanos();
  const std::int64_t cpu1 = ProcessCpuNanos();
  stop_mover.store(true, std::memory_order_release);
  mover_thread.join();
  mover->Quiesce();

  if (failures.load() > 0) return Status::Internal("workload had failed reservations");

  CellResult r;
  Histogram all;
  for (auto& h : latency) all.Merge(*h);
  r.seconds = static_cast<double>(t1 - t0) / 1e9;
  r.transactions = transactions.load();
  r.tx_per_s = static_cast<double>(r.transactions) / r.seconds;
  r.reserve_p50_us = static_cast<double>(all.Percentile(0.5)) / 1000.0;
  r.reserve_p99_us = static_cast<double>(all.Percentile(0.99)) / 1000.0;
  r.cpu_us_per_tx = r.transactions ? static_cast<double>(cpu1 - cpu0) / 1000.0 / r.transactions : 0;
  r.tail_pushes = pushes.load();
  r.stats = space->Stats();
  r.leak_free = r.stats.reserve_head.grant_bytes == 0 && r.stats.write_head.grant_bytes == 0 &&
                r.stats.tail_space == 0;
  return r;
}

}  // namespace walfs::bench
