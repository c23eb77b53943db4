#include "tracing/text_format.h"

#include <fmt/format.h>

#include <iterator>
#include <string_view>

namespace walfs::tracing {

namespace {

constexpr std::string_view kUnknownComm = "<...>";

std::string_view CommOf(const TraceEntry& entry) {
  return entry.comm ? std::string_view(*entry.comm) : kUnknownComm;
}

// `comm-tid ` with ftrace's widths ("%16s-%-7d "), shared by record and lost
// lines so that their columns line up.
void AppendTask(std::string_view comm, std::uint64_t tid, std::string* out) {
  fmt::format_to(std::back_inserter(*out), "{:>16}-{:<7} ", comm, tid);
}

bool IsCallerEvent(const EventInfo& e) {
  return !e.fields.empty() && e.fields[0].name == "caller_pid";
}

bool IsTaskEvent(const EventInfo& e) {
  return e.fields.size() >= 2 && IsCallerEvent(e) && e.fields[1].name == "comm" &&
         e.fields[1].kind == FieldKind::kChars;
}

void AppendField(std::string_view name, FieldKind kind, std::uint64_t value, std::string* out) {
  auto it = std::back_inserter(*out);
  switch (kind) {
    case FieldKind::kU64:
      fmt::format_to(it, " {}={}", name, value);
      return;
    case FieldKind::kI64:
      fmt::format_to(it, " {}={}", name, static_cast<std::int64_t>(value));
      return;
    case FieldKind::kHex:
      fmt::format_to(it, " {}={:#x}", name, value);
      return;
    case FieldKind::kChars:
      break;  // runs of them are printed by AppendFields
  }
  // A kind this build does not know (a newer file): print it raw.
  fmt::format_to(it, " {}={:#x}", name, value);
}

}  // namespace

void TaskNames::Observe(const TraceEntry& entry, const EventInfo& event) {
  if (entry.type != TraceEntry::Type::kRecord || !IsTaskEvent(event)) return;
  std::size_t n = 1;
  while (1 + n < event.fields.size() && event.fields[1 + n].name == "comm") ++n;
  names_[static_cast<std::uint32_t>(entry.record.fields[0])] = UnpackChars(&entry.record.fields[1], n);
}

std::string_view TaskNames::Find(std::uint32_t pid) const {
  if (pid == 0) return "<kernel>";  // FUSE: a request the kernel made on its own
  auto it = names_.find(pid);
  return it == names_.end() ? kUnknownComm : std::string_view(it->second);
}

void AppendTextLine(const TraceEntry& entry, const EventTable& events, std::string* out,
                    TaskNames* tasks) {
  auto it = std::back_inserter(*out);
  if (entry.type == TraceEntry::Type::kLost) {
    AppendTask(CommOf(entry), entry.tid, out);
    fmt::format_to(it, "[LOST {} EVENTS]\n", entry.lost);
    return;
  }
  const Record& r = entry.record;
  const EventInfo* event = events.ById(r.event_id);
  const bool caller = event != nullptr && IsCallerEvent(*event);
  if (caller && tasks != nullptr) tasks->Observe(entry, *event);
  if (caller) {
    const auto pid = static_cast<std::uint32_t>(r.fields[0]);
    const std::string_view comm = tasks != nullptr ? tasks->Find(pid)
                                  : pid == 0         ? std::string_view("<kernel>")
                                                     : kUnknownComm;
    AppendTask(comm, pid, out);
  } else {
    AppendTask(CommOf(entry), entry.tid, out);
  }
  // ns2usecs(): round to the nearest microsecond, then split.
  const std::uint64_t usecs = r.timestamp / 1000 + (r.timestamp % 1000 >= 500 ? 1 : 0);
  fmt::format_to(it, "[{:03}] {:5}.{:06}: ", r.cpu, usecs / 1'000'000, usecs % 1'000'000);
  if (const EventInfo* e = event) {
    out->append(e->subsystem).append("_").append(e->name).append(":");
    for (std::size_t i = caller ? 1 : 0; i < e->fields.size();) {
      const FieldInfo& f = e->fields[i];
      if (f.kind != FieldKind::kChars) {
        AppendField(f.name, f.kind, r.fields[i++], out);
        continue;
      }
      std::size_t n = 1;  // the run of kChars fields of this name: one string
      while (i + n < e->fields.size() && e->fields[i + n].kind == FieldKind::kChars &&
             e->fields[i + n].name == f.name)
        ++n;
      out->append(" ").append(f.name).append("=");
      for (unsigned char c : UnpackChars(&r.fields[i], n)) {
        if (c >= 0x21 && c < 0x7f && c != '\\')
          out->push_back(static_cast<char>(c));
        else  // spaces and bytes that are not printable, so that fields stay split by spaces
          fmt::format_to(it, "\\x{:02x}", c);
      }
      i += n;
    }
    if (caller) fmt::format_to(it, " worker={}-{}", CommOf(entry), entry.tid);
  } else {
    fmt::format_to(it, "unknown_event_{}:", r.event_id);
    for (int i = 0; i < kMaxFields; ++i) fmt::format_to(it, " f{}={:#x}", i, r.fields[i]);
  }
  out->push_back('\n');
}

std::string FormatTextLine(const TraceEntry& entry, const EventTable& events,
                           TaskNames* tasks) {
  std::string line;
  AppendTextLine(entry, events, &line, tasks);
  line.pop_back();  // the newline
  return line;
}

std::string FormatTextHeader(std::uint64_t entries_in_buffer, std::uint64_t entries_written,
                             unsigned cpus) {
  return fmt::format(
      "# tracer: nop\n"
      "#\n"
      "# entries-in-buffer/entries-written: {}/{}   #P:{}\n"
      "#\n"
      "#           TASK-PID     CPU#     TIMESTAMP  FUNCTION\n"
      "#              | |         |         |         |\n",
      entries_in_buffer, entries_written, cpus);
}

}  // namespace walfs::tracing
