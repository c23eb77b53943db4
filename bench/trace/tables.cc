#include "bench/trace/tables.h"

#include <cstdio>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "tools/progress.h"

namespace walfs::bench {

namespace {

Cell Count(const std::vector<double>& v) { return Cell(static_cast<std::int64_t>(Median(v))); }
Cell Ratio(double x, double base) { return base > 0 ? Cell(x / base, 2) : Cell("-"); }

// One progress line for the tables of a run (tools/progress.h).
void Progress(const std::string& what) {
  static cli::ProgressLine line;
  line.Show(what);
}

}  // namespace

Result<Table> GetuidTable(const BenchOptions& o) {
  std::vector<GetuidMode> modes;
  for (const auto& m : o.modes) {
    Result<GetuidMode> r = ParseGetuidMode(m);
    if (!r.ok()) return r.status();
    modes.push_back(*r);
  }
  struct Acc {
    std::vector<double> ns, cpu, read, lost, sys, wakeups, sleeps, arms, wm, lag;
  };
  std::map<std::pair<int, GetuidMode>, Acc> acc;
  Table t{"getuid",
          Report({"threads", "mode", "ns_per_call", "vs_off", "cpu_ns_per_call", "events_read",
                  "lost", "writer_syscalls", "reader_wakeups", "reader_sleeps", "waker_arms",
                  "wm_wakes", "max_lag_us"}),
          {}, true};
  for (int rep = 0; rep < o.reps; ++rep) {
    for (int threads : o.threads) {
      for (GetuidMode mode : modes) {
        GetuidConfig c = o.getuid;
        c.threads = threads;
        c.mode = mode;
        Progress(fmt::format("getuid rep {}/{}: {} threads, {}", rep + 1, o.reps, threads,
                             GetuidModeName(mode)));
        Result<GetuidResult> r = RunGetuidCell(c);
        if (!r.ok()) return r.status();
        Acc& a = acc[{threads, mode}];
        a.ns.push_back(r->ns_per_call);
        a.cpu.push_back(r->cpu_ns_per_call);
        a.read.push_back(static_cast<double>(r->events_read));
        a.lost.push_back(static_cast<double>(r->lost));
        a.sys.push_back(static_cast<double>(r->writer_syscalls));
        a.wakeups.push_back(static_cast<double>(r->reader_wakeups));
        a.sleeps.push_back(static_cast<double>(r->reader_sleeps));
        a.arms.push_back(static_cast<double>(r->waker_arms));
        a.wm.push_back(static_cast<double>(r->watermark_wakes));
        a.lag.push_back(r->max_lag_us);
        const std::string cell = fmt::format("rep {}, {} threads, {}", rep + 1, threads,
                                             GetuidModeName(mode));
        if (r->events_read + r->lost != r->events_expected) {
          t.counts_ok = false;
          t.notes.push_back(fmt::format("{}: read {} + lost {} != emitted {}", cell,
                                        r->events_read, r->lost, r->events_expected));
        }
        if (r->empty_returns > 0)
          t.notes.push_back(fmt::format("{}: Read(4096, -1) returned WouldBlock {} times "
                                        "before the reader was interrupted",
                                        cell, r->empty_returns));
      }
    }
  }
  for (int threads : o.threads) {
    const auto off = acc.find({threads, GetuidMode::kOff});
    const double off_ns = off == acc.end() ? 0 : Median(off->second.ns);
    for (GetuidMode mode : modes) {
      const Acc& a = acc[{threads, mode}];
      const double ns = Median(a.ns);
      t.report.AddRow({threads, std::string(GetuidModeName(mode)), Cell(ns, 0),
                       Ratio(ns, off_ns), Cell(Median(a.cpu), 0), Count(a.read), Count(a.lost),
                       Count(a.sys), Count(a.wakeups), Count(a.sleeps), Count(a.arms),
                       Count(a.wm),
                       mode == GetuidMode::kNoReader ? Cell("-") : Cell(Median(a.lag), 0)});
    }
  }
  return t;
}

Result<Table> ReaderTable(const BenchOptions& o) {
  std::vector<ReaderKind> kinds;
  for (const std::string& name : o.readers) {
    Result<ReaderKind> k = ParseReaderKind(name);
    if (!k.ok()) return k.status();
    kinds.push_back(*k);
  }
  struct Acc {
    std::vector<double> ns, reader_ns, read, lost, wakeups, lag;
  };
  std::map<std::pair<int, ReaderKind>, Acc> acc;
  Table t{"reader",
          Report({"threads", "reader", "ns_per_call", "reader_cpu_ns_per_record", "events_read",
                  "lost", "reader_wakeups", "max_lag_us"}),
          {}, true};
  const tracing::TracerOptions defaults;
  for (int rep = 0; rep < o.reps; ++rep) {
    for (int threads : o.reader_threads) {
      for (ReaderKind kind : kinds) {
        GetuidConfig c = o.getuid;
        c.threads = threads;
        c.calls = o.reader_calls;
        c.reader = kind;
        c.mode = GetuidMode::kDeferredWatermark;
        c.buffer_kb = defaults.buffer_size_kb;
        c.wakeup_delay_us = defaults.wakeup_delay_us;
        c.watermark_percent = defaults.buffer_percent;
        Progress(fmt::format("reader rep {}/{}: {} threads, {}", rep + 1, o.reps, threads,
                             ReaderKindName(kind)));
        Result<GetuidResult> r = RunGetuidCell(c);
        if (!r.ok()) return r.status();
        Acc& a = acc[{threads, kind}];
        a.ns.push_back(r->ns_per_call);
        a.reader_ns.push_back(r->reader_cpu_ns_per_record);
        a.read.push_back(static_cast<double>(r->events_read));
        a.lost.push_back(static_cast<double>(r->lost));
        a.wakeups.push_back(static_cast<double>(r->reader_wakeups));
        a.lag.push_back(r->max_lag_us);
        if (r->events_read + r->lost != r->events_expected || r->lost != r->lost_in_stream) {
          t.counts_ok = false;
          t.notes.push_back(fmt::format(
              "rep {}, {} threads, {}: read {} + lost {} (stream said {}) != emitted {}", rep + 1,
              threads, ReaderKindName(kind), r->events_read, r->lost, r->lost_in_stream,
              r->events_expected));
        }
      }
    }
  }
  for (int threads : o.reader_threads)
    for (ReaderKind kind : kinds) {
      const Acc& a = acc[{threads, kind}];
      t.report.AddRow({threads, std::string(ReaderKindName(kind)), Cell(Median(a.ns), 0),
                       Cell(Median(a.reader_ns), 1), Count(a.read), Count(a.lost),
                       Count(a.wakeups), Cell(Median(a.lag), 0)});
    }
  return t;
}

Result<Table> RecursionTable(const BenchOptions& o) {
  std::vector<tracing::RecursionMode> modes;
  for (const auto& m : o.recursion) {
    Result<tracing::RecursionMode> r = tracing::ParseRecursionMode(m);
    if (!r.ok()) return r.status();
    modes.push_back(*r);
  }
  const bool storm = o.storm.interval_us > 0;
  struct Acc {
    std::vector<double> quiet_ns, ns, sig, recorded, attempted, handled, misses, lost;
    int consistent = 0;
  };
  std::map<std::pair<int, tracing::RecursionMode>, Acc> acc;
  Table t{"recursion",
          Report({"threads", "recursion", "quiet_ns_per_event", "quiet_vs_fast", "ns_per_event",
                  "vs_fast", "signals_per_s", "events_recorded", "handler_attempted",
                  "handler_recorded", "recursion_misses", "lost_other", "check"}),
          {}, true};
  auto run = [&](int rep, int threads, tracing::RecursionMode mode,
                 std::int64_t interval_us) -> Result<StormResult> {
    StormConfig c = o.storm;
    c.threads = threads;
    c.mode = mode;
    c.interval_us = interval_us;
    Progress(fmt::format("recursion rep {}/{}: {} threads, {}, {}", rep + 1, o.reps, threads,
                         tracing::RecursionModeName(mode), interval_us ? "storm" : "quiet"));
    Result<StormResult> r = RunStormCell(c);
    if (r.ok() && !r->consistent) {
      t.counts_ok = false;
      t.notes.push_back(fmt::format(
          "rep {}, {} threads, {}, {}: main events {} of {}, handler {} attempted / {} "
          "recorded, {} recursion misses, {} other losses",
          rep + 1, threads, tracing::RecursionModeName(mode), interval_us ? "storm" : "quiet",
          r->events_recorded, r->events_expected, r->handler_attempted, r->handler_recorded,
          r->recursion_misses, r->lost_other));
    }
    return r;
  };
  for (int rep = 0; rep < o.reps; ++rep) {
    for (int threads : o.storm_threads) {
      for (tracing::RecursionMode mode : modes) {
        Acc& a = acc[{threads, mode}];
        Result<StormResult> q = run(rep, threads, mode, 0);
        if (!q.ok()) return q.status();
        a.quiet_ns.push_back(q->ns_per_event);
        if (!storm) {
          a.consistent += q->consistent;
          continue;
        }
        Result<StormResult> r = run(rep, threads, mode, o.storm.interval_us);
        if (!r.ok()) return r.status();
        a.ns.push_back(r->ns_per_event);
        a.sig.push_back(r->signals_per_s);
        a.recorded.push_back(static_cast<double>(r->events_recorded));
        a.attempted.push_back(static_cast<double>(r->handler_attempted));
        a.handled.push_back(static_cast<double>(r->handler_recorded));
        a.misses.push_back(static_cast<double>(r->recursion_misses));
        a.lost.push_back(static_cast<double>(r->lost_other));
        a.consistent += q->consistent && r->consistent;
      }
    }
  }
  for (int threads : o.storm_threads) {
    const auto fast = acc.find({threads, tracing::RecursionMode::kFast});
    const double fast_quiet = fast == acc.end() ? 0 : Median(fast->second.quiet_ns);
    const double fast_ns = fast == acc.end() ? 0 : Median(fast->second.ns);
    for (tracing::RecursionMode mode : modes) {
      const Acc& a = acc[{threads, mode}];
      const double quiet = Median(a.quiet_ns);
      const double ns = Median(a.ns);
      const std::string check = a.consistent == o.reps
                                    ? "ok"
                                    : fmt::format("FAILED {}/{}", o.reps - a.consistent, o.reps);
      std::vector<Cell> row{threads, std::string(tracing::RecursionModeName(mode)),
                            Cell(quiet, 1), Ratio(quiet, fast_quiet)};
      if (storm) {
        for (Cell c : {Cell(ns, 1), Ratio(ns, fast_ns), Cell(Median(a.sig), 0), Count(a.recorded),
                       Count(a.attempted), Count(a.handled), Count(a.misses), Count(a.lost)})
          row.push_back(std::move(c));
      } else {
        row.resize(row.size() + 8, Cell("-"));
      }
      row.push_back(check);
      t.report.AddRow(std::move(row));
    }
  }
  t.notes.push_back("check: handler_attempted - handler_recorded == recursion_misses, every "
                    "main-loop event recorded, lost_other == 0, in every repetition (quiet and "
                    "storm cells)");
  return t;
}

Result<Table> LttngTable(const BenchOptions& o) {
  LttngSetup setup = o.lttng;
  if (o.no_lttng) setup.unavailable = "--no-lttng";
  LttngRunner lttng(setup);
  lttng.Setup();
  struct Acc {
    std::vector<double> ns[3], lost[3], lttng_packets;
    std::uint64_t events = 0;
    std::string note[3];
  };
  // Rows per thread count: walfs with a reader, walfs read after, LTTng-UST.
  const char* const kTracers[] = {"walfs", "walfs, read after", "lttng-ust"};
  std::map<int, Acc> acc;
  for (int rep = 0; rep < o.reps; ++rep) {
    for (int threads : o.lttng_threads) {
      Acc& a = acc[threads];
      for (int v = 0; v < 3; ++v) {
        EmitConfig c = o.emit;
        c.threads = threads;
        c.reader = v == 0;
        Progress(fmt::format("lttng rep {}/{}: {} threads, {}", rep + 1, o.reps, threads,
                             kTracers[v]));
        EmitResult e;
        if (v < 2) {
          Result<EmitResult> w = RunWalfsEmitCell(c);
          if (!w.ok()) return w.status();
          e = *w;
          if (!e.note.empty()) e.note = fmt::format("rep {}: {}", rep + 1, e.note);
        } else {
          e = lttng.Run(c);
          if (e.ran) a.lttng_packets.push_back(static_cast<double>(e.lost_packets));
        }
        if (e.ran) {
          a.ns[v].push_back(e.ns_per_event);
          a.lost[v].push_back(static_cast<double>(e.lost));
          a.events = e.events;
        }
        if (!e.note.empty()) a.note[v] = e.note;
      }
    }
  }
  Table t{"lttng",
          Report({"threads", "tracer", "ns_per_event", "vs_lttng", "events", "lost", "note"}),
          {}, true};
  for (int threads : o.lttng_threads) {
    const Acc& a = acc[threads];
    const bool have_lttng = !a.ns[2].empty();
    const double lttng_ns = Median(a.ns[2]);
    for (int v = 0; v < 2; ++v) {
      const double ns = Median(a.ns[v]);
      if (!a.note[v].empty()) {
        t.counts_ok = false;
        t.notes.push_back(fmt::format("{} threads, {}: {}", threads, kTracers[v], a.note[v]));
      }
      t.report.AddRow({threads, kTracers[v], Cell(ns, 1),
                       have_lttng ? Ratio(ns, lttng_ns) : Cell("-"), a.events, Count(a.lost[v]),
                       v == 0 ? "deferred, safe, reader draining" : "deferred, safe, no reader"});
    }
    if (have_lttng) {
      std::string note = "per-uid buffers, discard mode";
      if (Median(a.lttng_packets) > 0)
        note += fmt::format("; {} packets lost",
                            static_cast<std::int64_t>(Median(a.lttng_packets)));
      if (!a.note[2].empty()) note += "; " + a.note[2];
      t.report.AddRow({threads, kTracers[2], Cell(lttng_ns, 1), Cell(1.0, 2), a.events,
                       Count(a.lost[2]), note});
    } else {
      t.report.AddRow({threads, kTracers[2], "-", "-", "-", "-",
                       a.note[2].empty() ? "skipped: " + lttng.reason() : a.note[2]});
    }
  }
  return t;
}

}  // namespace walfs::bench
