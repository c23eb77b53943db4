#include "tracing/trace_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <vector>

namespace walfs::tracing {

void TraceSummary::Add(const TraceEntry& entry) {
  tids_.insert(entry.tid);
  if (entry.type == TraceEntry::Type::kLost) {
    lost_ += entry.lost;
    ++lost_markers_;
    return;
  }
  ++records_;
  ++per_event_[entry.record.event_id];
  first_ns_ = std::min(first_ns_, entry.record.timestamp);
  last_ns_ = std::max(last_ns_, entry.record.timestamp);
  max_cpu_ = std::max<unsigned>(max_cpu_, entry.record.cpu);
}

namespace {

struct EventRow {
  std::string name;
  std::uint64_t count;
};

// Most frequent first, names resolved through `events`.
std::vector<EventRow> EventRows(const std::map<std::uint16_t, std::uint64_t>& per_event, const EventTable& events) {
  std::vector<EventRow> rows;
  for (const auto& [id, count] : per_event) {
    const EventInfo* e = events.ById(id);
    rows.push_back({e ? e->full_name() : fmt::format("unknown_event_{}", id), count});
  }
  std::sort(rows.begin(), rows.end(), [](const EventRow& a, const EventRow& b) {
    return a.count != b.count ? a.count > b.count : a.name < b.name;
  });
  return rows;
}

}  // namespace

std::string TraceSummary::Format(const EventTable& events) const {
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "records:   {}\n", records_);
  fmt::format_to(it, "lost:      {} (in {} markers)\n", lost_, lost_markers_);
  fmt::format_to(it, "threads:   {}\n", tids_.size());
  fmt::format_to(it, "duration:  {:.6f} s (first {:.6f}, last {:.6f})\n", duration_ns() / 1e9,
                 first_ns() / 1e9, last_ns() / 1e9);
  const std::vector<EventRow> rows = EventRows(per_event_, events);
  std::size_t width = 5;  // "event"
  for (const EventRow& r : rows) width = std::max(width, r.name.size());
  fmt::format_to(it, "\n{:<{}}  {:>12}  {:>7}\n", "event", width, "count", "share");
  for (const EventRow& r : rows)
    fmt::format_to(it, "{:<{}}  {:>12}  {:>6.2f}%\n", r.name, width, r.count,
                   100.0 * static_cast<double>(r.count) / static_cast<double>(records_));
  return out;
}

Report TraceSummary::Totals() const {
  Report r({"records", "lost", "lost_markers", "threads", "cpus", "duration_s"});
  r.AddRow({Cell(records_), Cell(lost_), Cell(lost_markers_), Cell(static_cast<std::uint64_t>(tids_.size())),
            Cell(static_cast<std::uint64_t>(cpus())), Cell(duration_ns() / 1e9, 6)});
  return r;
}

Report TraceSummary::Events(const EventTable& events) const {
  Report r({"event", "count", "share_pct"});
  for (const EventRow& row : EventRows(per_event_, events))
    r.AddRow({Cell(row.name), Cell(row.count),
              Cell(100.0 * static_cast<double>(row.count) / static_cast<double>(records_), 2)});
  return r;
}

}  // namespace walfs::tracing
