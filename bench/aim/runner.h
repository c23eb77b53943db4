// The runner: one load level of the multi-user run.  It forks one child per
// user (user_process.h), starts them together, collects their messages while
// they run, reaps them with wait4() for their CPU time, and reports re-aim's
// raw numbers for the level: real time, the children's user and system time,
// and each child's elapsed time.  timing.h turns those into jobs/min and JTI.
//
//   InstallInterruptHandler();                        // once, in main()
//   RunConfig c{.mix = BuildMix(SelectTests(false), 100)};
//   Result<LevelResult> r = RunLevel(c, *workspace, /*users=*/8, progress);
//
// The parent is single-threaded while it forks (no locks can be held across
// fork()).  A failing user does not stop the others; the level then reports
// every failure (user, test, errno, message) and the caller decides.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench/aim/workfile.h"
#include "bench/aim/workspace.h"

namespace walfs::bench::aim {

struct RunConfig {
  Mix mix;
  std::int64_t filesize_kib = 10;    // FILESIZE
  std::int64_t poolsize_kib = 1024;  // POOLSIZE
  bool sync_calls = false;           // --sync: re-aim's DO_SYNC() (FsEnv::syncer)
  std::uint64_t seed = 1;
};

// disk_iteration_count at `users` users: FILESIZE + POOLSIZE / users, in KiB
// (integer division, as re-aim: "we truncate instead of round").
std::int64_t BlocksPerFile(const RunConfig& c, int users);

struct UserFailure {
  int user = 0;
  std::string test;  // empty if the child died outside a test
  int err = 0;
  std::string message;
};

struct LevelResult {
  int users = 0;
  int jobs_per_user = 0;
  std::int64_t blocks = 0;
  double real_s = 0;               // start to the last child reaped
  double user_s = 0, sys_s = 0;    // children's rusage
  std::vector<double> elapsed_s;   // per child, start to its last job
  std::vector<UserFailure> failures;
};

// Called about four times a second while the level runs.
struct Progress {
  int users = 0;
  std::int64_t jobs_done = 0;
  std::int64_t jobs_total = 0;
  int users_running = 0;
  double seconds = 0;
};
using ProgressFn = std::function<void(const Progress&)>;

// Runs `users` users over `ws`.  An error Status means the level could not
// run (fork or pipe failed, or the run was interrupted); users that failed
// are in LevelResult::failures.
Result<LevelResult> RunLevel(const RunConfig& c, Workspace& ws, int users, const ProgressFn& progress);

// SIGINT/SIGTERM set a flag instead of killing walfs-aim, so that RunLevel
// can stop its children and the workspace can be removed.
void InstallInterruptHandler();
bool Interrupted();

}  // namespace walfs::bench::aim
