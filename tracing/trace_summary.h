// TraceSummary: counts over a stream of trace entries — records per event,
// lost records, threads, time span — for `walfs-trace stats`.
//
//   TraceSummary sum;
//   for (const TraceEntry& e : entries) sum.Add(e);
//   std::cout << sum.Format(table);
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "base/report.h"
#include "tracing/event_table.h"
#include "tracing/reader.h"

namespace walfs::tracing {

class TraceSummary {
 public:
  void Add(const TraceEntry& entry);

  std::uint64_t records() const { return records_; }
  std::uint64_t lost() const { return lost_; }                // records lost
  std::uint64_t lost_markers() const { return lost_markers_; }  // [LOST N EVENTS] entries
  std::size_t threads() const { return tids_.size(); }
  // CPUs the records ran on, counted as ftrace's #P: highest CPU number + 1.
  unsigned cpus() const { return records_ ? max_cpu_ + 1u : 0u; }
  // Records per event id.
  const std::map<std::uint16_t, std::uint64_t>& per_event() const { return per_event_; }
  // Of the records' timestamps; 0 when there are no records.
  std::uint64_t first_ns() const { return records_ ? first_ns_ : 0; }
  std::uint64_t last_ns() const { return last_ns_; }
  std::uint64_t duration_ns() const { return last_ns() - first_ns(); }

  // A human-readable report: totals, then one line per event (most frequent
  // first), names resolved through `events`.
  std::string Format(const EventTable& events) const;
  // The same as tables, for --json: one row of totals (records, lost,
  // lost_markers, threads, cpus, duration_s), and one row per event
  // (event, count, share_pct), most frequent first.
  Report Totals() const;
  Report Events(const EventTable& events) const;

 private:
  std::uint64_t records_ = 0;
  std::uint64_t lost_ = 0;
  std::uint64_t lost_markers_ = 0;
  std::uint64_t first_ns_ = UINT64_MAX;
  std::uint64_t last_ns_ = 0;
  unsigned max_cpu_ = 0;
  std::set<std::uint32_t> tids_;
  std::map<std::uint16_t, std::uint64_t> per_event_;
};

}  // namespace walfs::tracing
