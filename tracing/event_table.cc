#include "tracing/event_table.h"

#include <fmt/format.h>

namespace walfs::tracing {

int FieldIndex(const EventInfo& e, std::string_view name) {
  for (std::size_t i = 0; i < e.fields.size(); ++i)
    if (e.fields[i].name == name) return static_cast<int>(i);
  return -1;
}

bool FieldIndexes(const EventInfo& e, std::initializer_list<std::string_view> names, int* out) {
  for (std::string_view n : names) {
    *out = FieldIndex(e, n);
    if (*out++ < 0) return false;
  }
  return true;
}

EventTable EventTable::FromCatalogue(const Catalogue& catalogue) {
  EventTable table;
  for (const EventDef* def : catalogue.Events()) {
    EventInfo info;
    info.id = def->id();
    info.subsystem = std::string(def->subsystem());
    info.name = std::string(def->name());
    info.kind = def->kind();
    for (const FieldDef& f : def->fields()) info.fields.push_back({std::string(f.name), f.kind});
    // The catalogue enforces everything Add() checks, so this cannot fail.
    Status s = table.Add(std::move(info));
    WALFS_CHECK_MSG(s.ok(), "the live catalogue holds an invalid event");
  }
  return table;
}

Status EventTable::Add(EventInfo event) {
  if (event.id == 0) return Status::InvalidArgument("trace event id 0 is reserved");
  if (event.fields.size() > static_cast<std::size_t>(kMaxFields))
    return Status::InvalidArgument(
        fmt::format("trace event {} has {} fields (at most {})", event.id, event.fields.size(),
                    kMaxFields));
  if (event.subsystem.empty() || event.name.empty())
    return Status::InvalidArgument(fmt::format("trace event {} has an empty name", event.id));
  auto it = events_.find(event.id);
  if (it != events_.end()) {
    if (it->second == event) return Status::Ok();
    return Status::AlreadyExists(fmt::format("trace event id {} is both {} and {}", event.id,
                                             it->second.full_name(), event.full_name()));
  }
  const std::uint16_t id = event.id;
  events_.emplace(id, std::move(event));
  return Status::Ok();
}

const EventInfo* EventTable::ById(std::uint16_t id) const {
  auto it = events_.find(id);
  return it == events_.end() ? nullptr : &it->second;
}

std::vector<const EventInfo*> EventTable::Events() const {
  std::vector<const EventInfo*> out;
  out.reserve(events_.size());
  for (const auto& [id, info] : events_) out.push_back(&info);
  return out;
}

}  // namespace walfs::tracing
