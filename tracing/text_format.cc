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
void AppendTask(const TraceEntry& entry, std::string* out) {
  fmt::format_to(std::back_inserter(*out), "{:>16}-{:<7} ", CommOf(entry), entry.tid);
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
  }
  // A kind this build does not know (a newer file): print it raw.
  fmt::format_to(it, " {}={:#x}", name, value);
}

}  // namespace

void AppendTextLine(const TraceEntry& entry, const EventTable& events, std::string* out) {
  AppendTask(entry, out);
  auto it = std::back_inserter(*out);
  if (entry.type == TraceEntry::Type::kLost) {
    fmt::format_to(it, "[LOST {} EVENTS]\n", entry.lost);
    return;
  }
  const Record& r = entry.record;
  // ns2usecs(): round to the nearest microsecond, then split.
  const std::uint64_t usecs = r.timestamp / 1000 + (r.timestamp % 1000 >= 500 ? 1 : 0);
  fmt::format_to(it, "[{:03}] {:5}.{:06}: ", r.cpu, usecs / 1'000'000, usecs % 1'000'000);
  if (const EventInfo* e = events.ById(r.event_id)) {
    out->append(e->subsystem).append("_").append(e->name).append(":");
    for (std::size_t i = 0; i < e->fields.size(); ++i)
      AppendField(e->fields[i].name, e->fields[i].kind, r.fields[i], out);
  } else {
    fmt::format_to(it, "unknown_event_{}:", r.event_id);
    for (int i = 0; i < kMaxFields; ++i) fmt::format_to(it, " f{}={:#x}", i, r.fields[i]);
  }
  out->push_back('\n');
}

std::string FormatTextLine(const TraceEntry& entry, const EventTable& events) {
  std::string line;
  AppendTextLine(entry, events, &line);
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
