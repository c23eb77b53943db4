// The LTTng table: the writer's cost of one event in walfs's tracer and in
// LTTng-UST, on the same loop, in the same trace_bench run.
//
// What it isolates: the commit path with a consumer attached.  Per thread,
// `iterations` getuid_enter/getuid_exit pairs (two 64-bit fields each) in a
// tight loop, no syscall; ns_per_event is the loop's wall time over its
// events, the mean over threads.
//   walfs      deferred wakeup (2000 us), buffer_percent 50, recursion safe,
//              overwrite on, a Drainer thread reading meanwhile — the
//              defaults, with a per-thread ring that holds the whole cell
//   walfs, read after   the same with no reader until the threads are
//              joined: the writer's own cost, without a reader competing
//              for the CPUs
//   lttng-ust  trace_bench_lttng (a separate program with the walfs_bench
//              provider of lttng_tp.h), under a session that run_lttng.sh
//              sets up: per-UID buffers of num_subbuf x subbuf_size per CPU
//              (sized to hold the whole cell too), consumerd writing the
//              trace to a temporary directory
// Neither side is measured on its discard path: both buffers hold the
// whole run, and the losses each side reports are shown.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "tracing/options.h"

namespace walfs::bench {

struct EmitConfig {
  int threads = 1;
  bool reader = true;  // walfs: drain while the threads run (else after)
  tracing::ClockKind clock = tracing::DefaultClockKind();  // walfs only
  std::uint64_t iterations = 400'000;  // event pairs per thread
  std::uint64_t warmup = 1000;
};

struct EmitResult {
  bool ran = false;
  std::string note;  // why it did not run, or what to know about the numbers
  double ns_per_event = 0;
  std::uint64_t events = 0;  // emitted, warm-up included
  std::uint64_t lost = 0;    // walfs: overruns + drops + misses; LTTng: discarded events
  std::uint64_t lost_packets = 0;  // LTTng only: whole sub-buffers lost
};

Result<EmitResult> RunWalfsEmitCell(const EmitConfig& config);

struct LttngSetup {
  std::string script;       // run_lttng.sh
  std::string emitter;      // trace_bench_lttng
  std::string unavailable;  // why LTTng cannot run at all (e.g. not built), or empty
  std::uint64_t subbuf_mb = 8;  // per-CPU channel: num_subbuf x subbuf_mb
  std::uint64_t num_subbuf = 8;
};

// Drives LTTng through run_lttng.sh: starts a session daemon if none runs
// (and stops that one, by pid, when destroyed), one session per cell.
class LttngRunner {
 public:
  explicit LttngRunner(LttngSetup setup) : setup_(std::move(setup)) {}
  LttngRunner(const LttngRunner&) = delete;
  LttngRunner& operator=(const LttngRunner&) = delete;
  ~LttngRunner();

  // Ensures a session daemon; false (see reason()) when LTTng cannot record.
  bool Setup();
  // One cell; ran == false and note = "skipped: <reason>" when it could not run.
  EmitResult Run(const EmitConfig& config);
  const std::string& reason() const { return reason_; }

 private:
  const LttngSetup setup_;
  std::string reason_;
  long started_pid_ = 0;  // the sessiond Setup() started, if any
};

}  // namespace walfs::bench
