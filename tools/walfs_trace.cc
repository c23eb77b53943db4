// walfs-trace: prints, converts and summarises walfs trace files (written by
// tracing::WriteTraceFile, or by `walfs-trace record` / WALFS_TRACE_OUT).
//
//   walfs-trace print [--header] FILE          ftrace-style text lines
//   walfs-trace export --chrome OUT.json FILE  Chrome trace JSON for Perfetto UI
//   walfs-trace stats [--json OUT] FILE        events per name, losses, time span;
//                                              latency per FUSE op and caller; grant
//                                              sleeps, wakes, forces, log space
//   walfs-trace plot -o DIR [--title T] FILE   PNG figures (gnuplot): log space,
//                                              grant waits, log writes, latencies
//   walfs-trace list FILE|MNT                  the events and fields a file or mount has
//   walfs-trace top [-d S] [-n N] MNT          a mount's journal, live (tools/trace_top.h)
//   walfs-trace print/stats [-p PID] [-c COMM] [-e EVENTS] [-i INO] [--from S] [--to S]
//                                              only the records that pass (tracing/trace_filter.h)
//   walfs-trace record -o FILE [-e EVENTS] -- PROGRAM [ARGS]
//                                              run a traced program, record its trace
//   walfs-trace record --mount MNT -o FILE [-e EVENTS] [--duration S] [-- PROGRAM [ARGS]]
//                                              record a mount's trace (trace_pipe_raw)
//
// Exit status: 0 success, 1 the file could not be read or is corrupt (one
// line on stderr says why; what was read before the bad section is still
// printed), 2 bad usage.  A torn final section — the writer stopped
// mid-append — is the end of the trace, reported on stderr, exit 0.
//
// Like xfsprogs' logprint, this links the library that writes the format
// (walfs::tracing) and parses nothing itself.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "base/status.h"
#include "tools/cli.h"
#include "tools/trace_list.h"
#include "tools/trace_record_mount.h"
#include "tools/trace_top.h"
#include "base/report.h"
#include "tracing/chrome_json.h"
#include "tracing/log_space_story.h"
#include "tracing/op_latency.h"
#include "tracing/trace_filter.h"
#include "tracing/text_format.h"
#include "tracing/trace_file.h"
#include "tracing/trace_plot.h"
#include "tracing/trace_summary.h"

namespace walfs::tracing {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitBadFile = 1;
constexpr int kExitUsage = 2;

// One plain line, as coreutils and trace-cmd print (cli::FileError).
int Fail(const std::string& path, const Status& s) { return walfs::cli::FileError("walfs-trace", path, s); }

void NoteTornTail(const std::string& path, const TraceFileReader& r) {
  if (r.torn_tail())
    fmt::print(stderr, "walfs-trace: {}: ignored a torn final section ({} bytes at offset {})\n",
               path, r.torn_bytes(), r.offset() - r.torn_bytes());
}

// Calls fn(entry) for every entry left in `reader`.  On a corrupt section,
// returns the error after passing fn every entry before it.
template <typename Fn>
Status ForEachEntry(TraceFileReader* reader, Fn fn) {
  std::vector<TraceEntry> chunk;
  for (;;) {
    WALFS_RETURN_IF_ERROR(reader->ReadChunk(&chunk));
    if (chunk.empty()) return Status::Ok();
    for (const TraceEntry& e : chunk) fn(e);
  }
}

int Print(const std::string& path, bool header, const TraceFilter& filter) {
  if (header) {
    Result<std::unique_ptr<TraceFileReader>> counter = TraceFileReader::Open(path);
    if (!counter.ok()) return Fail(path, counter.status());
    TraceSummary sum;
    Status s = ForEachEntry(counter->get(), [&](const TraceEntry& e) { sum.Add(e); });
    if (!s.ok()) return Fail(path, s);
    const std::string block =
        FormatTextHeader(sum.records(), sum.records() + sum.lost(), sum.cpus());
    std::fputs(block.c_str(), stdout);
  }
  Result<std::unique_ptr<TraceFileReader>> reader = TraceFileReader::Open(path);
  if (!reader.ok()) return Fail(path, reader.status());
  std::string out;
  const EventTable& events = (*reader)->events();
  TaskNames tasks;  // the callers' names, from the task events as they come
  std::vector<TraceEntry> chunk;
  for (;;) {
    Status s = (*reader)->ReadChunk(&chunk);
    if (!s.ok()) {
      std::fflush(stdout);
      return Fail(path, s);
    }
    if (chunk.empty()) break;
    out.clear();
    for (const TraceEntry& e : chunk) {
      if (filter.empty()) {
        AppendTextLine(e, events, &out, &tasks);
        continue;
      }
      // Every caller's name is learnt, shown or not: a shown line names its caller.
      if (e.type == TraceEntry::Type::kRecord)
        if (const EventInfo* info = events.ById(e.record.event_id)) tasks.Observe(e, *info);
      if (filter.Matches(e, events, tasks)) AppendTextLine(e, events, &out, &tasks);
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  std::fflush(stdout);
  NoteTornTail(path, **reader);
  return kExitOk;
}

int ExportChrome(const std::string& path, const std::string& out_path) {
  Result<std::unique_ptr<TraceFileReader>> reader = TraceFileReader::Open(path);
  if (!reader.ok()) return Fail(path, reader.status());
  std::ofstream file;
  std::ostream* out = &std::cout;
  if (out_path != "-") {
    file.open(out_path, std::ios::out | std::ios::trunc | std::ios::binary);
    if (!file) return Fail(out_path, Status::IoError("cannot create the output file"));
    out = &file;
  }
  ChromeTraceOptions options;
  options.pid = (*reader)->info().pid;
  ChromeTraceWriter writer(out, &(*reader)->events(), options);
  // On a corrupt section the JSON is still closed, so that what was read
  // loads; the exit status says it is not the whole trace.
  Status read = ForEachEntry(reader->get(), [&](const TraceEntry& e) { writer.Add(e); });
  Status written = writer.Finish();
  if (!read.ok()) return Fail(path, read);
  if (!written.ok()) return Fail(out_path, written);
  NoteTornTail(path, **reader);
  return kExitOk;
}

std::string WallClock(std::uint64_t unix_ns) {
  const std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  char buf[64];
  if (gmtime_r(&t, &tm) == nullptr || std::strftime(buf, sizeof(buf), "%F %T UTC", &tm) == 0)
    return "?";
  return buf;
}

// The callers `stats` prints (all of them go to --json).
constexpr std::size_t kCallersShown = 20;

int Stats(const std::string& path, const std::string& json_path, const TraceFilter& filter) {
  Result<std::unique_ptr<TraceFileReader>> reader = TraceFileReader::Open(path);
  if (!reader.ok()) return Fail(path, reader.status());
  TraceSummary sum;
  OpLatency ops;
  LogSpaceStory story;
  const EventTable& events = (*reader)->events();
  TaskNames tasks;  // for the filter's --comm
  Status s = ForEachEntry(reader->get(), [&](const TraceEntry& e) {
    if (!filter.empty()) {
      const EventInfo* info = e.type == TraceEntry::Type::kRecord ? events.ById(e.record.event_id) : nullptr;
      if (info != nullptr) tasks.Observe(e, *info);
      if (!filter.Matches(e, events, tasks)) {
        // The callers table still learns every caller's name.
        if (info != nullptr && info->subsystem == "fs" && info->name == "task") ops.Add(e, events);
        return;
      }
    }
    sum.Add(e);
    ops.Add(e, events);
    story.Add(e, events);
  });
  if (!s.ok()) return Fail(path, s);
  const TraceFileReader& r = **reader;
  const TraceFileInfo& info = r.info();
  fmt::print("file:      {}\n", path);
  fmt::print("version:   {}\n", info.version);
  fmt::print("clock:     {}{}\n", info.clock,
             info.flags & trace_file::kFlagOverwrite ? " (overwrite mode)" : "");
  fmt::print("pid:       {}\n", info.pid);
  fmt::print("created:   {}\n", WallClock(info.created_unix_ns));
  fmt::print("events:    {} defined\n", r.events().size());
  fmt::print("torn tail: {}\n",
             r.torn_tail() ? fmt::format("yes, {} bytes", r.torn_bytes()) : "no");
  if (r.skipped_sections() > 0)
    fmt::print("skipped:   {} unknown sections\n", r.skipped_sections());
  std::fputs(sum.Format(r.events()).c_str(), stdout);

  // The answers: each table, or a line saying which events it needs.
  const Report operations = ops.Operations();
  std::size_t more_callers = 0;
  const Report callers = ops.Callers(kCallersShown, &more_callers);
  const Report heads = story.GrantHeads(), forces = story.Forces(), space = story.Space();
  auto show = [](const Report& t, const char* title, const char* needs) {
    if (t.rows().empty())
      fmt::print("\n{}: none ({})\n", title, needs);
    else
      t.Print(stdout, title);
  };
  show(operations, "operations (FUSE requests served, by total time)", "no fs_*_exit records");
  show(callers, "callers (the processes the requests came from, by total time)",
       "no fs_*_exit records with caller_pid");
  if (more_callers > 0) fmt::print("... and {} more callers (all of them in --json)\n", more_callers);
  show(heads, "grant heads (reservations that slept for log space; wakes by wake mode)",
       "no grant_sleep, grant_wake or wake_batch records");
  show(forces, "log forces", "no log_force records");
  show(space, "log space (in use: tail to the furthest grant head; above 75 % counts as nearly full)",
       "no grant_bytes records with log_bytes");
  std::fflush(stdout);
  if (!json_path.empty()) {
    const Report totals = sum.Totals(), per_event = sum.Events(r.events()), all_callers = ops.Callers();
    Status w = WriteJsonTables(json_path, {{"summary", &totals},
                                           {"events", &per_event},
                                           {"operations", &operations},
                                           {"callers", &all_callers},
                                           {"grant_heads", &heads},
                                           {"forces", &forces},
                                           {"log_space", &space}});
    if (!w.ok()) return Fail(json_path, w);
  }
  return kExitOk;
}

// Draws the trace's figures into out_dir (tracing/trace_plot.h) and says
// which it drew and which it left out.
int Plot(const std::string& path, const std::string& out_dir, const std::string& title) {
  Result<std::unique_ptr<TraceFileReader>> reader = TraceFileReader::Open(path);
  if (!reader.ok()) return Fail(path, reader.status());
  TracePlot plot;
  const EventTable& events = (*reader)->events();
  Status s = ForEachEntry(reader->get(), [&](const TraceEntry& e) { plot.Add(e, events); });
  if (!s.ok()) return Fail(path, s);
  NoteTornTail(path, **reader);
  PlotOptions o;
  o.out_dir = out_dir;
  o.title = title.empty() ? fmt::format("{} (pid {})", path, (*reader)->info().pid) : title;
  o.when = WallClock((*reader)->info().created_unix_ns);
  Result<PlotReport> report = plot.Draw(o);
  if (!report.ok()) return Fail(path, report.status());
  for (const PlotReport::Figure& f : report->drawn)
    fmt::print("drew {}/{}: {}\n", out_dir, f.file, f.what);
  for (const PlotReport::Figure& f : report->skipped)
    fmt::print("left out {}: {}\n", f.file, f.what);
  fmt::print("{} of {} records plotted; data and script in {}/ (gnuplot plot.gp redraws)\n",
             plot.used_records(), plot.records(), out_dir);
  return kExitOk;
}

// Runs `command` with WALFS_TRACE_OUT / WALFS_TRACE_EVENTS set, so that the
// tracer inside it records to `out` (tracing/env_record.h), then says what
// was recorded.  Exits with the command's status.
int RecordCommand(const std::string& out, const std::string& events,
           const std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return Fail("fork", Status::FromErrno(errno, "fork"));
  if (pid == 0) {
    setenv("WALFS_TRACE_OUT", out.c_str(), 1);
    if (!events.empty()) setenv("WALFS_TRACE_EVENTS", events.c_str(), 1);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "walfs-trace: %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  const int rc = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  auto reader = TraceFileReader::Open(out);
  if (!reader.ok()) {
    fmt::print(stderr,
               "walfs-trace: {} wrote no trace to {} ({}): does it link the walfs tracer?\n",
               command[0], out, reader.status().message());
    return rc != 0 ? rc : kExitBadFile;
  }
  TraceSummary sum;
  std::vector<TraceEntry> chunk;
  for (;;) {
    Status s = (*reader)->ReadChunk(&chunk);
    for (const TraceEntry& e : chunk) sum.Add(e);
    if (!s.ok() || chunk.empty()) break;
  }
  fmt::print(stderr, "walfs-trace: recorded {} events ({} lost) from {} to {}\n",
             sum.records(), sum.lost(), command[0], out);
  return rc;
}

}  // namespace
}  // namespace walfs::tracing

int main(int argc, char** argv) {
  using namespace walfs::tracing;  // NOLINT
  CLI::App app{"walfs-trace: print, convert and summarise walfs trace files", "walfs-trace"};
  walfs::cli::AddVersion(app, "walfs-trace");
  app.require_subcommand(1);
  std::string file;

  // The record filters print and stats share (tracing/trace_filter.h).
  std::vector<std::uint32_t> f_pids;
  std::vector<std::string> f_comms;
  std::vector<std::uint64_t> f_inos;
  std::string f_events;
  double f_from = -1, f_to = -1;
  auto add_filters = [&](CLI::App* sub) {
    sub->add_option("-p,--pid", f_pids, "Only these tasks (comma-separated): a caller, or the thread that recorded")
        ->delimiter(',');
    sub->add_option("-c,--comm", f_comms, "Only tasks of these names (comma-separated)")->delimiter(',');
    sub->add_option("-e,--events", f_events,
                    "Only these events: comma-separated subsystem, subsystem/event, or patterns such as 'fs_*_exit'");
    sub->add_option("-i,--ino", f_inos, "Only records whose ino, parent or newparent is one of these")->delimiter(',');
    sub->add_option("--from", f_from, "Only records at or after this time (seconds, as print shows them)")
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--to", f_to, "Only records at or before this time (seconds)")->check(CLI::NonNegativeNumber);
  };

  bool header = false;
  CLI::App* print = app.add_subcommand("print", "Print a trace file as ftrace-style text lines");
  print->add_flag("--header", header, "Start with ftrace's '# tracer: nop' header block");
  add_filters(print);
  print->add_option("FILE", file, "Trace file")->required();

  std::string chrome_out;
  CLI::App* exp =
      app.add_subcommand("export", "Convert a trace file to Chrome trace JSON (Perfetto UI)");
  exp->add_option("--chrome", chrome_out, "Output JSON file ('-' for standard output)")->required();
  exp->add_option("FILE", file, "Trace file")->required();

  std::string stats_json;
  CLI::App* stats = app.add_subcommand(
      "stats",
      "Summarise a trace file: records per event and losses; latency per FUSE operation and per caller; "
      "grant-head sleeps, waits and wakes; log forces; time with the log nearly full");
  stats->add_option("--json", stats_json, "Also write every table to this file as JSON (one object per row)");
  add_filters(stats);
  stats->add_option("FILE", file, "Trace file")->required();

  TopOptions top_options;
  CLI::App* top = app.add_subcommand(
      "top", "Show a mounted walfs's journal live: requests, log space, grant waits, pushes, forces, callers");
  top->add_option("MNT", top_options.mount, "A walfs mount point")->required();
  top->add_option("-d,--delay", top_options.interval_s, "Seconds between frames, as top(1)'s -d (default 1)")
      ->check(walfs::cli::Positive());
  top->add_option("-n,--iterations", top_options.iterations, "Frames to show, then exit, as top(1)'s -n (default: until Ctrl-C)")
      ->check(walfs::cli::AtLeast(1));

  std::string list_target;
  CLI::App* list = app.add_subcommand(
      "list", "List the events a trace file or a mounted walfs has, with their fields (and, on a mount, whether on)");
  list->add_option("FILE|MNT", list_target, "Trace file, or a walfs mount point")->required();

  std::string plot_dir, plot_title;
  CLI::App* plot = app.add_subcommand(
      "plot", "Draw a trace's log space, grant waits, log writes, force and FUSE latency as PNGs (gnuplot)");
  plot->add_option("-o,--output", plot_dir, "Directory for the PNGs, their data and plot.gp")->required();
  plot->add_option("--title", plot_title, "What the trace is of, in every figure's title");
  plot->add_option("FILE", file, "Trace file")->required();

  std::string record_out, record_events, record_mount;
  double record_duration = 0;
  std::vector<std::string> command;
  CLI::App* record = app.add_subcommand(
      "record",
      "Record a trace to a file: of a program that links the walfs tracer, or of a mounted walfs "
      "(--mount, through .walfs/trace_pipe_raw)");
  record->add_option("-o,--output", record_out, "Trace file to write")->required();
  record->add_option("-e,--events", record_events,
                     "Events to record: comma-separated subsystem or subsystem/event (default all)");
  record->add_option("--mount", record_mount,
                     "Record this walfs mount's trace until the program exits, --duration passes "
                     "or SIGINT; event enable bits are restored at the end");
  record->add_option("--duration", record_duration, "With --mount: stop after this many seconds")
      ->check(walfs::cli::Positive());
  record->add_option("command", command,
                     "The program and its arguments (after --); optional with --mount");

  // CLI11 takes an unknown word for a missing subcommand ("A subcommand is
  // required"): name it instead.
  const auto known = [&](std::string_view word) {
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      if (sub->get_name() == word) return true;
    return false;
  };
  if (argc > 1 && argv[1][0] != '-' && !known(argv[1]))
    return walfs::cli::UsageError(
        "walfs-trace", fmt::format("unknown command '{}': expected print, export, stats, list, top, plot or record", argv[1]));
  const std::string_view first = argc > 1 ? argv[1] : "";
  if (!first.empty() && first[0] == '-' && first != "-h" && first != "--help" && first != "--version" &&
      first != "-V")
    return walfs::cli::UsageError(
        "walfs-trace", fmt::format("unknown option '{}': a command comes first (print, export, stats, list, top, plot or record)", first));
  if (auto code = walfs::cli::Parse(app, argc, argv)) return *code;
  TraceFilter filter;
  filter.pids.insert(f_pids.begin(), f_pids.end());
  filter.comms.insert(f_comms.begin(), f_comms.end());
  filter.inos.insert(f_inos.begin(), f_inos.end());
  if (!f_events.empty())
    if (walfs::Status st = filter.SetEvents(f_events); !st.ok())
      return walfs::cli::UsageError("walfs-trace", fmt::format("--events: {}", st.message()));
  if (f_from >= 0) filter.from_ns = static_cast<std::uint64_t>(f_from * 1e9);
  if (f_to >= 0) filter.to_ns = static_cast<std::uint64_t>(f_to * 1e9);
  if (filter.from_ns > filter.to_ns)
    return walfs::cli::UsageError("walfs-trace", "--from is after --to");
  if (print->parsed()) return Print(file, header, filter);
  if (list->parsed()) return ListEvents(list_target);
  if (top->parsed()) return RunTop(top_options);
  if (exp->parsed()) return ExportChrome(file, chrome_out);
  if (stats->parsed()) return Stats(file, stats_json, filter);
  if (plot->parsed()) return Plot(file, plot_dir, plot_title);
  if (record->parsed()) {
    if (!record_mount.empty())
      return RecordMount({.mount = record_mount, .output = record_out, .events = record_events,
                          .duration_s = record_duration, .command = command});
    if (record_duration > 0)
      return walfs::cli::UsageError("walfs-trace", "record: --duration needs --mount");
    if (command.empty())
      return walfs::cli::UsageError(
          "walfs-trace", "record: name a program to run (after --), or a mount with --mount");
    return RecordCommand(record_out, record_events, command);
  }
  return kExitUsage;
}
