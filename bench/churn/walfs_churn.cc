// walfs-churn: the create, write, fsync, rename, unlink loop (churn.h) on any
// directory, at one or more process counts, printed as a table of cycles per
// second and a cycle's latency.  walfs-peers runs it on walfs and its peers
// (its `churn` load); docs/peers.md says how to read it.
//
//   walfs-churn DIR [--procs 1,8] [--seconds 5] [--size 4K] [--reps N]
//               [--quick] [--json PATH] [--csv PATH]
//
// Exit status: 0 success, 1 DIR is unusable or a cycle failed (which process,
// step and errno are printed), 2 bad usage.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "base/report.h"
#include "bench/churn/churn.h"
#include "tools/cli.h"

namespace walfs::bench::churn {
namespace {

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;
constexpr char kProgram[] = "walfs-churn";

struct Options {
  std::string dir;
  std::vector<int> procs = {1, 8};
  double seconds = 5;
  std::string size = "4K";
  int reps = 1;
  bool quick = false;
  std::string json_path, csv_path;
};

// Every level's values, one entry per repetition.
struct Samples {
  std::vector<double> rate, cycles, seconds, p50, p99, max;
};

std::string Processes(int n) { return fmt::format("{} process{}", n, n == 1 ? "" : "es"); }

int Run(const Options& o, std::uint64_t write_bytes) {
  fmt::print("walfs-churn: {}: create, write {} bytes, fsync, close, rename, unlink; {} s a level, "
             "{} repetition{}\n",
             o.dir, write_bytes, o.seconds, o.reps, o.reps == 1 ? "" : "s");
  std::fflush(stdout);
  std::map<int, Samples> samples;
  for (int rep = 0; rep < o.reps; ++rep) {
    for (const int procs : o.procs) {
      const Config c{.dir = o.dir, .processes = procs, .seconds = o.seconds, .write_bytes = write_bytes};
      Result<LevelResult> r = RunLevel(c);
      if (!r.ok()) {
        fmt::print(stderr, "{}: {}: {}\n", kProgram, Processes(procs), r.status().message());
        return kExitFailed;
      }
      Samples& s = samples[procs];
      s.rate.push_back(r->cycles_per_s);
      s.cycles.push_back(static_cast<double>(r->cycles));
      s.seconds.push_back(r->seconds);
      s.p50.push_back(static_cast<double>(r->p50_us));
      s.p99.push_back(static_cast<double>(r->p99_us));
      s.max.push_back(static_cast<double>(r->max_us));
      fmt::print(stderr, "  {}: {:.0f} cycles/s, p99 {} us\n", Processes(procs), r->cycles_per_s, r->p99_us);
    }
  }
  Report report({"processes", "cycles", "seconds", "cycles_per_s", "p50_us", "p99_us", "max_us"});
  for (const int procs : o.procs) {
    const Samples& s = samples[procs];
    report.AddRow({procs, static_cast<std::int64_t>(Median(s.cycles)), Cell(Median(s.seconds), 2),
                   Cell(Median(s.rate), 0), static_cast<std::int64_t>(Median(s.p50)),
                   static_cast<std::int64_t>(Median(s.p99)), static_cast<std::int64_t>(Median(s.max))});
  }
  report.Print(stdout, o.reps > 1 ? "Medians over repetitions" : "");
  int rc = kExitOk;
  if (!o.json_path.empty()) {
    if (Status s = report.WriteJson(o.json_path); !s.ok())
      fmt::print(stderr, "{}: {}\n", kProgram, s.ToString()), rc = kExitFailed;
  }
  if (!o.csv_path.empty()) {
    if (Status s = report.WriteCsv(o.csv_path); !s.ok())
      fmt::print(stderr, "{}: {}\n", kProgram, s.ToString()), rc = kExitFailed;
  }
  return rc;
}

}  // namespace
}  // namespace walfs::bench::churn

int main(int argc, char** argv) {
  using namespace walfs::bench::churn;
  Options o;
  CLI::App app{"The create, write, fsync, rename, unlink loop of a safe file save, run by N processes "
               "at once on DIR: cycles per second and a cycle's latency.",
               kProgram};
  walfs::cli::AddVersion(app, kProgram);
  app.add_option("DIR", o.dir, "Directory to run in (a workspace is made and removed under it)")->required();
  app.add_option("--procs", o.procs, "Process counts, one level each (default 1,8)")
      ->delimiter(',')
      ->check(CLI::Range(1, kMaxProcesses));
  app.add_option("--seconds", o.seconds, "Seconds a level (default 5; --quick 1)")->check(walfs::cli::Positive());
  app.add_option("--size", o.size, "Bytes written into each file: a size with K or M (default 4K; 0: none)");
  app.add_option("--reps", o.reps, "Repetitions of every level; the table shows medians")
      ->check(CLI::Range(1, 100));
  app.add_flag("--quick", o.quick, "Short levels: 1 s each");
  app.add_option("--json", o.json_path, "Write the table as JSON (one object per row)");
  app.add_option("--csv", o.csv_path, "Write the table as CSV");
  if (auto code = walfs::cli::Parse(app, argc, argv)) return *code;
  if (o.quick && app.count("--seconds") == 0) o.seconds = 1;
  walfs::Result<std::uint64_t> bytes = walfs::cli::ParseSize(o.size);
  if (!bytes.ok()) return walfs::cli::UsageError(kProgram, "--size: " + std::string(bytes.status().message()), kExitUsage);
  if (*bytes > kMaxWriteBytes)
    return walfs::cli::UsageError(kProgram, fmt::format("--size: at most 64M, not {}", o.size), kExitUsage);
  if (std::error_code ec; !std::filesystem::is_directory(o.dir, ec)) {
    return walfs::cli::FileError(kProgram, o.dir, walfs::Status::FromErrno(ec ? ec.value() : ENOTDIR, o.dir));
  }
  // ^C ends the processes (they share the terminal's process group); the
  // parent waits for them and removes the workspace before it exits.
  std::signal(SIGINT, [](int) {});
  return Run(o, *bytes);
}
