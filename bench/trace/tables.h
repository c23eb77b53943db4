// The four tables of trace_bench: each runs its cells --reps times,
// interleaved, and turns the medians into a Report.  What each isolates is in
// the header of its workload: getuid_load.h (getuid, reader), drainer.h, signal_storm.h, lttng_compare.h.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "base/report.h"
#include "bench/trace/getuid_load.h"
#include "bench/trace/lttng_compare.h"
#include "bench/trace/signal_storm.h"

namespace walfs::bench {

// Everything the command line sets.
struct BenchOptions {
  std::vector<std::string> tables{"getuid", "reader", "recursion", "lttng"};
  int reps = 3;
  bool quick = false;
  std::string json_path, csv_path;
  // getuid
  std::vector<int> threads{1, 2, 3, 4, 5, 8, 16};
  std::vector<std::string> modes{"off", "noreader", "immediate", "deferred", "deferred+wm"};
  GetuidConfig getuid;
  // reader: the getuid load at the tracer's default options (ring size,
  // deferred wakeup with the watermark), one row per thread count and reader
  std::vector<int> reader_threads{1, 2};
  std::vector<std::string> readers{"text", "entries", "raw"};
  std::uint64_t reader_calls = 1'000'000;
  // recursion
  std::vector<int> storm_threads{2, 4};
  std::vector<std::string> recursion{"safe", "fast", "context"};
  StormConfig storm;
  // lttng
  std::vector<int> lttng_threads{1, 4};
  EmitConfig emit;
  bool no_lttng = false;
  LttngSetup lttng;
};

// A table's rows plus what the run found wrong with its counts.
struct Table {
  std::string name;
  Report report;
  std::vector<std::string> notes;
  bool counts_ok = true;
};

Result<Table> GetuidTable(const BenchOptions& o);
// What reading costs the reader, per record, and whether it keeps up: the
// getuid load with a text, an entries and a raw (binary) drainer side by
// side (drainer.h), the tracer at its defaults.
Result<Table> ReaderTable(const BenchOptions& o);
Result<Table> RecursionTable(const BenchOptions& o);
Result<Table> LttngTable(const BenchOptions& o);

}  // namespace walfs::bench
