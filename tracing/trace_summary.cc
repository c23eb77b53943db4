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

std::string TraceSummary::Format(const EventTable& events) const {
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "records:   {}\n", records_);
  fmt::format_to(it, "lost:      {} (in {} markers)\n", lost_, lost_markers_);
  fmt::format_to(it, "threads:   {}\n", tids_.size());
  fmt::format_to(it, "duration:  {:.6f} s (first {:.6f}, last {:.6f})\n", duration_ns() / 1e9,
                 first_ns() / 1e9, last_ns() / 1e9);

  struct Row {
    std::string name;
    std::uint64_t count;
  };
  std::vector<Row> rows;
  std::size_t width = 5;  // "event"
  for (const auto& [id, count] : per_event_) {
    const EventInfo* e = events.ById(id);
    rows.push_back({e ? e->full_name() : fmt::format("unknown_event_{}", id), count});
    width = std::max(width, rows.back().name.size());
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.count != b.count ? a.count > b.count : a.name < b.name;
  });
  fmt::format_to(it, "\n{:<{}}  {:>12}  {:>7}\n", "event", width, "count", "share");
  for (const Row& r : rows)
    fmt::format_to(it, "{:<{}}  {:>12}  {:>6.2f}%\n", r.name, width, r.count,
                   100.0 * static_cast<double>(r.count) / static_cast<double>(records_));
  return out;
}

}  // namespace walfs::tracing
