#include "mount/control_files.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <iterator>
#include <thread>

#include <fmt/format.h>

#include "tracing/clock.h"
#include "tracing/event_table.h"
#include "tracing/reader.h"
#include "tracing/record.h"
#include "tracing/text_format.h"
#include "tracing/trace_summary.h"

namespace walfs::mount {

const std::string_view kControlReadmeFiles =
    "walfs control directory (tracefs-like).  Every file is read whole and\n"
    "written whole; sizes show as 0.\n"
    "\n"
    "  README              this text\n"
    "  stats               filesystem, journal and tracer counters (snapshot at open)\n"
    "  trace               the trace buffer, not consumed (snapshot at open);\n"
    "                      write anything (or open with O_TRUNC) to clear it\n"
    "  trace_pipe          consuming read; blocks until events arrive\n"
    "  trace_pipe_raw      the same records as a binary trace file stream, one\n"
    "                      section per thread buffer (walfs-trace record --mount)\n"
    "  tracing_on          1/0: record or not (events keep their enable bits)\n"
    "  events/enable       1/0: every event; reads X when mixed\n"
    "  events/<subsystem>/enable          1/0/X for one subsystem\n"
    "  events/<subsystem>/<event>/enable  1/0 for one event\n"
    "  events/<subsystem>/<event>/format  the record layout and print format\n"
    "  events/<subsystem>/<event>/filter  e.g. 'caller_pid == 4711 && ino == 12'; 0 = none\n"
    "  set_event           the enabled events (subsystem:event); write names to enable,\n"
    "                      !names to disable, > (O_TRUNC) first disables every event\n"
    "  trace_marker        a line written here is recorded in the trace (user_marker)\n"
    "  options/wakeup             immediate | deferred\n"
    "  options/wakeup_delay_us    deferred wakeup delay\n"
    "  options/buffer_percent     early wakeup watermark, 0 = off\n"
    "  options/safety_timeout_ms  blocked reader re-check period, 0 = never\n"
    "  options/recursion          safe | fast | context\n"
    "  options/overwrite          1 = flight recorder, 0 = discard when full\n"
    "  options/buffer_size_kb     per-thread ring size\n"
    "  options/trace_clock        [current] and available clocks; write a name\n"
    "  options/grant_wake         inline | waking | wakeq (log-space waiter wakeups)\n";

const std::string_view kControlReadmeExample = "  echo 1 > events/journal/enable; cat trace_pipe\n";

std::string_view TrimValue(std::string_view s) {
  constexpr std::string_view kBlank = " \t\n";
  const std::size_t b = s.find_first_not_of(kBlank);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kBlank) - b + 1);
}

Result<bool> ParseControlBool(std::string_view s) {
  if (s == "0") return false;
  if (s == "1") return true;
  return Status::InvalidArgument(fmt::format("'{}' is not 0 or 1", s));
}

Result<std::uint32_t> ParseControlU32(std::string_view s) {
  std::uint32_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    return Status::InvalidArgument(fmt::format("'{}' is not a number in 0..4294967295", s));
  return v;
}

std::string EnableText(const std::vector<const tracing::EventDef*>& events,
                       std::string_view subsystem) {
  bool any_on = false;
  bool any_off = false;
  for (const tracing::EventDef* e : events) {
    if (!subsystem.empty() && e->subsystem() != subsystem) continue;
    (e->enabled() ? any_on : any_off) = true;
  }
  return any_on && any_off ? "X\n" : any_on ? "1\n" : "0\n";
}

std::string SetEventText(const std::vector<const tracing::EventDef*>& events) {
  std::string out;
  for (const tracing::EventDef* e : events)
    if (e->enabled()) out += fmt::format("{}:{}\n", e->subsystem(), e->name());
  return out;
}

Result<std::vector<std::pair<const tracing::EventDef*, bool>>> ParseSetEvent(
    const std::vector<const tracing::EventDef*>& events, std::string_view value) {
  std::vector<std::pair<const tracing::EventDef*, bool>> changes;
  std::size_t at = 0;
  while (at < value.size()) {
    const std::size_t begin = value.find_first_not_of(" \t\n", at);
    if (begin == std::string_view::npos) break;
    const std::size_t end = std::min(value.find_first_of(" \t\n", begin), value.size());
    std::string_view item = value.substr(begin, end - begin);
    at = end;
    const bool on = !item.starts_with('!');
    if (!on) item.remove_prefix(1);
    const std::size_t colon = item.find(':');
    std::string_view subsystem = item.substr(0, colon);
    std::string_view name = colon == std::string_view::npos ? "*" : item.substr(colon + 1);
    if (subsystem.empty() || name.empty())
      return Status::InvalidArgument(fmt::format("set_event: '{}' is not subsystem:event", item));
    bool matched = false;
    for (const tracing::EventDef* e : events)
      if ((subsystem == "*" || e->subsystem() == subsystem) && (name == "*" || e->name() == name)) {
        changes.emplace_back(e, on);
        matched = true;
      }
    if (!matched) return Status::InvalidArgument(fmt::format("set_event: no event matches '{}'", item));
  }
  return changes;
}

std::string FormatText(const tracing::EventDef& e) {
  std::string out = fmt::format(
      "name: {}\nID: {}\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:unsigned short common_cpu;\toffset:2;\tsize:2;\tsigned:0;\n"
      "\tfield:unsigned int common_pid;\toffset:4;\tsize:4;\tsigned:0;\n"
      "\tfield:u64 common_timestamp;\toffset:8;\tsize:8;\tsigned:0;\n\n",
      e.name(), e.id());
  std::string print;
  std::string args;
  std::size_t offset = offsetof(tracing::Record, fields);
  for (const tracing::FieldDef& f : e.fields()) {
    if (f.kind == tracing::FieldKind::kChars) {  // 8 bytes of a string (a run: one string)
      fmt::format_to(std::back_inserter(out), "\tfield:char {}[8];\toffset:{};\tsize:8;\tsigned:0;\n",
                     f.name, offset);
      offset += 8;
      if (print.find(fmt::format("{}=", f.name)) == std::string::npos) {
        fmt::format_to(std::back_inserter(print), "{}{}=%s", print.empty() ? "" : " ", f.name);
        fmt::format_to(std::back_inserter(args), ", REC->{}", f.name);
      }
      continue;
    }
    const bool is_signed = f.kind == tracing::FieldKind::kI64;
    fmt::format_to(std::back_inserter(out), "\tfield:{} {};\toffset:{};\tsize:8;\tsigned:{};\n",
                   is_signed ? "s64" : "u64", f.name, offset, is_signed ? 1 : 0);
    offset += 8;
    const std::string_view conv = f.kind == tracing::FieldKind::kHex ? "0x%llx"
                                  : is_signed                        ? "%lld"
                                                                     : "%llu";
    fmt::format_to(std::back_inserter(print), "{}{}={}", print.empty() ? "" : " ", f.name, conv);
    fmt::format_to(std::back_inserter(args), ", REC->{}", f.name);
  }
  fmt::format_to(std::back_inserter(out), "\nprint fmt: \"{}\"{}\n", print, args);
  return out;
}

std::string StatsText(std::string mount_stats, const tracing::TracerStats& s, bool tracing_on) {
  std::string out = std::move(mount_stats);
  if (!out.empty() && out.back() != '\n') out.push_back('\n');
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "tracer:\n"
                 "  tracing_on: {}\n  entries: {}\n  overruns: {}\n  drops: {}\n"
                 "  recursion_misses: {}\n  writer_wake_syscalls: {}\n  lost_unattached: {}\n"
                 "  reader_sleeps: {}\n  reader_naps: {}\n  reader_wakeups: {}\n  waker_arms: {}\n"
                 "  watermark_wakes: {}\n  safety_timeouts: {}\n  membarrier: {}\n  rings: {}\n",
                 tracing_on ? 1 : 0, s.totals.entries,
                 s.totals.overruns, s.totals.drops, s.totals.recursion_misses,
                 s.totals.writer_wake_syscalls, s.lost_unattached, s.reader_sleeps,
                 s.reader_naps, s.reader_wakeups, s.waker_arms, s.watermark_wakes, s.safety_timeouts,
                 s.membarrier ? 1 : 0, s.rings.size());
  for (const tracing::RingStats& r : s.rings)
    fmt::format_to(it,
                   "  ring tid={} comm={} capacity={} unread={} entries={} overruns={} drops={} "
                   "recursion_misses={} retired={}\n",
                   r.tid, r.comm.empty() ? "<...>" : r.comm, r.capacity, r.unread,
                   r.counters.entries, r.counters.overruns, r.counters.drops,
                   r.counters.recursion_misses, r.retired ? 1 : 0);
  return out;
}

std::string TraceText(tracing::Tracer* tracer) {
  const std::vector<tracing::TraceEntry> entries = tracing::TraceReader::Snapshot(tracer);
  tracing::TraceSummary sum;
  for (const tracing::TraceEntry& e : entries) sum.Add(e);
  std::string out = tracing::FormatTextHeader(sum.records(), sum.records() + sum.lost(),
                                              std::max(1u, std::thread::hardware_concurrency()));
  const tracing::EventTable table = tracing::EventTable::FromCatalogue(tracing::Catalogue::Get());
  tracing::TaskNames tasks;
  for (const tracing::TraceEntry& e : entries) tracing::AppendTextLine(e, table, &out, &tasks);
  return out;
}

std::string TracerOptionText(ControlOption option, const tracing::TracerOptions& o) {
  switch (option) {
    case ControlOption::kWakeup: return fmt::format("{}\n", tracing::WakeupModeName(o.wakeup));
    case ControlOption::kWakeupDelayUs: return fmt::format("{}\n", o.wakeup_delay_us);
    case ControlOption::kBufferPercent: return fmt::format("{}\n", o.buffer_percent);
    case ControlOption::kSafetyTimeoutMs: return fmt::format("{}\n", o.safety_timeout_ms);
    case ControlOption::kRecursion: return fmt::format("{}\n", tracing::RecursionModeName(o.recursion));
    case ControlOption::kOverwrite: return o.overwrite ? "1\n" : "0\n";
    case ControlOption::kBufferSizeKb: return fmt::format("{}\n", o.buffer_size_kb);
    case ControlOption::kTraceClock: {
      // tracefs style: every usable clock, the current one in brackets.
      std::string out;
      for (tracing::ClockKind c : {tracing::ClockKind::kMonotonic, tracing::ClockKind::kTsc}) {
        if (c == tracing::ClockKind::kTsc && !tracing::TscUsable() && o.clock != c) continue;
        if (!out.empty()) out.push_back(' ');
        const std::string_view name = tracing::ClockKindName(c);
        out += c == o.clock ? fmt::format("[{}]", name) : std::string(name);
      }
      return out + "\n";
    }
    case ControlOption::kGrantWake: break;
  }
  WALFS_CHECK_MSG(false, "not a tracer option");
  return {};
}

Status ParseTracerOption(ControlOption option, std::string_view v,
                         tracing::TracerOptions* options) {
  tracing::TracerOptions o = *options;
  switch (option) {
    case ControlOption::kWakeup: {
      WALFS_ASSIGN_OR_RETURN(o.wakeup, tracing::ParseWakeupMode(v));
      break;
    }
    case ControlOption::kWakeupDelayUs: {
      WALFS_ASSIGN_OR_RETURN(o.wakeup_delay_us, ParseControlU32(v));
      break;
    }
    case ControlOption::kBufferPercent: {
      WALFS_ASSIGN_OR_RETURN(o.buffer_percent, ParseControlU32(v));
      break;
    }
    case ControlOption::kSafetyTimeoutMs: {
      WALFS_ASSIGN_OR_RETURN(o.safety_timeout_ms, ParseControlU32(v));
      break;
    }
    case ControlOption::kRecursion: {
      WALFS_ASSIGN_OR_RETURN(o.recursion, tracing::ParseRecursionMode(v));
      break;
    }
    case ControlOption::kOverwrite: {
      WALFS_ASSIGN_OR_RETURN(o.overwrite, ParseControlBool(v));
      break;
    }
    case ControlOption::kBufferSizeKb: {
      WALFS_ASSIGN_OR_RETURN(o.buffer_size_kb, ParseControlU32(v));
      break;
    }
    case ControlOption::kTraceClock: {
      WALFS_ASSIGN_OR_RETURN(o.clock, tracing::ParseClockKind(v));
      if (o.clock == tracing::ClockKind::kTsc && !tracing::TscUsable())
        return Status::InvalidArgument("trace clock tsc: no invariant TSC on this machine");
      break;
    }
    case ControlOption::kGrantWake: WALFS_CHECK_MSG(false, "grant_wake is not a tracer option");
  }
  *options = o;
  return Status::Ok();
}

}  // namespace walfs::mount
