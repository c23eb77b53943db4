#include "bench/trace/lttng_compare.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "base/clock.h"
#include "bench/trace/bench_events.h"
#include "bench/trace/drainer.h"
#include "bench/trace/start_gate.h"
#include "tracing/tracer.h"

namespace walfs::bench {

namespace {

using tracing::Tracer;
using tracing::TracerOptions;

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct CommandResult {
  int status = -1;     // exit status, or -1 if it did not exit normally
  std::string output;  // stdout and stderr
};

CommandResult RunCommand(const std::vector<std::string>& argv) {
  std::string cmd;
  for (const std::string& a : argv) cmd += ShellQuote(a) + " ";
  cmd += "2>&1";
  CommandResult r;
  std::FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    r.output = "popen failed";
    return r;
  }
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) r.output.append(buf, n);
  const int st = pclose(p);
  r.status = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// The last line of `out` that starts with `prefix`, without it; empty if none.
std::string LineAfter(const std::string& out, const std::string& prefix) {
  std::istringstream in(out);
  std::string found;
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) found = line.substr(prefix.size());
  return found;
}

std::map<std::string, std::string> KeyValues(const std::string& line) {
  std::map<std::string, std::string> kv;
  std::istringstream in(line);
  for (std::string word; in >> word;)
    if (auto eq = word.find('='); eq != std::string::npos)
      kv[word.substr(0, eq)] = word.substr(eq + 1);
  return kv;
}

std::string LastLine(const std::string& out) {
  std::istringstream in(out);
  std::string last;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) last = line;
  return last;
}

}  // namespace

Result<EmitResult> RunWalfsEmitCell(const EmitConfig& c) {
  Tracer& tracer = Tracer::Get();
  tracer.ResetForTesting();
  TracerOptions o;  // the defaults: deferred 2000 us, buffer_percent 50, safe, overwrite
  o.clock = c.clock;
  const std::uint64_t per_thread = 2 * (c.iterations + c.warmup);
  o.buffer_size_kb = static_cast<std::uint32_t>(
      std::max<std::uint64_t>(o.buffer_size_kb, per_thread * sizeof(tracing::Record) / 1024 + 1));
  WALFS_RETURN_IF_ERROR(tracer.SetOptions(o));
  WALFS_RETURN_IF_ERROR(EnableBenchEvents(true));

  std::optional<Drainer> drainer;
  if (c.reader) drainer.emplace();
  StartGate gate(c.threads);
  std::vector<std::int64_t> elapsed(c.threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < c.threads; ++t) {
    workers.emplace_back([&, t] {
      const auto thread = static_cast<std::uint64_t>(t);
      for (std::uint64_t i = 0; i < c.warmup; ++i) {
        WALFS_TRACE(kGetuidEnter, i, thread);
        WALFS_TRACE(kGetuidExit, i, thread);
      }
      gate.ArriveAndWait();
      const std::int64_t t0 = MonotonicNanos();
      for (std::uint64_t i = 0; i < c.iterations; ++i) {
        WALFS_TRACE(kGetuidEnter, i, thread);
        WALFS_TRACE(kGetuidExit, i, thread);
      }
      elapsed[t] = MonotonicNanos() - t0;
    });
  }
  gate.WaitArrived();
  gate.Open();
  for (auto& w : workers) w.join();
  const DrainCounts d = drainer ? drainer->Stop() : DrainNow();
  const tracing::TracerStats s = tracer.Stats();

  EmitResult r;
  r.ran = true;
  double sum = 0;
  for (std::int64_t e : elapsed) sum += static_cast<double>(e);
  r.ns_per_event = sum / c.threads / (2.0 * static_cast<double>(c.iterations));
  r.events = per_thread * c.threads;
  r.lost = s.totals.overruns + s.totals.drops + s.totals.recursion_misses + s.lost_unattached;
  const std::uint64_t read = d.Count(kGetuidEnter.id()) + d.Count(kGetuidExit.id());
  if (read + r.lost != r.events)
    r.note = fmt::format("read {} + lost {} != emitted {}", read, r.lost, r.events);
  return r;
}

LttngRunner::~LttngRunner() {
  if (started_pid_ > 0) RunCommand({"bash", setup_.script, "stop", std::to_string(started_pid_)});
}

bool LttngRunner::Setup() {
  if (!setup_.unavailable.empty()) {
    reason_ = setup_.unavailable;
    return false;
  }
  const CommandResult r = RunCommand({"bash", setup_.script, "start"});
  if (std::string skipped = LineAfter(r.output, "skipped: "); !skipped.empty()) {
    reason_ = skipped;
    return false;
  }
  if (r.status != 0) {
    reason_ = fmt::format("{} start exited with status {}: {}", setup_.script, r.status,
                          LastLine(r.output));
    return false;
  }
  const auto kv = KeyValues(LineAfter(r.output, "sessiond="));
  if (auto it = kv.find("pid"); it != kv.end()) started_pid_ = std::atol(it->second.c_str());
  return true;
}

EmitResult LttngRunner::Run(const EmitConfig& c) {
  EmitResult e;
  if (!reason_.empty()) {
    e.note = "skipped: " + reason_;
    return e;
  }
  const CommandResult r = RunCommand(
      {"bash", setup_.script, "run", setup_.emitter, std::to_string(c.threads),
       std::to_string(c.iterations), std::to_string(c.warmup),
       std::to_string(setup_.subbuf_mb) + "M", std::to_string(setup_.num_subbuf)});
  if (std::string skipped = LineAfter(r.output, "skipped: "); !skipped.empty()) {
    e.note = "skipped: " + skipped;
    return e;
  }
  const auto kv = KeyValues(LineAfter(r.output, "result "));
  if (r.status != 0 || !kv.contains("ns_per_event")) {
    e.note = fmt::format("skipped: run_lttng.sh exited with status {}: {}", r.status,
                         LastLine(r.output));
    return e;
  }
  auto num = [&](const char* key) {
    auto it = kv.find(key);
    return it == kv.end() ? std::uint64_t{0} : std::strtoull(it->second.c_str(), nullptr, 10);
  };
  e.ran = true;
  e.ns_per_event = std::strtod(kv.at("ns_per_event").c_str(), nullptr);
  e.events = num("events");
  e.lost = num("discarded");
  e.lost_packets = num("lost_packets");
  if (num("trace_bytes") == 0) e.note = "the trace directory was empty";
  return e;
}

}  // namespace walfs::bench
