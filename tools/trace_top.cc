#include "tools/trace_top.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "base/report.h"
#include "tools/cli.h"
#include "tools/log_bar.h"

namespace walfs::tracing {

namespace {

namespace fs = std::filesystem;

std::atomic<bool> stop_requested{false};
void OnTopStopSignal(int) { stop_requested.store(true); }

// The `key value` lines of a stats text, up to the tracer's section.
using StatsMap = std::map<std::string, std::string, std::less<>>;
StatsMap ParseStats(const std::string& text) {
  StatsMap out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("tracer:")) break;
    const std::size_t sp = line.find(' ');
    if (sp == std::string::npos || line.empty() || line[0] == ' ') continue;
    out.emplace(line.substr(0, sp), line.substr(sp + 1));
  }
  return out;
}

double Num(const StatsMap& s, std::string_view key) {
  auto it = s.find(key);
  if (it == s.end()) return 0;
  try {
    return std::stod(it->second);
  } catch (...) {
    return 0;
  }
}

std::string Str(const StatsMap& s, std::string_view key) {
  auto it = s.find(key);
  return it == s.end() ? "-" : it->second;
}

// One FUSE exit record of the interval, from a text line of `trace`.
struct Exit {
  std::string op;
  std::string caller;  // comm-pid
  std::uint64_t latency_ns = 0;
};

// The fs_<op>_exit records of `trace` after `*last_ts` (seconds as printed);
// moves *last_ts to the newest.  Lines:
//   "      comm-pid   [cpu] secs.micros: fs_write_exit: ino=.. err=.. latency_ns=N worker=.."
std::vector<Exit> NewExits(const std::string& trace, double* last_ts) {
  std::vector<Exit> out;
  double newest = *last_ts;
  std::istringstream in(trace);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t bracket = line.find(" [");
    const std::size_t close = line.find("] ", bracket == std::string::npos ? 0 : bracket);
    const std::size_t colon = line.find(": ", close == std::string::npos ? 0 : close);
    if (bracket == std::string::npos || close == std::string::npos || colon == std::string::npos) continue;
    double ts = 0;
    try {
      ts = std::stod(line.substr(close + 2, colon - close - 2));
    } catch (...) {
      continue;
    }
    if (ts <= *last_ts) continue;
    newest = std::max(newest, ts);
    const std::size_t ev_end = line.find(':', colon + 2);
    if (ev_end == std::string::npos) continue;
    const std::string event = line.substr(colon + 2, ev_end - colon - 2);
    if (!event.starts_with("fs_") || !event.ends_with("_exit")) continue;
    const std::size_t lat = line.find(" latency_ns=", ev_end);
    if (lat == std::string::npos) continue;
    Exit e;
    e.op = event.substr(3, event.size() - 8);
    std::size_t task_begin = line.find_first_not_of(' ');
    e.caller = line.substr(task_begin, bracket - task_begin);
    while (!e.caller.empty() && e.caller.back() == ' ') e.caller.pop_back();
    e.latency_ns = std::strtoull(line.c_str() + lat + 12, nullptr, 10);
    out.push_back(std::move(e));
  }
  *last_ts = newest;
  return out;
}

// "<...>-PID" (the trace's record naming that caller was overwritten, or
// came before the snapshot): named from /proc while the process lives.
std::string NamedCaller(const std::string& caller) {
  if (!caller.starts_with("<...>-")) return caller;
  std::string comm = cli::ReadSmallFile(fs::path("/proc") / caller.substr(6) / "comm");
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm.empty() ? caller : comm + caller.substr(5);
}

std::string Table(const Report& r) {
  // Report prints to a FILE*; a frame is built whole, then written once.
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* mem = open_memstream(&buf, &len);
  if (mem == nullptr) return {};
  r.Print(mem);
  std::fclose(mem);
  std::string out(buf, len);
  std::free(buf);
  return out;
}

std::string Frame(const TopOptions& o, const StatsMap& a, const StatsMap& b, double dt, bool traced,
                  const std::vector<Exit>& exits) {
  auto rate = [&](std::string_view key) { return (Num(b, key) - Num(a, key)) / dt; };
  std::string f;
  const std::time_t now = std::time(nullptr);
  char when[32];
  std::strftime(when, sizeof when, "%F %T", std::localtime(&now));
  f += fmt::format("walfs-trace top  {}  {}  every {:.1f} s\n\n", o.mount, when, dt);

  // FUSE: the busiest opcodes of the interval.
  struct Op {
    std::string name;
    double count = 0;
    std::vector<std::uint64_t> lat;
  };
  std::map<std::string, Op> ops;
  for (const auto& [key, value] : b) {
    if (!key.starts_with("fuse_req_") || key.find("_us_") != std::string::npos || key == "fuse_req_control" ||
        key.starts_with("fuse_req_taken"))
      continue;
    const std::string name = key.substr(9);
    const double d = Num(b, key) - Num(a, key);
    if (d > 0) ops[name] = Op{name, d, {}};
  }
  for (const Exit& e : exits)
    if (auto it = ops.find(e.op); it != ops.end()) it->second.lat.push_back(e.latency_ns);
  std::vector<Op*> order;
  for (auto& [n, op] : ops) order.push_back(&op);
  std::sort(order.begin(), order.end(), [](const Op* x, const Op* y) { return x->count > y->count; });
  f += fmt::format("FUSE     {:.0f} requests/s  (transport {}, workers busy at most {}; latency {})\n",
                   rate("fuse_requests"), Str(b, "fuse_transport"), Str(b, "fuse_workers_busy_max"),
                   traced ? "of this interval, from the trace" : "since mount, from the stats");
  if (!order.empty()) {
    Report t({"op", "count", "req/s", "p50_us", "p99_us"});
    for (std::size_t i = 0; i < std::min<std::size_t>(order.size(), 10); ++i) {
      Op& op = *order[i];
      std::string p50, p99;
      if (traced && !op.lat.empty()) {
        std::sort(op.lat.begin(), op.lat.end());
        p50 = fmt::format("{:.1f}", NearestRank(op.lat, 0.5) / 1e3);
        p99 = fmt::format("{:.1f}", NearestRank(op.lat, 0.99) / 1e3);
      } else {
        p50 = Str(b, "fuse_req_" + op.name + "_us_p50");
        p99 = Str(b, "fuse_req_" + op.name + "_us_p99");
      }
      t.AddRow({Cell(op.name), Cell(static_cast<std::int64_t>(op.count)), Cell(op.count / dt, 1), Cell(p50),
                Cell(p99)});
    }
    f += Table(t);
  }

  // The log.
  LogPicture log;
  log.size = Num(b, "log_bytes");
  log.tail_space = Num(b, "tail_space_bytes");
  log.grant = std::max(Num(b, "reserve_grant_bytes"), Num(b, "write_grant_bytes"));
  log.target_past_tail = static_cast<double>(
      BytesPastTail(Str(b, "log_tail"), Str(b, "ail_target"), static_cast<std::uint64_t>(log.size)));
  f += fmt::format("\nlog      [{}]  {:.1f} % of {:.2f} MiB in use (# written, not yet freed; = granted; "
                   "| AIL target)\n",
                   LogBar(log, 50), log.size > 0 ? 100 * (log.tail_space + log.grant) / log.size : 0.0,
                   log.size / (1 << 20));
  f += fmt::format("         head {}  tail {}  reserve grant {:.1f} KiB  write grant {:.1f} KiB\n", Str(b, "log_head"),
                   Str(b, "log_tail"), Num(b, "reserve_grant_bytes") / 1024, Num(b, "write_grant_bytes") / 1024);
  // The pusher's last target: none while a quarter of the log is free,
  // reached once the tail has passed it, else how far it still has to go.
  const std::string target = Str(b, "ail_target");
  std::string where = "reached";
  if (target == "0:0" || target.empty())
    where = "none: a quarter of the log is free";
  else if (log.target_past_tail > 0)
    where = fmt::format("{:.1f} KiB past the tail", log.target_past_tail / 1024);
  f += fmt::format("ail      {} items  target {} ({})  pushes/s {:.1f}  tail moves/s {:.1f}\n", Str(b, "ail_items"),
                   target, where, rate("ail_pushes"), rate("ail_tail_moves"));
  const double sleeps = (Num(b, "reserve_sleeps") + Num(b, "write_sleeps")) - (Num(a, "reserve_sleeps") + Num(a, "write_sleeps"));
  const double wakes = (Num(b, "reserve_wakes_issued") + Num(b, "write_wakes_issued")) -
                       (Num(a, "reserve_wakes_issued") + Num(a, "write_wakes_issued"));
  f += fmt::format("grants   sleeps/s reserve {:.1f} write {:.1f}   wakes per sleep {}   (wake mode {})\n",
                   rate("reserve_sleeps"), rate("write_sleeps"),
                   sleeps > 0 ? fmt::format("{:.2f}", wakes / sleeps) : std::string("-"), Str(b, "wake_mode"));
  f += fmt::format("cil      pushes/s {:.1f} (lazy {:.1f}, background {:.1f}, timed {:.1f})   log writes/s {:.1f}   "
                   "forces/s {:.1f}\n",
                   rate("cil_pushes"), rate("cil_lazy_pushes"), rate("cil_background_pushes"), rate("cil_timed_pushes"),
                   rate("log_records"), rate("log_forces"));
  f += fmt::format("forces   waited/s {:.1f}   wait p50 {} us  p99 {} us  max {} us (since mount)\n",
                   rate("log_force_waits"), Str(b, "log_force_wait_p50_us"), Str(b, "log_force_wait_p99_us"),
                   Str(b, "log_force_wait_max_us"));
  f += fmt::format("buffers  {} cached ({:.0f} hits/s, {:.0f} misses/s)\n", Str(b, "buffers"), rate("buffer_hits"),
                   rate("buffer_misses"));

  // Callers, from the trace.
  if (!traced) {
    f += "\ncallers  (enable the mount's fs events to see them: echo 1 > MNT/.walfs/events/fs/enable)\n";
  } else {
    std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> callers;  // requests, ns
    for (const Exit& e : exits) {
      auto& c = callers[NamedCaller(e.caller)];
      ++c.first;
      c.second += e.latency_ns;
    }
    std::vector<std::pair<std::string, std::pair<std::uint64_t, std::uint64_t>>> v(callers.begin(), callers.end());
    std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return x.second.second > y.second.second; });
    Report t({"caller", "requests", "req/s", "busy_ms"});
    for (std::size_t i = 0; i < std::min<std::size_t>(v.size(), 5); ++i)
      t.AddRow({Cell(v[i].first), Cell(v[i].second.first), Cell(static_cast<double>(v[i].second.first) / dt, 1),
                Cell(static_cast<double>(v[i].second.second) / 1e6, 2)});
    f += "\ncallers  (this interval, from the trace; busy: the daemon's time serving them)\n";
    f += v.empty() ? std::string("         none\n") : Table(t);
  }
  return f;
}

// Whether any fs exit event is on (events/fs/enable reads 1 or X).
bool FsEventsOn(const fs::path& ctl) {
  const std::string e = cli::ReadSmallFile(ctl / "events" / "fs" / "enable");
  return !e.empty() && e[0] != '0';
}

}  // namespace

int RunTop(const TopOptions& o) {
  const fs::path ctl = fs::path(o.mount) / ".walfs";
  std::error_code ec;
  if (!fs::exists(ctl / "stats", ec)) {
    fmt::print(stderr, "walfs-trace: {}: not a walfs mount (no {})\n", o.mount, (ctl / "stats").string());
    return 1;
  }
  struct sigaction sa = {};
  sa.sa_handler = OnTopStopSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  StatsMap prev = ParseStats(cli::ReadSmallFile(ctl / "stats"));
  if (prev.empty()) {
    fmt::print(stderr, "walfs-trace: {}: cannot read {}\n", o.mount, (ctl / "stats").string());
    return 1;
  }
  double last_ts = 0;
  if (FsEventsOn(ctl)) NewExits(cli::ReadSmallFile(ctl / "trace"), &last_ts);  // what is older than the first frame
  auto t0 = std::chrono::steady_clock::now();
  for (int frame = 0; o.iterations == 0 || frame < o.iterations; ++frame) {
    const auto until = t0 + std::chrono::duration<double>(o.interval_s);
    while (!stop_requested.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (stop_requested.load()) break;
    const auto t1 = std::chrono::steady_clock::now();
    StatsMap cur = ParseStats(cli::ReadSmallFile(ctl / "stats"));
    if (cur.empty()) {
      fmt::print(stderr, "walfs-trace: {}: the mount went away\n", o.mount);
      return 1;
    }
    const bool traced = FsEventsOn(ctl);
    const std::vector<Exit> exits = traced ? NewExits(cli::ReadSmallFile(ctl / "trace"), &last_ts) : std::vector<Exit>{};
    const double dt = std::chrono::duration<double>(t1 - t0).count();
    const std::string text = Frame(o, prev, cur, dt, traced, exits);
    if (tty)
      fmt::print("\x1b[H\x1b[2J{}", text);
    else
      fmt::print("{}{}", frame > 0 ? "\n" : "", text);
    std::fflush(stdout);
    prev = std::move(cur);
    t0 = t1;
  }
  return 0;
}

}  // namespace walfs::tracing
