// walfs-crashtest: the crash-consistency harness as a command (crash/, docs/crashtest.md).
// Runs the random and/or short-sequence workloads for a range of seeds, checks
// every crash state of each, prints one table row per run and a summary line
// with every failing seed and how to rerun it.  Exit status: 0 all passed,
// 1 a crash state failed, 2 bad usage.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "base/report.h"
#include "crash/runner.h"
#include "crash/short_workload.h"
#include "tools/cli.h"

namespace {

using walfs::Cell;
using walfs::Report;
using walfs::crash::RunOptions;
using walfs::crash::RunResult;
using walfs::crash::WorkloadKind;

// What --quick runs unless told otherwise, bounded to about a minute in a
// RelWithDebInfo build on two cores.
// RelWithDebInfo build on two cores: two random runs and every single-op
// sequence (seq-1).
constexpr int kQuickRandomSeeds = 2;
constexpr int kQuickShortSeeds = static_cast<int>(walfs::crash::kSeq1);
constexpr int kDefaultOps = 400;

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string Rerun(const RunOptions& o, int default_ops) {
  std::string cmd =
      fmt::format("walfs-crashtest --workload {} --seed {}", walfs::crash::WorkloadName(o.workload), o.seed);
  if (o.workload == WorkloadKind::kRandom && o.ops != default_ops) cmd += fmt::format(" --ops {}", o.ops);
  if (o.samples != RunOptions{}.samples) cmd += fmt::format(" --samples {}", o.samples);
  if (o.preallocate) cmd += " --preallocate";
  return cmd;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"walfs-crashtest: crash-consistency checks of walfs over a write-recording device",
               "walfs-crashtest"};
  walfs::cli::AddVersion(app, "walfs-crashtest");
  std::uint64_t seed = 0;
  int seeds = 0, random_seeds = 0, short_seeds = 0;
  std::string workload = "all";
  int ops = 0, samples = 40;
  bool quick = false, verbose = false, preallocate = false;
  std::string json;
  app.add_option("--seed", seed, "Run this seed (with --seeds: the first of the range)");
  app.add_option("--seeds", seeds, "Run this many seeds, from --seed or 1")->check(walfs::cli::AtLeast(1));
  app.add_option("--random-seeds", random_seeds, "Seeds of the random workload (overrides --seeds, --quick)")
      ->check(walfs::cli::AtLeast(1));
  app.add_option("--short-seeds", short_seeds, "Seeds of the short workload (overrides --seeds, --quick)")
      ->check(walfs::cli::AtLeast(1));
  app.add_option("--workload", workload, "random, short or all")
      ->check(CLI::IsMember({"random", "short", "all"}));
  app.add_option("--ops", ops, fmt::format("Operations per random run (default {})", kDefaultOps))
      ->check(walfs::cli::AtLeast(1));
  app.add_option("--samples", samples, "Reordered crash states per random run (short runs: a quarter)")
      ->check(walfs::cli::AtLeast(0));
  app.add_flag("--preallocate", preallocate,
               "Random runs also fallocate (half their truncates), so writes land in unwritten extents");
  app.add_flag("--quick", quick,
               fmt::format("Bounded run (under a minute): random seeds 1..{}, short seeds 1..{} (seq-1); "
                           "without it 3 seeds of each",
                           kQuickRandomSeeds, kQuickShortSeeds));
  app.add_option("--json", json, "Also write the table as JSON, one object per run");
  app.add_flag("-v,--verbose", verbose, "Print every failure in full (with one run it always is)");
  app.footer(fmt::format(
      "Short-workload seeds 1..{} are every single op (seq-1), the next {} every pair (seq-2), "
      "higher ones random sequences of 3-4 ops.",
      walfs::crash::kSeq1, walfs::crash::kSeq2));
  if (auto code = walfs::cli::Parse(app, argc, argv)) return *code;

  if (ops == 0) ops = kDefaultOps;
  std::vector<RunOptions> runs;
  auto add = [&](WorkloadKind k, int count, int quick_seeds) {
    const std::uint64_t first = seed ? seed : 1;
    const int n = count ? count : seeds ? seeds : (seed ? 1 : (quick ? quick_seeds : 3));
    for (int i = 0; i < n; ++i)
      runs.push_back({.workload = k, .seed = first + static_cast<std::uint64_t>(i), .ops = ops, .samples = samples,
                      .preallocate = preallocate});
  };
  if (workload != "short") add(WorkloadKind::kRandom, random_seeds, kQuickRandomSeeds);
  if (workload != "random") add(WorkloadKind::kShort, short_seeds, kQuickShortSeeds);

  Report table({"workload", "seed", "ops", "device_ops", "flushes", "crash_states", "torn", "reordered",
                "failures", "seconds", "cpu_seconds", "sequence"});
  std::vector<std::string> json_columns = table.columns();
  json_columns.push_back("first_failure");
  Report rows(json_columns);
  std::vector<std::pair<RunOptions, RunResult>> failed;
  std::size_t states = 0, torn = 0, reordered = 0;
  double seconds = 0, cpu_seconds = 0;
  for (const RunOptions& o : runs) {
    RunResult r = walfs::crash::RunCrashTest(o);
    std::vector<Cell> row{std::string(walfs::crash::WorkloadName(r.workload)),
                          r.seed,
                          r.ops,
                          r.device_ops,
                          r.flushes,
                          r.crash_states,
                          r.torn,
                          r.reordered,
                          r.failures,
                          Cell(r.seconds, 2),
                          Cell(r.cpu_seconds, 2),
                          r.sequence.empty() ? std::string("-") : r.sequence};
    table.AddRow(row);
    row.emplace_back(FirstLine(r.first_error));
    rows.AddRow(row);
    fmt::print("{:>6} seed {:>5}: {:>5} crash states in {:6.2f} s{}\n", walfs::crash::WorkloadName(r.workload),
               r.seed, r.crash_states, r.seconds, r.ok() ? "" : "  FAILED");
    std::fflush(stdout);
    if (!r.ok() && (verbose || runs.size() == 1)) fmt::print(stderr, "{}\n", r.failure);
    states += r.crash_states;
    torn += r.torn;
    reordered += r.reordered;
    seconds += r.seconds;
    cpu_seconds += r.cpu_seconds;
    if (!r.ok()) failed.emplace_back(o, std::move(r));
  }
  table.Print(stdout, "walfs-crashtest");
  if (!json.empty()) {
    if (walfs::Status s = rows.WriteJson(json); !s.ok()) {
      fmt::print(stderr, "walfs-crashtest: {}\n", s.ToString());
      return 1;
    }
  }
  fmt::print("\n{} runs, {} crash states checked ({} torn, {} reordered) in {:.1f} s ({:.1f} s CPU): {}\n",
             runs.size(), states, torn, reordered, seconds, cpu_seconds,
             failed.empty() ? std::string("all passed") : fmt::format("{} failed", failed.size()));
  for (const auto& [o, r] : failed) {
    fmt::print("  FAILED {} seed {}{}: {}\n    rerun: {}\n", walfs::crash::WorkloadName(o.workload), o.seed,
               r.sequence.empty() ? "" : fmt::format(" ({})", r.sequence), FirstLine(r.first_error),
               Rerun(o, kDefaultOps));
  }
  return failed.empty() ? 0 : 1;
}
