#include "tracing/chrome_json.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

namespace walfs::tracing {

namespace {

using Json = nlohmann::ordered_json;  // keys in the order written: easier to read

std::string StripSuffix(std::string name, std::string_view suffix) {
  if (name.size() > suffix.size() && std::string_view(name).ends_with(suffix))
    name.resize(name.size() - suffix.size());
  return name;
}

// ts in microseconds: Chrome's unit, whatever displayTimeUnit says.
double Micros(std::uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

Json FieldValue(FieldKind kind, std::uint64_t v) {
  switch (kind) {
    case FieldKind::kU64:
      return v;
    case FieldKind::kI64:
      return static_cast<std::int64_t>(v);
    case FieldKind::kHex:
    case FieldKind::kChars:
      break;
  }
  return fmt::format("{:#x}", v);
}

Json FieldArgs(const EventInfo& e, const Record& r) {
  Json args = Json::object();
  for (std::size_t i = 0; i < e.fields.size();) {
    const FieldInfo& f = e.fields[i];
    if (f.kind != FieldKind::kChars) {
      args[f.name] = FieldValue(f.kind, r.fields[i++]);
      continue;
    }
    std::size_t n = 1;  // a run of kChars fields of one name is one string
    while (i + n < e.fields.size() && e.fields[i + n].kind == FieldKind::kChars &&
           e.fields[i + n].name == f.name)
      ++n;
    // JSON strings must be UTF-8: bytes outside printable ASCII become \xNN.
    std::string s;
    for (unsigned char c : UnpackChars(&r.fields[i], n)) {
      if (c >= 0x20 && c < 0x7f && c != '\\')
        s.push_back(static_cast<char>(c));
      else
        s += fmt::format("\\x{:02x}", c);
    }
    args[f.name] = s;
    i += n;
  }
  return args;
}

// Counter series must be numbers, so hex fields are plain numbers here.
Json CounterArgs(const EventInfo& e, const Record& r) {
  Json args = Json::object();
  for (std::size_t i = 0; i < e.fields.size(); ++i) {
    if (e.fields[i].kind == FieldKind::kI64)
      args[e.fields[i].name] = static_cast<std::int64_t>(r.fields[i]);
    else
      args[e.fields[i].name] = r.fields[i];
  }
  return args;
}

}  // namespace

ChromeTraceWriter::ChromeTraceWriter(std::ostream* out, const EventTable* events,
                                     ChromeTraceOptions options)
    : out_(out), events_(events), options_(std::move(options)) {
  *out_ << "{\"traceEvents\":[\n";
  if (!options_.process_name.empty()) {
    Json m = {{"name", "process_name"}, {"ph", "M"}, {"pid", options_.pid},
              {"args", {{"name", options_.process_name}}}};
    Emit(m.dump(-1, ' ', false, Json::error_handler_t::replace));
  }
}

void ChromeTraceWriter::Emit(const std::string& event_json) {
  if (!first_) *out_ << ",\n";
  first_ = false;
  *out_ << event_json;
}

void ChromeTraceWriter::NoteThread(const TraceEntry& entry) {
  if (!named_threads_.insert(entry.tid).second || !entry.comm) return;
  Json m = {{"name", "thread_name"}, {"ph", "M"}, {"pid", options_.pid}, {"tid", entry.tid},
            {"args", {{"name", *entry.comm}}}};
  Emit(m.dump(-1, ' ', false, Json::error_handler_t::replace));
}

void ChromeTraceWriter::AddLost(std::uint32_t tid, std::uint64_t count,
                                std::uint64_t timestamp_ns) {
  Json ev = {{"name", "lost_events"}, {"ph", "i"}, {"s", "t"}, {"ts", Micros(timestamp_ns)},
             {"pid", options_.pid}, {"tid", tid}, {"args", {{"count", count}}}};
  Emit(ev.dump(-1, ' ', false, Json::error_handler_t::replace));
}

void ChromeTraceWriter::Add(const TraceEntry& entry) {
  WALFS_CHECK_MSG(!finished_, "ChromeTraceWriter::Add after Finish");
  NoteThread(entry);
  if (entry.type == TraceEntry::Type::kLost) {
    if (entry.record.timestamp != 0)
      AddLost(entry.tid, entry.lost, entry.record.timestamp);
    else
      unstamped_lost_[entry.tid] += entry.lost;
    return;
  }
  AddRecord(entry);
}

void ChromeTraceWriter::AddRecord(const TraceEntry& entry) {
  const Record& r = entry.record;
  last_ts_ = r.timestamp;
  // Losses are reported before the record they preceded in the ring.
  if (auto it = unstamped_lost_.find(entry.tid); it != unstamped_lost_.end()) {
    AddLost(entry.tid, it->second, r.timestamp);
    unstamped_lost_.erase(it);
  }

  Json ev = Json::object();
  auto base = [&](const std::string& name, const char* cat, const char* ph) {
    ev["name"] = name;
    ev["cat"] = cat;
    ev["ph"] = ph;
    ev["ts"] = Micros(r.timestamp);
    ev["pid"] = options_.pid;
    ev["tid"] = entry.tid;
  };
  auto emit = [&] { Emit(ev.dump(-1, ' ', false, Json::error_handler_t::replace)); };

  const EventInfo* e = events_->ById(r.event_id);
  if (e == nullptr) {
    base(fmt::format("unknown_event_{}", r.event_id), "unknown", "i");
    ev["s"] = "t";
    Json args = Json::object();
    for (int i = 0; i < kMaxFields; ++i)
      args[fmt::format("f{}", i)] = fmt::format("{:#x}", r.fields[i]);
    ev["args"] = std::move(args);
    emit();
    return;
  }

  const std::string full = e->full_name();
  switch (e->kind) {
    case EventKind::kBegin: {
      std::string name = StripSuffix(full, "_enter");
      base(name, e->subsystem.c_str(), "B");
      ev["args"] = FieldArgs(*e, r);
      emit();
      open_[entry.tid].push_back({std::move(name), e->subsystem});
      return;
    }
    case EventKind::kEnd: {
      const std::string name = StripSuffix(full, "_exit");
      std::vector<OpenSlice>& stack = open_[entry.tid];
      std::size_t depth = stack.size();
      while (depth > 0 && stack[depth - 1].name != name) --depth;
      if (depth == 0) {  // no matching begin (lost, or before the trace started)
        base(full, e->subsystem.c_str(), "i");
        ev["s"] = "t";
        ev["args"] = FieldArgs(*e, r);
        emit();
        return;
      }
      // Slices nest: inner slices still open ended before this one did.
      while (stack.size() > depth) {
        Json inner = {{"name", stack.back().name}, {"cat", stack.back().cat}, {"ph", "E"},
                      {"ts", Micros(r.timestamp)}, {"pid", options_.pid}, {"tid", entry.tid},
                      {"args", {{"truncated", true}}}};
        Emit(inner.dump(-1, ' ', false, Json::error_handler_t::replace));
        stack.pop_back();
      }
      stack.pop_back();
      base(name, e->subsystem.c_str(), "E");
      ev["args"] = FieldArgs(*e, r);
      emit();
      return;
    }
    case EventKind::kCounter:
      base(full, e->subsystem.c_str(), "C");
      ev["args"] = CounterArgs(*e, r);
      emit();
      return;
    case EventKind::kInstant:
      break;
  }
  base(full, e->subsystem.c_str(), "i");
  ev["s"] = "t";
  ev["args"] = FieldArgs(*e, r);
  emit();
}

Status ChromeTraceWriter::Finish() {
  WALFS_CHECK_MSG(!finished_, "ChromeTraceWriter::Finish twice");
  for (const auto& [tid, count] : unstamped_lost_) AddLost(tid, count, last_ts_);
  unstamped_lost_.clear();
  finished_ = true;
  *out_ << "\n],\"displayTimeUnit\":\"ns\"}\n";
  out_->flush();
  if (!*out_) return Status::IoError("writing the Chrome trace JSON failed");
  return Status::Ok();
}

std::string ToChromeJson(std::span<const TraceEntry> entries, const EventTable& events,
                         const ChromeTraceOptions& options) {
  std::ostringstream out;
  ChromeTraceWriter w(&out, &events, options);
  for (const TraceEntry& e : entries) w.Add(e);
  Status s = w.Finish();
  WALFS_CHECK_MSG(s.ok(), "a string stream failed");
  return out.str();
}

}  // namespace walfs::tracing
