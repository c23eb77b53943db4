// trace_bench: the embedded tracer's costs, each variant side by side in one
// run, four tables (each isolates one thing; see the header it names):
//
//   getuid     reader wakeups: off / noreader / immediate / deferred /
//              deferred+wm (getuid_load.h; ftrace "Schedule a delayed work to
//              call wakeup()")
//   reader     what reading costs per record, and whether the reader keeps
//              up: text / entries / raw readers (drainer.h) on the getuid
//              load at the tracer's default options
//   recursion  recursion protection under a signal storm: safe / fast /
//              context (signal_storm.h; ftrace "function tracer with irqs
//              disabled")
//   lttng      ns per event, walfs vs LTTng-UST (lttng_compare.h)
//
// --json writes one array of objects, one per row, keyed by the column
// names plus "table"; "-" (not measured) becomes null.  --csv writes one
// file with the union of the tables' columns.
//
// Every cell runs --reps times; within a repetition all cells of a table run
// in turn, so machine noise spreads over the variants.  Tables show medians
// and ratios against a baseline measured in the same run.  Timings are never
// judged; the exit status is non-zero only for a failed cell or a broken
// count invariant (events neither read nor counted lost).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/report.h"
#include "bench/trace/tables.h"
#include "tracing/tracer.h"
#include "tools/cli.h"

namespace walfs::bench {
namespace {

Status WriteJson(const std::vector<Table>& tables, const std::string& path) {
  nlohmann::json rows = nlohmann::json::array();
  for (const Table& t : tables) {
    for (const auto& row : t.report.rows()) {
      nlohmann::json obj = {{"table", t.name}};
      for (std::size_t c = 0; c < row.size(); ++c) {
        nlohmann::json& field = obj[t.report.columns()[c]];
        std::visit([&](const auto& v) { field = v; }, row[c].value);
        if (field == "-") field = nullptr;  // not measured in this row
      }
      rows.push_back(std::move(obj));
    }
  }
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return Status::FromErrno(errno, "open " + path);
  fmt::print(f, "{}\n", rows.dump(2));
  if (std::fclose(f) != 0) return Status::IoError("write " + path);
  return Status::Ok();
}

// One CSV for all tables: a "table" column, then the union of the tables'
// columns; a row leaves the columns of other tables empty.
Status WriteCsv(const std::vector<Table>& tables, const std::string& path) {
  std::vector<std::string> columns{"table"};
  for (const Table& t : tables)
    for (const std::string& c : t.report.columns())
      if (std::find(columns.begin(), columns.end(), c) == columns.end()) columns.push_back(c);
  Report all(columns);
  for (const Table& t : tables) {
    for (const auto& row : t.report.rows()) {
      std::vector<Cell> cells(columns.size(), Cell(""));
      cells[0] = t.name;
      for (std::size_t c = 0; c < row.size(); ++c) {
        const auto at = std::find(columns.begin(), columns.end(), t.report.columns()[c]);
        cells[static_cast<std::size_t>(at - columns.begin())] = row[c];
      }
      all.AddRow(std::move(cells));
    }
  }
  return all.WriteCsv(path);
}

int Run(const BenchOptions& o) {
  fmt::print("trace_bench: {} CPUs, membarrier {}, trace clock {}, {} reps per cell\n",
             sysconf(_SC_NPROCESSORS_ONLN),
             tracing::Tracer::Get().Stats().membarrier ? "yes" : "no",
             tracing::ClockKindName(o.getuid.clock), o.reps);
  std::vector<Table> tables;
  auto want = [&](const char* name) {
    return std::find(o.tables.begin(), o.tables.end(), name) != o.tables.end();
  };
  using TableFn = Result<Table> (*)(const BenchOptions&);
  const std::tuple<const char*, TableFn, std::string> all[] = {
      {"getuid", GetuidTable,
       fmt::format("getuid: {} calls per thread, reader draining with Read(4096, -1); delay {} "
                   "us, watermark {}%, {} KiB per-thread ring, overwrite on. vs_off = "
                   "ns_per_call / off's at the same threads",
                   o.getuid.calls, o.getuid.wakeup_delay_us, o.getuid.watermark_percent,
                   o.getuid.buffer_kb)},
      {"reader", ReaderTable,
       fmt::format("reader: {} getuid calls per thread, tracer defaults (256 KiB rings, deferred "
                   "wakeup, 50% watermark); reader_cpu_ns_per_record = the reader thread's CPU "
                   "time / records read",
                   o.reader_calls)},
      {"recursion", RecursionTable,
       fmt::format("recursion: {} event pairs per thread, overwrite off, read after; quiet: no "
                   "signals; storm: {}. vs_fast = ns_per_event / fast's",
                   o.storm.iterations,
                   o.storm.interval_us > 0
                       ? fmt::format("a timer signal every {} us per thread", o.storm.interval_us)
                       : std::string("off (--storm-interval-us 0)"))},
      {"lttng", LttngTable,
       fmt::format("lttng: {} event pairs per thread, no syscall; vs_lttng = walfs ns_per_event "
                   "/ LTTng-UST's at the same threads",
                   o.emit.iterations)},
  };
  bool counts_ok = true;
  for (const auto& [name, fn, title] : all) {
    if (!want(name)) continue;
    Result<Table> t = fn(o);
    if (isatty(STDERR_FILENO) == 1) fmt::print(stderr, "\n");  // below the progress line
    if (!t.ok()) return fmt::print(stderr, "trace_bench: {}: {}\n", name, t.status().ToString()), 1;
    t->report.Print(stdout, title);
    for (const std::string& n : t->notes) fmt::print("  note: {}\n", n);
    counts_ok = counts_ok && t->counts_ok;
    tables.push_back(std::move(*t));
  }
  fmt::print("count check (every event read or counted lost): {}\n",
             counts_ok ? "passed" : "FAILED");
  if (!o.json_path.empty()) {
    if (Status s = WriteJson(tables, o.json_path); !s.ok())
      return fmt::print(stderr, "trace_bench: {}\n", s.ToString()), 1;
  }
  if (!o.csv_path.empty()) {
    if (Status s = WriteCsv(tables, o.csv_path); !s.ok())
      return fmt::print(stderr, "trace_bench: {}\n", s.ToString()), 1;
  }
  return counts_ok ? 0 : 1;
}

// trace_bench_lttng and its session script sit next to trace_bench.
std::string BesideSelf(const char* name) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(name) : (self.parent_path() / name).string();
}

}  // namespace
}  // namespace walfs::bench

int main(int argc, char** argv) {
  walfs::bench::BenchOptions o;
  o.lttng.script = walfs::bench::BesideSelf("trace_bench_run_lttng.sh");
  o.lttng.emitter = walfs::bench::BesideSelf("trace_bench_lttng");
#ifdef WALFS_TRACE_BENCH_NO_LTTNG
  o.lttng.unavailable = WALFS_TRACE_BENCH_NO_LTTNG;
#endif
  CLI::App app{"The tracer's costs side by side: reader wakeups (getuid), recursion protection "
               "under a signal storm, and walfs vs LTTng-UST ns per event.",
               "trace_bench"};
  walfs::cli::AddVersion(app, "trace_bench");
  app.add_option("--tables", o.tables, "Tables to run: getuid,reader,recursion,lttng")
      ->delimiter(',')
      ->check(CLI::IsMember({"getuid", "reader", "recursion", "lttng"}));
  app.add_option("--reps", o.reps, "Repetitions of every cell (medians)")
      ->check(CLI::Range(1, 100));
  app.add_flag("--quick", o.quick,
               "Short run: getuid at 1,2,5 threads x 50,000 calls, 100,000 storm and 200,000 "
               "LTTng-table iterations");
  app.add_option("--json", o.json_path, "Write every table's rows as one JSON array");
  app.add_option("--csv", o.csv_path, "Write every table's rows as one CSV");
  app.add_option("--threads", o.threads, "getuid: thread counts")->delimiter(',')->check(walfs::cli::AtLeast(1));
  app.add_option("--modes", o.modes, "getuid: off,noreader,immediate,deferred,deferred+wm")
      ->delimiter(',');
  app.add_option("--calls", o.getuid.calls, "getuid: measured calls per thread")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
  app.add_option("--wakeup-delay-us", o.getuid.wakeup_delay_us, "getuid: deferred wakeup delay")
      ->check(CLI::Range(0, 10'000'000));
  app.add_option("--watermark", o.getuid.watermark_percent,
                 "getuid: buffer_percent of deferred+wm")
      ->check(CLI::Range(1, 100));
  app.add_option("--buffer-kb", o.getuid.buffer_kb, "getuid: per-thread ring size")
      ->check(CLI::Range(4, 1 << 20));
  app.add_option("--reader-threads", o.reader_threads, "reader: thread counts")
      ->delimiter(',')
      ->check(walfs::cli::AtLeast(1));
  app.add_option("--readers", o.readers, "reader: text,entries,raw")
      ->delimiter(',')
      ->check(CLI::IsMember({"text", "entries", "raw"}));
  app.add_option("--reader-calls", o.reader_calls, "reader: measured calls per thread")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
  app.add_option("--storm-threads", o.storm_threads, "recursion: thread counts")->delimiter(',')->check(walfs::cli::AtLeast(1));
  app.add_option("--recursion", o.recursion, "recursion: safe,fast,context")->delimiter(',');
  app.add_option("--storm-iterations", o.storm.iterations,
                 "recursion: event pairs per thread (rings are sized to hold them all)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 22));
  app.add_option("--storm-interval-us", o.storm.interval_us,
                 "recursion: timer period per thread (0: no signals)")
      ->check(CLI::Range(0, 1'000'000));
  app.add_option("--lttng-threads", o.lttng_threads, "lttng: thread counts")->delimiter(',')->check(walfs::cli::AtLeast(1));
  app.add_option("--emit-iterations", o.emit.iterations, "lttng: event pairs per thread")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 22));
  app.add_flag("--no-lttng", o.no_lttng, "lttng: walfs rows only, LTTng-UST row skipped");
  app.add_option("--lttng-subbuf-mb", o.lttng.subbuf_mb, "lttng: sub-buffer size per CPU (MiB)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--lttng-num-subbuf", o.lttng.num_subbuf, "lttng: sub-buffers per CPU")
      ->check(CLI::Range(2, 1024));
  app.add_option("--lttng-script", o.lttng.script, "lttng: session script (run_lttng.sh)");
  app.add_option("--lttng-emitter", o.lttng.emitter, "lttng: the trace_bench_lttng program");
  std::string clock(walfs::tracing::ClockKindName(walfs::tracing::DefaultClockKind()));
  app.add_option("--clock", clock, "Trace clock of every walfs cell: mono (vDSO clock_gettime) "
                                   "or tsc (RDTSC, scaled)");
  if (auto code = walfs::cli::Parse(app, argc, argv)) return *code;
  if (auto c = walfs::tracing::ParseClockKind(clock); c.ok()) {
    o.getuid.clock = o.storm.clock = o.emit.clock = *c;
  } else {
    return walfs::cli::UsageError("trace_bench", fmt::format("--clock: {}", c.status().message()));
  }
  if (o.quick) {
    if (app.count("--threads") == 0) o.threads = {1, 2, 5};
    if (app.count("--calls") == 0) o.getuid.calls = 50'000;
    if (app.count("--reader-calls") == 0) o.reader_calls = 200'000;
    if (app.count("--storm-iterations") == 0) o.storm.iterations = 100'000;
    if (app.count("--emit-iterations") == 0) o.emit.iterations = 200'000;
  }
  return walfs::bench::Run(o);
}
