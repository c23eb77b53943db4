// walfs-aim: an AIM7 / re-aim-7 "fserver" multi-user load generator for any
// directory.  Per load level, N users -- forked processes -- each run a
// shuffled list of the fserver mix's filesystem tests (workfile.h, tests_fs.h)
// in the DIRs given; re-aim's table follows: jobs per minute, per child, real
// and CPU time, and the job timing index (timing.h).  docs/aim.md describes
// the mix, every recipe and where walfs-aim departs from re-aim-7.
//
// Exit status: 0 success, 1 a DIR is unusable or a user failed (which test,
// errno and message are printed), 2 bad usage.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/aim/options.h"
#include "bench/aim/runner.h"
#include "bench/aim/timing.h"
#include "bench/aim/workfile.h"
#include "bench/aim/workspace.h"
#include "base/report.h"
#include "tools/cli.h"
#include "tools/progress.h"

namespace walfs::bench::aim {
namespace {

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;

// Everything the table shows for one load level, one entry per repetition.
struct Samples {
  std::vector<double> jpm, jpm_child, real, cpu, user, sys, std_dev, jti, max, min;
  std::int64_t blocks = 0;
};

void Accumulate(Samples* s, const LevelResult& r) {
  const Spread spread = ChildSpread(r.elapsed_s);
  s->jpm.push_back(JobsPerMinute(r.jobs_per_user, r.users, r.real_s));
  s->jpm_child.push_back(JobsPerMinutePerChild(r.jobs_per_user, r.real_s));
  s->real.push_back(r.real_s);
  s->cpu.push_back(r.user_s + r.sys_s);
  s->user.push_back(r.user_s);
  s->sys.push_back(r.sys_s);
  s->std_dev.push_back(spread.std_dev_s);
  s->jti.push_back(spread.jti);
  s->max.push_back(spread.max_s);
  s->min.push_back(spread.min_s);
  s->blocks = r.blocks;
}

void PrintFailures(const LevelResult& r) {
  for (const UserFailure& f : r.failures) {
    fmt::print(stderr, "walfs-aim: user {} of {} failed{}: {}{}\n", f.user + 1, r.users,
               f.test.empty() ? "" : " in " + f.test, f.message,
               f.err ? fmt::format(" (errno {})", f.err) : "");
  }
}

std::string DirList(const std::vector<std::string>& dirs) {
  std::string out;
  for (const auto& d : dirs) out += (out.empty() ? "" : ", ") + d;
  return out;
}

int Run(const Options& o) {
  InstallInterruptHandler();
  RunConfig config;
  config.mix = BuildMix(SelectTests(o.with_cpu), o.jobs);
  config.filesize_kib = o.filesize_kib;
  config.poolsize_kib = o.poolsize_kib;
  config.sync_calls = o.sync_calls;
  config.seed = o.seed;
  const std::vector<int> levels = o.LoadLevels();

  fmt::print("walfs-aim: fserver mix, {} ({} tests), {} jobs per user (-j {}), FILESIZE {}K + "
             "POOLSIZE {}K / users, {}, {} rep(s); dirs: {}\n",
             o.with_cpu ? "with CPU tests" : "filesystem tests only", config.mix.tests.size(),
             config.mix.jobs_per_user, o.jobs, o.filesize_kib, o.poolsize_kib,
             o.sync_calls ? "re-aim's syncs" : "no syncs (re-aim -y)", o.reps,
             DirList(o.dirs));
  std::fflush(stdout);

  Result<std::unique_ptr<Workspace>> ws = Workspace::Create(o.dirs);
  if (!ws.ok()) {
    fmt::print(stderr, "walfs-aim: unusable test directory: {}\n", ws.status().message());
    return kExitFailed;
  }
  fmt::print("walfs-aim: syncs (between levels{}) by {}\n", o.sync_calls ? " and in the jobs" : "",
             (*ws)->SyncMethods());
  std::fflush(stdout);

  std::map<int, Samples> samples;
  cli::ProgressLine line;  // '\r' only on a terminal (tools/progress.h)
  for (int rep = 0; rep < o.reps; ++rep) {
    for (std::size_t li = 0; li < levels.size(); ++li) {
      auto progress = [&](const Progress& p) {
        line.Show(fmt::format("rep {}/{}  level {}/{}: {} users", rep + 1, o.reps, li + 1, levels.size(), p.users),
                  fmt::format("{}/{} jobs, {} running, {:.1f} s", p.jobs_done, p.jobs_total, p.users_running,
                              p.seconds));
      };
      Result<LevelResult> r = RunLevel(config, **ws, levels[li], progress);
      line.Done();
      if (!r.ok()) {
        fmt::print(stderr, "walfs-aim: {} users: {}\n", levels[li], r.status().message());
        return kExitFailed;  // the workspace is removed on the way out
      }
      if (!r->failures.empty()) {
        PrintFailures(*r);
        return kExitFailed;
      }
      Accumulate(&samples[levels[li]], *r);
      fmt::print(stderr, "  {} users: {:.0f} jobs/min, {:.2f} s\n", levels[li],
                 samples[levels[li]].jpm.back(), r->real_s);
    }
  }

  Report report({"users", "jobs", "jobs_per_min", "jobs_per_min_child", "real_s", "cpu_s",
                 "user_s", "sys_s", "std_dev_s", "jti", "max_s", "min_s", "file_kib"});
  for (int users : levels) {
    const Samples& s = samples[users];
    report.AddRow({users, config.mix.jobs_per_user, Cell(Median(s.jpm), 2), Cell(Median(s.jpm_child), 2),
                   Cell(Median(s.real), 2), Cell(Median(s.cpu), 2), Cell(Median(s.user), 2),
                   Cell(Median(s.sys), 2), Cell(Median(s.std_dev), 3),
                   static_cast<std::int64_t>(Median(s.jti)), Cell(Median(s.max), 2),
                   Cell(Median(s.min), 2), s.blocks});
  }
  report.Print(stdout, o.reps > 1 ? "Medians over repetitions" : "");
  int rc = kExitOk;
  if (!o.json_path.empty()) {
    if (Status s = report.WriteJson(o.json_path); !s.ok())
      fmt::print(stderr, "walfs-aim: {}\n", s.ToString()), rc = kExitFailed;
  }
  if (!o.csv_path.empty()) {
    if (Status s = report.WriteCsv(o.csv_path); !s.ok())
      fmt::print(stderr, "walfs-aim: {}\n", s.ToString()), rc = kExitFailed;
  }
  if (Status s = (*ws)->Remove(); !s.ok()) {
    fmt::print(stderr, "walfs-aim: cleaning up: {}\n", s.message());
    rc = kExitFailed;
  }
  return rc;
}

}  // namespace
}  // namespace walfs::bench::aim

int main(int argc, char** argv) {
  using namespace walfs::bench::aim;
  walfs::Result<ParsedArgs> parsed = ParseArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.ok()) {
    return walfs::cli::UsageError("walfs-aim", parsed.status().message(), kExitUsage);
  }
  if (parsed->help) {
    fmt::print("{}", parsed->help_text);
    return kExitOk;
  }
  return Run(parsed->options);
}
