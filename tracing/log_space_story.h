// LogSpaceStory: what a trace says about the journal's log space, for
// `walfs-trace stats`: how often reservations slept on each grant head and
// how long, how many wakes each sleep took (by wake mode), how long log
// forces waited, and how long the log was nearly full.
//
//   LogSpaceStory story;
//   for (const TraceEntry& e : entries) story.Add(e, events);
//   story.GrantHeads().Print(stdout, "grant heads");
//
// From the journal's events (docs/tracing.md): grant_sleep, grant_wake,
// grant_wakeup, grant_granted and wake_batch per head and wake mode;
// log_force; and the grant_bytes counter, whose samples (reserve and write
// grants, tail space, log size) are held until the next one: the log is
// "in use" from its tail to the furthest grant head, tail_space +
// max(reserve, write), as xlog_space_left sees it.  Events of another build
// without the fields read here are not counted; a trace recorded before
// the `mode` field reports the mode as "?".
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "base/report.h"
#include "tracing/event_table.h"
#include "tracing/reader.h"

namespace walfs::tracing {

class LogSpaceStory {
 public:
  // The share of the log above which it counts as nearly full.
  static constexpr double kFullShare = 0.75;

  void Add(const TraceEntry& entry, const EventTable& events);

  // One row per (wake mode, head) that slept or woke anyone: mode, head,
  // sleeps, granted (waits that ended with the space), wait_p50_us,
  // wait_p99_us, wait_max_us, wakes (signals issued or queued),
  // useful_wakes, futile_wakes (the woken waiter found no space),
  // wakes_per_sleep, wake_batches.
  Report GrantHeads() const;
  // One row: forces, on_disk (already durable: no wait), waited,
  // wait_p50_us, wait_p99_us, wait_max_us.  Empty without log_force records.
  Report Forces() const;
  // One row: samples, log_mib, peak_used_pct, mean_used_pct, above_75_s,
  // above_75_pct (of the time the samples span).  Empty without
  // grant_bytes samples that carry the log's size.
  Report Space() const;

 private:
  enum class Role : std::uint8_t { kUnresolved, kNone, kSleep, kWake, kWakeup, kGranted, kBatch, kForce, kBytes };
  struct Resolved {
    Role role = Role::kUnresolved;
    int f[4] = {-1, -1, -1, -1};  // field indexes, per role (see Add)
    int mode = -1;                // the `mode` field, if the event has one
  };
  struct Head {
    std::uint64_t sleeps = 0, wakes = 0, useful = 0, futile = 0, batches = 0;
    std::vector<std::uint64_t> waits_ns;
  };

  const Resolved& Resolve(std::uint16_t id, const EventTable& events);

  std::map<std::uint16_t, Resolved> resolved_;
  std::map<std::pair<int, int>, Head> heads_;  // (mode or -1, head index)
  std::uint64_t forces_ = 0, forces_on_disk_ = 0;
  std::vector<std::uint64_t> force_waits_ns_;
  // grant_bytes samples, held from one to the next.
  std::uint64_t samples_ = 0;
  std::uint64_t log_bytes_ = 0;
  double peak_share_ = 0;
  double share_ns_ = 0;  // integral of the share in use over time
  std::uint64_t first_ns_ = 0, last_ns_ = 0, above_ns_ = 0;
  double last_share_ = 0;
};

}  // namespace walfs::tracing
