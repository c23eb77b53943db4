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

// The line is built with appends and fmt::format_int, not format strings:
// trace_pipe formats every record on the daemon's CPU, and a format string
// parsed per field cost several hundred instructions a line
// (trace_bench's reader table has the text reader's cost per record).
void AppendPadded(std::string_view s, std::size_t width, bool right, std::string* out) {
  if (right && s.size() < width) out->append(width - s.size(), ' ');
  out->append(s);
  if (!right && s.size() < width) out->append(width - s.size(), ' ');
}

void AppendZeroPadded(std::uint64_t v, std::size_t width, std::string* out) {
  const fmt::format_int digits(v);
  if (digits.size() < width) out->append(width - digits.size(), '0');
  out->append(digits.data(), digits.size());
}

void AppendHex(std::uint64_t v, std::string* out) {
  char buf[18];
  char* p = buf + sizeof(buf);
  do {
    *--p = "0123456789abcdef"[v & 0xf];
    v >>= 4;
  } while (v != 0);
  *--p = 'x';
  *--p = '0';
  out->append(p, static_cast<std::size_t>(buf + sizeof(buf) - p));
}

// `comm-tid ` with ftrace's widths ("%16s-%-7d "), shared by record and lost
// lines so that their columns line up.
void AppendTask(std::string_view comm, std::uint64_t tid, std::string* out) {
  AppendPadded(comm, 16, true, out);
  out->push_back('-');
  const fmt::format_int t(tid);
  AppendPadded(std::string_view(t.data(), t.size()), 7, false, out);
  out->push_back(' ');
}

bool IsCallerEvent(const EventInfo& e) {
  return !e.fields.empty() && e.fields[0].name == "caller_pid";
}

bool IsTaskEvent(const EventInfo& e) {
  return e.fields.size() >= 2 && IsCallerEvent(e) && e.fields[1].name == "comm" &&
         e.fields[1].kind == FieldKind::kChars;
}

void AppendField(std::string_view name, FieldKind kind, std::uint64_t value, std::string* out) {
  out->push_back(' ');
  out->append(name);
  out->push_back('=');
  switch (kind) {
    case FieldKind::kU64: {
      const fmt::format_int v(value);
      out->append(v.data(), v.size());
      return;
    }
    case FieldKind::kI64: {
      const fmt::format_int v(static_cast<std::int64_t>(value));
      out->append(v.data(), v.size());
      return;
    }
    case FieldKind::kHex:
    case FieldKind::kChars:  // runs of them are printed by AppendTextLine
      break;
  }
  // Hex, or a kind this build does not know (a newer file): raw.
  AppendHex(value, out);
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
  out->push_back('[');
  AppendZeroPadded(r.cpu, 3, out);
  out->append("] ");
  const fmt::format_int secs(usecs / 1'000'000);
  AppendPadded(std::string_view(secs.data(), secs.size()), 5, true, out);
  out->push_back('.');
  AppendZeroPadded(usecs % 1'000'000, 6, out);
  out->append(": ");
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
    if (caller) {
      out->append(" worker=").append(CommOf(entry)).push_back('-');
      const fmt::format_int t(entry.tid);
      out->append(t.data(), t.size());
    }
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
