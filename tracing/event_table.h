// EventTable: a plain-value copy of an event catalogue — id, subsystem,
// name, kind and typed fields for each event — that formatters and trace
// files work from.
//
// The live Catalogue holds EventDefs, which register themselves and cannot be
// built for a trace read back from a file (whose ids come from another
// process, possibly another build).  Everything that turns records into text
// or JSON therefore takes an EventTable:
//
//   EventTable live = EventTable::FromCatalogue(Catalogue::Get());
//   const EventInfo* e = live.ById(record.event_id);   // null: unknown id
//
// A TraceFileReader builds its table from the file's catalogue sections.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tracing/event.h"

namespace walfs::tracing {

struct FieldInfo {
  std::string name;
  FieldKind kind = FieldKind::kU64;

  bool operator==(const FieldInfo&) const = default;
};

struct EventInfo {
  std::uint16_t id = 0;  // never 0 for a real event: 0 marks lost records in trace files
  std::string subsystem;
  std::string name;
  EventKind kind = EventKind::kInstant;
  std::vector<FieldInfo> fields;  // at most kMaxFields

  // "subsystem_name", as ftrace prints it (EventDef::full_name()).
  std::string full_name() const { return subsystem + "_" + name; }
  bool operator==(const EventInfo&) const = default;
};

// The index of `e`'s field named `name`, or -1.  Readers find fields by
// name, so a trace of another build (more fields, another order) reads the same.
int FieldIndex(const EventInfo& e, std::string_view name);
// Every one of `names`' indexes, in order, into out[0..]; false when one is
// missing (an event of the same name from a build with other fields: not ours).
bool FieldIndexes(const EventInfo& e, std::initializer_list<std::string_view> names, int* out);

class EventTable {
 public:
  EventTable() = default;

  // Every event registered in `catalogue` now.
  static EventTable FromCatalogue(const Catalogue& catalogue);

  // InvalidArgument for id 0, more than kMaxFields fields, an empty name or
  // subsystem; AlreadyExists for an id already in the table with another
  // definition (adding an identical definition again is a no-op).
  Status Add(EventInfo event);

  const EventInfo* ById(std::uint16_t id) const;
  bool Contains(std::uint16_t id) const { return events_.count(id) != 0; }
  std::size_t size() const { return events_.size(); }
  bool empty() const { return events_.empty(); }

  // In id order.
  std::vector<const EventInfo*> Events() const;

 private:
  std::map<std::uint16_t, EventInfo> events_;
};

}  // namespace walfs::tracing
