// trace_bench_lttng: the LTTng-UST half of trace_bench's LTTng table, a
// separate program so that trace_bench itself never loads liblttng-ust (its
// constructor registers with a session daemon and starts listener threads).
//
//   trace_bench_lttng THREADS ITERATIONS WARMUP
//
// Runs the loop trace_bench runs for walfs — per thread, WARMUP untimed then
// ITERATIONS timed getuid_enter/getuid_exit pairs, no syscall — and prints
//   ns_per_event=<mean over threads of loop wall time / events> events=<n>
// or, exit status 3, "skipped: <reason>" when the tracepoints are not enabled
// (no session daemon, or no session with walfs_bench:* enabled).
// bench/trace/run_lttng.sh sets the session up around it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <vector>

#include "bench/trace/lttng_tp.h"
#include "bench/trace/start_gate.h"

namespace {

std::int64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s THREADS ITERATIONS WARMUP\n", argv[0]);
    return 2;
  }
  const int threads = std::atoi(argv[1]);
  const std::uint64_t iterations = std::strtoull(argv[2], nullptr, 10);
  const std::uint64_t warmup = std::strtoull(argv[3], nullptr, 10);
  if (threads < 1 || iterations < 1) {
    std::fprintf(stderr, "%s: THREADS and ITERATIONS must be positive\n", argv[0]);
    return 2;
  }
  // liblttng-ust's constructor has registered with the session daemon (or
  // timed out): the enable state is known now.
  if (!tracepoint_enabled(walfs_bench, getuid_enter) ||
      !tracepoint_enabled(walfs_bench, getuid_exit)) {
    std::printf("skipped: walfs_bench tracepoints not enabled in the emitter (it did not "
                "register with a session daemon that has walfs_bench:* enabled)\n");
    return 3;
  }

  walfs::bench::StartGate gate(threads);
  std::vector<std::int64_t> elapsed(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const auto thread = static_cast<std::uint64_t>(t);
      for (std::uint64_t i = 0; i < warmup; ++i) {
        tracepoint(walfs_bench, getuid_enter, i, thread);
        tracepoint(walfs_bench, getuid_exit, i, thread);
      }
      gate.ArriveAndWait();
      const std::int64_t t0 = Now();
      for (std::uint64_t i = 0; i < iterations; ++i) {
        tracepoint(walfs_bench, getuid_enter, i, thread);
        tracepoint(walfs_bench, getuid_exit, i, thread);
      }
      elapsed[t] = Now() - t0;
    });
  }
  gate.WaitArrived();
  gate.Open();
  for (auto& w : workers) w.join();

  double sum = 0;
  for (std::int64_t e : elapsed) sum += static_cast<double>(e);
  std::printf("ns_per_event=%.3f events=%llu\n",
              sum / threads / (2.0 * static_cast<double>(iterations)),
              static_cast<unsigned long long>(2 * (iterations + warmup) * threads));
  return 0;
}
