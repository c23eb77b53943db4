// TraceFilter: which records `walfs-trace print` shows, as perf script's
// and trace-cmd report's filters do: by task, event, inode and time.
//
//   TraceFilter f;
//   WALFS_RETURN_IF_ERROR(f.SetEvents("fs_write_*,journal/grant_sleep"));
//   f.pids = {4711};
//   if (f.Matches(entry, events, tasks)) print it;
//
// Every condition given must hold; a list matches when any of its items does.
//   pids    the task the line is printed under (the caller for fs records,
//           whose first field is caller_pid; else the ring's thread), or the
//           ring's thread (a FUSE worker's tid)
//   comms   the same tasks' names (fs_task records name the callers)
//   events  "subsystem", "subsystem/event", or a shell pattern (fnmatch) on
//           the printed name "subsystem_event" ("fs_*_exit")
//   inos    a field named ino, parent or newparent holding one of them
//   from_ns, to_ns   the record's timestamp in [from, to] (the seconds print
//           shows, in ns)
// A lost marker ([LOST N EVENTS]) is kept when its thread and time pass: the
// lost records may have matched the rest.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tracing/event_table.h"
#include "tracing/reader.h"
#include "tracing/text_format.h"

namespace walfs::tracing {

class TraceFilter {
 public:
  std::set<std::uint32_t> pids;
  std::set<std::string> comms;
  std::set<std::uint64_t> inos;
  std::uint64_t from_ns = 0;
  std::uint64_t to_ns = UINT64_MAX;

  // A comma-separated list of event patterns; InvalidArgument for an empty item.
  Status SetEvents(std::string_view list);
  // Whether an event list was set and `event` is on it.
  bool EventSelected(const EventInfo& event) const;
  bool empty() const {
    return pids.empty() && comms.empty() && inos.empty() && events_.empty() && from_ns == 0 && to_ns == UINT64_MAX;
  }

  // `tasks` names callers (the caller keeps it fed with every fs_task
  // record, shown or not).
  bool Matches(const TraceEntry& entry, const EventTable& events, const TaskNames& tasks) const;

 private:
  struct PerEvent {
    bool selected = true;
    bool caller = false;            // first field caller_pid
    std::vector<int> ino_fields;    // ino, parent, newparent
  };
  const PerEvent& Lookup(std::uint16_t id, const EventTable& events) const;

  std::vector<std::string> events_;
  PerEvent unknown_;  // what an id the table does not define gets
  mutable std::map<std::uint16_t, PerEvent> per_event_;  // memo, by id
};

}  // namespace walfs::tracing
