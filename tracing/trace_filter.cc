#include "tracing/trace_filter.h"

#include <fnmatch.h>

#include <fmt/format.h>

namespace walfs::tracing {

Status TraceFilter::SetEvents(std::string_view list) {
  events_.clear();
  per_event_.clear();
  unknown_.selected = false;
  std::size_t at = 0;
  for (;;) {
    const std::size_t comma = list.find(',', at);
    const std::string_view item = list.substr(at, comma == std::string_view::npos ? list.npos : comma - at);
    if (item.empty()) return Status::InvalidArgument(fmt::format("empty event name in '{}'", list));
    events_.emplace_back(item);
    if (comma == std::string_view::npos) return Status::Ok();
    at = comma + 1;
  }
}

bool TraceFilter::EventSelected(const EventInfo& e) const {
  const std::string full = e.full_name(), slashed = e.subsystem + "/" + e.name;
  for (const std::string& p : events_)
    if (p == e.subsystem || p == slashed || fnmatch(p.c_str(), full.c_str(), 0) == 0 ||
        fnmatch(p.c_str(), slashed.c_str(), 0) == 0)
      return true;
  return false;
}

const TraceFilter::PerEvent& TraceFilter::Lookup(std::uint16_t id, const EventTable& events) const {
  auto it = per_event_.find(id);
  if (it != per_event_.end()) return it->second;
  PerEvent p;
  const EventInfo* e = events.ById(id);
  // Not defined (yet: a file's catalogue may come later): an unknown id
  // names no event a list could select.  Not remembered.
  if (e == nullptr) return unknown_;
  p.selected = events_.empty() || EventSelected(*e);
  p.caller = !e->fields.empty() && e->fields[0].name == "caller_pid";
  for (std::size_t i = 0; i < e->fields.size(); ++i) {
    const std::string& n = e->fields[i].name;
    if (n == "ino" || n == "parent" || n == "newparent") p.ino_fields.push_back(static_cast<int>(i));
  }
  return per_event_[id] = p;
}

bool TraceFilter::Matches(const TraceEntry& entry, const EventTable& events, const TaskNames& tasks) const {
  const std::uint64_t t = entry.record.timestamp;  // a lost marker carries the next record's
  if (t < from_ns || t > to_ns) return false;
  const std::string_view ring_comm = entry.comm ? std::string_view(*entry.comm) : std::string_view("<...>");
  if (entry.type == TraceEntry::Type::kLost) {
    if (!pids.empty() && !pids.contains(entry.tid)) return false;
    return comms.empty() || comms.contains(std::string(ring_comm));
  }
  const Record& r = entry.record;
  const PerEvent& p = Lookup(r.event_id, events);
  if (!p.selected) return false;
  const auto caller = static_cast<std::uint32_t>(r.fields[0]);
  if (!pids.empty() && !pids.contains(entry.tid) && !(p.caller && pids.contains(caller))) return false;
  if (!comms.empty() && !comms.contains(std::string(ring_comm)) &&
      !(p.caller && comms.contains(std::string(tasks.Find(caller)))))
    return false;
  if (!inos.empty()) {
    bool hit = false;
    for (int i : p.ino_fields) hit = hit || inos.contains(r.fields[i]);
    if (!hit) return false;
  }
  return true;
}

}  // namespace walfs::tracing
