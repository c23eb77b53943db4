// Child processes for walfs-killtest: programs started in their own process
// group with their output appended to a log file, waited for with a
// deadline, and killed as a group.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace walfs::bench::killtest {

struct SpawnOptions {
  std::string log_path;               // stdout and stderr are appended here
  std::vector<std::string> env;       // extra "NAME=value" entries
  bool own_group = true;              // setpgid(0, 0): KillGroup reaches its children
  bool term_with_parent = true;       // PR_SET_PDEATHSIG SIGTERM (the daemon unmounts)
};

// Options that only name the log.
inline SpawnOptions LogTo(std::string path) {
  SpawnOptions o;
  o.log_path = std::move(path);
  return o;
}

// fork + execv(argv[0]) (execvp when argv[0] has no slash).
Result<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options);

// waitpid with a deadline: the wait status, or nullopt if `pid` still runs.
std::optional<int> WaitFor(pid_t pid, std::chrono::milliseconds timeout);

// SIGKILL to the group `pid` leads, then waits for `pid` itself.
void KillGroupAndReap(pid_t pid);

// "exit status 3", "killed by Killed".
std::string DescribeStatus(int status);

// Runs a command to completion; its exit status (or -1) and output.
struct RunResult {
  int exit_code = -1;
  std::string output;
};
RunResult Run(const std::vector<std::string>& argv);

std::string Slurp(const std::string& path, std::size_t from = 0);

}  // namespace walfs::bench::killtest
