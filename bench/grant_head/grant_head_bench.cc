// grant_head_bench: log-space reservation under contention, the three wake
// modes side by side (XFS "Reduce spinlock contention in log space slowpath
// code": AIM7 fserver 91,486 -> 192,666 (WAKING) -> 285,221 (WAKING + wake
// queue) jobs/min).  See workload.h for what one cell runs.
//
// Every (threads, head lock, wake mode) cell runs `--reps` times, cells
// interleaved within each repetition so that machine noise spreads evenly
// over the variants; the table shows medians and each mode's ratio to inline
// at the same threads and lock.
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "base/report.h"
#include "bench/grant_head/workload.h"
#include "journal/reservation.h"
#include "tools/cli.h"
#include "tools/progress.h"

namespace walfs::bench {
namespace {

using journal::HeadLockKind;
using journal::WakeMode;

struct Options {
  std::vector<int> threads{1, 2, 4, 8, 16, 32, 64};
  std::vector<std::string> modes{"inline", "waking", "wakeq"};
  std::vector<std::string> locks{"mutex", "spin"};
  int log_units = 24;
  int reps = 3;
  bool quick = false;
  std::string json_path, csv_path;
  WorkloadConfig base;
};

// Medians over repetitions of everything the table shows.
struct Summary {
  std::vector<double> tx_per_s, p50, p99, sleeps, wakes, dups, avoided, useful, hold_mean,
      hold_p99, cpu;
  bool leak_free = true;
};

void Accumulate(Summary* s, const CellResult& r) {
  const auto& rh = r.stats.reserve_head;
  const auto& wh = r.stats.write_head;
  const double tx = r.transactions ? static_cast<double>(r.transactions) : 1.0;
  s->tx_per_s.push_back(r.tx_per_s);
  s->p50.push_back(r.reserve_p50_us);
  s->p99.push_back(r.reserve_p99_us);
  s->sleeps.push_back((rh.sleeps + wh.sleeps) / tx);
  s->wakes.push_back((rh.wakes_issued + wh.wakes_issued) / tx);
  s->dups.push_back((rh.duplicate_wakes + wh.duplicate_wakes) / tx);
  s->avoided.push_back((rh.duplicate_wakes_avoided + wh.duplicate_wakes_avoided) / tx);
  const double sleeps = static_cast<double>(rh.sleeps + wh.sleeps);
  s->useful.push_back(sleeps ? (rh.useful_wakes + wh.useful_wakes) / sleeps : 0);
  // Both heads' lock statistics, weighted by how often each was taken.
  const double n = static_cast<double>(rh.lock_hold.count + wh.lock_hold.count);
  s->hold_mean.push_back(n ? (rh.lock_hold.mean_ns * rh.lock_hold.count +
                              wh.lock_hold.mean_ns * wh.lock_hold.count) / n
                           : 0);
  s->hold_p99.push_back(static_cast<double>(std::max(rh.lock_hold.p99_ns, wh.lock_hold.p99_ns)));
  s->cpu.push_back(r.cpu_us_per_tx);
  s->leak_free = s->leak_free && r.leak_free;
}

int Run(const Options& o) {
  std::vector<WakeMode> modes;
  std::vector<HeadLockKind> locks;
  for (const auto& m : o.modes) {
    auto r = journal::ParseWakeMode(m);
    if (!r.ok()) return walfs::cli::UsageError("grant_head_bench", fmt::format("--modes: {}", r.status().message()));
    modes.push_back(*r);
  }
  for (const auto& l : o.locks) {
    auto r = journal::ParseHeadLockKind(l);
    if (!r.ok()) return walfs::cli::UsageError("grant_head_bench", fmt::format("--locks: {}", r.status().message()));
    locks.push_back(*r);
  }

  WorkloadConfig base = o.base;
  const journal::ReservationTable table(journal::ReservationGeometry{});
  if (base.unit_bytes == 0) base.unit_bytes = table.Get(journal::TransType::kCreate).unit_bytes;
  base.log_bytes = std::int64_t{base.unit_bytes} * o.log_units;
  base.min_log_bytes = 3 * std::int64_t{base.unit_bytes} * base.cnt;

  fmt::print("grant_head_bench: log {} bytes ({} units of {} bytes), tickets cnt={} steps={}, "
             "work {} ns, {:.0f}% of a unit written per step, writeback {} us, {} ms x {} reps "
             "per cell\n",
             base.log_bytes, o.log_units, base.unit_bytes, base.cnt, base.steps, base.work_ns,
             base.use_fraction * 100, base.writeback_us, base.duration_ms, o.reps);

  using Key = std::tuple<int, HeadLockKind, WakeMode>;
  std::map<Key, Summary> results;
  cli::ProgressLine progress;  // '\r' only on a terminal (tools/progress.h)
  for (int rep = 0; rep < o.reps; ++rep) {
    for (int threads : o.threads) {
      for (HeadLockKind lock : locks) {
        for (WakeMode mode : modes) {
          WorkloadConfig c = base;
          c.threads = threads;
          c.lock = lock;
          c.mode = mode;
          Result<CellResult> r = RunWorkload(c);
          if (!r.ok()) {
            fmt::print(stderr, "grant_head_bench: {}\n", r.status().ToString());
            return 1;
          }
          Accumulate(&results[{threads, lock, mode}], *r);
          progress.Show(fmt::format("rep {}/{}: {:>2} threads {:<5} {:<6} {:>10.0f} tx/s", rep + 1, o.reps,
                                    threads, journal::HeadLockKindName(lock), journal::WakeModeName(mode),
                                    r->tx_per_s));
        }
      }
    }
  }
  progress.Done();

  Report report({"threads", "lock", "mode", "tx_per_s", "vs_inline", "reserve_p50_us",
                 "reserve_p99_us", "sleeps_per_tx", "wakes_per_tx", "dup_wakes_per_tx",
                 "dup_avoided_per_tx", "useful_per_sleep", "hold_mean_ns", "hold_p99_ns",
                 "cpu_us_per_tx"});
  bool leak_free = true;
  for (int threads : o.threads) {
    for (HeadLockKind lock : locks) {
      const auto inline_it = results.find({threads, lock, WakeMode::kInline});
      const double inline_tps =
          inline_it == results.end() ? 0 : Median(inline_it->second.tx_per_s);
      for (WakeMode mode : modes) {
        const Summary& s = results[{threads, lock, mode}];
        const double tps = Median(s.tx_per_s);
        leak_free = leak_free && s.leak_free;
        report.AddRow({threads, std::string(journal::HeadLockKindName(lock)),
                       std::string(journal::WakeModeName(mode)), Cell(tps, 0),
                       Cell(inline_tps > 0 ? tps / inline_tps : 0.0, 2), Cell(Median(s.p50), 1),
                       Cell(Median(s.p99), 1), Cell(Median(s.sleeps), 3),
                       Cell(Median(s.wakes), 3), Cell(Median(s.dups), 3),
                       Cell(Median(s.avoided), 3), Cell(Median(s.useful), 2),
                       Cell(Median(s.hold_mean), 0), Cell(Median(s.hold_p99), 0),
                       Cell(Median(s.cpu), 2)});
      }
    }
  }
  report.Print(stdout, "Medians over repetitions; vs_inline = tx/s over inline's at the same "
                       "threads and lock");
  fmt::print("leak check (both grant heads at zero after every cell): {}\n",
             leak_free ? "passed" : "FAILED");
  if (!o.json_path.empty()) {
    if (Status s = report.WriteJson(o.json_path); !s.ok())
      return fmt::print(stderr, "grant_head_bench: {}\n", s.ToString()), 1;
  }
  if (!o.csv_path.empty()) {
    if (Status s = report.WriteCsv(o.csv_path); !s.ok())
      return fmt::print(stderr, "grant_head_bench: {}\n", s.ToString()), 1;
  }
  return leak_free ? 0 : 1;
}

}  // namespace
}  // namespace walfs::bench

int main(int argc, char** argv) {
  walfs::bench::Options o;
  CLI::App app{"Log-space reservation under contention: inline vs waking vs wakeq wakeups.",
               "grant_head_bench"};
  walfs::cli::AddVersion(app, "grant_head_bench");
  app.add_option("--threads", o.threads, "Worker thread counts")->delimiter(',')->check(walfs::cli::AtLeast(1));
  app.add_option("--modes", o.modes, "Wake modes: inline,waking,wakeq")->delimiter(',');
  app.add_option("--locks", o.locks, "Head locks: mutex,spin")->delimiter(',');
  app.add_option("--log-units", o.log_units, "Log size in units of one reservation")
      ->check(CLI::Range(6, 1 << 20));
  app.add_option("--unit-bytes", o.base.unit_bytes,
                 "Unit reservation in bytes (default: the create transaction's)");
  app.add_option("--cnt", o.base.cnt, "Pre-reserved rolls per ticket")->check(CLI::Range(1, 64));
  app.add_option("--steps", o.base.steps, "Committed steps per ticket")->check(CLI::Range(1, 64));
  app.add_option("--work-ns", o.base.work_ns, "CPU work per step while holding the ticket");
  app.add_option("--use", o.base.use_fraction, "Fraction of a unit written per step")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--writeback-us", o.base.writeback_us, "Delay from log write to tail move");
  app.add_option("--duration-ms", o.base.duration_ms, "Run time of one cell")
      ->check(CLI::Range(10, 600000));
  app.add_option("--reps", o.reps, "Repetitions of every cell")->check(CLI::Range(1, 100));
  app.add_flag("--quick", o.quick, "Short run: 1,4,16,64 threads, 300 ms cells, 1 rep");
  app.add_option("--json", o.json_path, "Write the table as JSON (one object per row)");
  app.add_option("--csv", o.csv_path, "Write the table as CSV");
  if (auto code = walfs::cli::Parse(app, argc, argv)) return *code;
  if (o.quick) {
    if (app.count("--threads") == 0) o.threads = {1, 4, 16, 64};
    if (app.count("--duration-ms") == 0) o.base.duration_ms = 300;
    if (app.count("--reps") == 0) o.reps = 1;
  }
  return walfs::bench::Run(o);
}
