// The grant-head contention workload: N threads running rolling transactions
// against an in-process LogSpace with a small log, and a simulated tail mover.
// No disk, no filesystem: it isolates log-space reservation and its wakeups.
//
// Each worker loops: Reserve a permanent ticket (unit U, count `cnt`), then
// for each of `steps` steps: hold it for `work_ns` of CPU work, consume
// `use_fraction` of U, and commit (TicketRegrant + Regrant between steps,
// TicketUngrant at the end).  One committed step is one transaction.
//
// The tail mover stands in for the CIL and the AIL: every `tick_us` it hands
// the bytes written since its last tick to the AIL (ReturnSpace), and moves
// the tail past everything written at least `writeback_us` ago (MoveTail).
#pragma once

#include <cstdint>

#include "journal/log_space.h"

namespace walfs::bench {

struct WorkloadConfig {
  int threads = 1;
  journal::WakeMode mode = journal::WakeMode::kWakeQueue;
  journal::HeadLockKind lock = journal::HeadLockKind::kMutex;
  std::int32_t unit_bytes = 0;
  std::int64_t log_bytes = 0;
  std::int64_t min_log_bytes = 0;
  std::int32_t cnt = 2;
  int steps = 2;
  std::int64_t work_ns = 2000;
  double use_fraction = 0.5;
  std::int64_t writeback_us = 200;
  std::int64_t tick_us = 50;
  std::int64_t duration_ms = 1000;
};

struct CellResult {
  double seconds = 0;
  std::uint64_t transactions = 0;
  double tx_per_s = 0;
  double reserve_p50_us = 0;   // Reserve + Regrant call latency
  double reserve_p99_us = 0;
  double cpu_us_per_tx = 0;
  std::uint64_t tail_pushes = 0;
  bool leak_free = false;      // both grant heads at zero after quiesce
  journal::LogSpaceStats stats;  // counters of both heads, summed below
};

// Runs one cell of the benchmark.  Fails only on a bad configuration.
Result<CellResult> RunWorkload(const WorkloadConfig& config);

}  // namespace walfs::bench
