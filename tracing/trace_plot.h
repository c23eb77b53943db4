// TracePlot: draws a trace's journal, log and fs events as PNG figures with
// gnuplot (`walfs-trace plot FILE -o DIR`).
//
//   TracePlot plot;
//   for (;;) {                                   // a TraceFileReader's chunks
//     WALFS_RETURN_IF_ERROR(reader->ReadChunk(&chunk));
//     if (chunk.empty()) break;
//     for (const TraceEntry& e : chunk) plot.Add(e, reader->events());
//   }
//   WALFS_ASSIGN_OR_RETURN(PlotReport report, plot.Draw({.out_dir = dir}));
//
// The figures, each drawn only when the trace holds its events (the report
// says which were left out and why):
//
//   log_space.png      journal_grant_bytes: the reserve grant head (solid)
//                      and the write grant head (dashed, so both show where
//                      they coincide), the log space in use (tail to head)
//                      and the log's size (a line: "the log is full" is
//                      where use meets it), and log_log_submit: where the
//                      log head is in the log; MiB over seconds.  Each
//                      plotted point is the largest value of its slice of
//                      time (at most kMaxPoints per series).
//   grant_waits.png    journal_grant_sleep, journal_grant_wake (per grant
//                      head) and journal_wake_batch per second; each series
//                      is its own data block, broken where a slice has no
//                      event, so no line crosses a span without samples.
//   log_writes.png     log_cil_push and log_log_submit per second, and the
//                      MiB/s the submits wrote.
//   force_latency.png  log_log_force: how long each force waited (µs, log
//                      scale; forces already durable are not waits).
//   fuse_latency.png   fs_<op>_exit latency_ns: a histogram per opcode (the
//                      eight that took the most total time, so a costly
//                      fsync is drawn before a frequent getattr; the title
//                      names the ones left out), log-2 buckets, log scales.
//
// Events are found by name and their fields by name, through the table the
// trace came with, so a trace from another build plots the same.  The data
// files (*.dat) and the script (plot.gp) stay in DIR beside the PNGs: a user
// may edit the script and rerun gnuplot.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "tracing/event_table.h"
#include "tracing/reader.h"

namespace walfs::tracing {

struct PlotOptions {
  std::string out_dir;              // created if missing
  std::string title;                // what the trace is of; in every figure's title
  std::string when;                 // when it was taken (e.g. the file's creation time)
  std::string gnuplot = "gnuplot";  // the program, found on PATH
};

struct PlotReport {
  struct Figure {
    std::string file;  // under out_dir, e.g. "log_space.png"
    std::string what;  // one line: what it shows, or why it was not drawn
  };
  std::vector<Figure> drawn;
  std::vector<Figure> skipped;
};

class TracePlot {
 public:
  static constexpr std::size_t kMaxPoints = 4000;  // per line series
  static constexpr int kLatencyBuckets = 40;        // 2^0 .. 2^39 ns

  // Takes one entry; `events` resolves its id (the reader's table, which
  // defines an event before its first record).
  void Add(const TraceEntry& entry, const EventTable& events);

  std::uint64_t records() const { return records_; }
  std::uint64_t used_records() const { return used_; }  // records a figure draws

  // Writes the data files and plot.gp into options.out_dir and runs gnuplot
  // there.  NotFound when gnuplot is missing, IoError when DIR cannot be
  // written or gnuplot fails (its stderr is in DIR/gnuplot.log and in the
  // message); InvalidArgument when no figure has data.
  Result<PlotReport> Draw(const PlotOptions& options) const;

 private:
  // What an event id is to the figures; resolved once per id.
  enum class Role : std::uint8_t {
    kUnresolved, kNone, kGrantBytes, kLogSubmit, kGrantSleep, kGrantWake, kWakeBatch,
    kCilPush, kLogForce, kFuseExit, kAilPush,
  };
  struct Resolved {
    Role role = Role::kUnresolved;
    std::array<int, 4> field{-1, -1, -1, -1};  // indexes of the fields the role reads (-1: absent)
    int op = -1;                           // kFuseExit: index into ops_
  };
  struct Sample {
    std::uint64_t t;  // trace clock, ns
    std::uint64_t a, b, c;
  };

  const Resolved& Resolve(std::uint16_t id, const EventTable& events);

  std::vector<Resolved> resolved_ = std::vector<Resolved>(1u << 16);
  std::uint64_t records_ = 0;
  std::uint64_t used_ = 0;
  std::uint64_t first_ns_ = UINT64_MAX;
  std::uint64_t last_ns_ = 0;

  std::vector<Sample> grant_;        // reserve, write, tail space (bytes)
  std::vector<Sample> head_;         // log head offset (bytes), -, -
  std::vector<Sample> ail_target_;   // the AIL push target's offset in the log (bytes), -, -
  std::vector<Sample> sleeps_;       // head index, -, -
  std::vector<Sample> wakes_;        // head index, -, -
  std::vector<Sample> batches_;      // count, -, -
  std::vector<Sample> pushes_;       // -, -, -
  std::vector<Sample> submits_;      // bytes, -, -
  std::vector<Sample> forces_;       // wait_ns, -, -
  std::vector<std::string> ops_;     // fuse opcodes, first-seen order
  std::vector<std::array<std::uint64_t, kLatencyBuckets>> latency_;  // per ops_ entry
  std::vector<std::uint64_t> latency_total_ns_;                      // per ops_ entry
  std::uint64_t log_bytes_ = 0;      // the log's size, from grant_bytes records that carry it
};

}  // namespace walfs::tracing
