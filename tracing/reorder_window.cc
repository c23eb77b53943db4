#include "tracing/reorder_window.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace walfs::tracing {

namespace {
bool Earlier(const TraceEntry& a, const TraceEntry& b) { return a.record.timestamp < b.record.timestamp; }
}  // namespace

void ReorderWindow::Add(std::vector<TraceEntry> entries) {
  MergeByTimestamp(&entries);
  const auto waiting = static_cast<std::ptrdiff_t>(pending_.size());
  pending_.insert(pending_.end(), std::make_move_iterator(entries.begin()),
                  std::make_move_iterator(entries.end()));
  // Stable: what waited comes before what arrives with the same timestamp.
  std::inplace_merge(pending_.begin(), pending_.begin() + waiting, pending_.end(), Earlier);
}

std::vector<TraceEntry> ReorderWindow::TakeReady() {
  if (pending_.empty()) return {};
  const std::uint64_t newest = pending_.back().record.timestamp;
  const auto ready = std::partition_point(pending_.begin(), pending_.end(),
                                         [&](const TraceEntry& e) { return e.record.timestamp + hold_ <= newest; });
  std::vector<TraceEntry> out(std::make_move_iterator(pending_.begin()), std::make_move_iterator(ready));
  pending_.erase(pending_.begin(), ready);
  return out;
}

std::vector<TraceEntry> ReorderWindow::TakeAll() { return std::exchange(pending_, {}); }

}  // namespace walfs::tracing
