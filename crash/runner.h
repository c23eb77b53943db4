// RunCrashTest: one workload, one seed -- run it, plan its crash states,
// check each one (stopping at the first that fails), and say what was done.
//
//   RunResult r = RunCrashTest({.workload = WorkloadKind::kShort, .seed = 7});
//   if (!r.ok()) fmt::print("{}\n", r.failure);
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace walfs::crash {

enum class WorkloadKind : std::uint8_t { kRandom, kShort };
std::string_view WorkloadName(WorkloadKind k);
std::optional<WorkloadKind> ParseWorkload(std::string_view name);

struct RunOptions {
  WorkloadKind workload = WorkloadKind::kRandom;
  std::uint64_t seed = 1;
  int ops = 400;     // the random workload's length
  int samples = 40;  // reordered states per run (random); short runs take a quarter
  // RandomWorkloadOptions
  bool forget_linked = true;
  bool low_lsn = false;
  bool preallocate = false;
  // Mount with -o discard: every crash state must still hold every fsynced
  // file, so no discard may have hit a block a recovered file owns.
  bool discard = false;
};

struct RunResult {
  WorkloadKind workload = WorkloadKind::kRandom;
  std::uint64_t seed = 0;
  std::string sequence;  // the short workload's, else empty
  std::size_t ops = 0;         // operations the workload ran
  std::size_t device_ops = 0;  // recorded writes and flushes
  std::size_t flushes = 0;
  std::size_t crash_states = 0;  // checked: prefix + torn + reordered
  std::size_t torn = 0, reordered = 0;
  std::size_t failures = 0;  // crash states that failed (checking stops at the first), or 1 if the workload did
  std::string failure;       // the first failure in full: the state, what is wrong, the operations up to it
  std::string first_error;   // its first line of what is wrong
  double seconds = 0;      // wall clock
  double cpu_seconds = 0;  // the process's CPU time (all its threads): steadier on a busy machine

  bool ok() const { return failures == 0; }
};

RunResult RunCrashTest(const RunOptions& options);

}  // namespace walfs::crash
