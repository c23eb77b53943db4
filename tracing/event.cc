#include "tracing/event.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "base/check.h"
#include "tracing/env_record.h"
#include "tracing/event_filter.h"

namespace walfs::tracing {

static_assert(std::is_trivially_destructible_v<EventDef>,
              "static EventDefs are read by threads that outlive other static destructors");

std::string_view FieldKindName(FieldKind kind) {
  constexpr std::string_view kNames[] = {"u64", "i64", "hex", "chars"};
  return kNames[static_cast<int>(kind)];
}

bool PackChars(std::string_view s, std::uint64_t* fields, int n) {
  const std::size_t room = static_cast<std::size_t>(n) * 8;
  char bytes[kMaxFields * 8] = {};
  std::memcpy(bytes, s.data(), std::min(s.size(), room));
  std::memcpy(fields, bytes, room);  // the record's byte order is the machine's
  return s.size() <= room;
}

std::string UnpackChars(const std::uint64_t* fields, std::size_t n) {
  char bytes[kMaxFields * 8];
  n = std::min<std::size_t>(n, kMaxFields);
  std::memcpy(bytes, fields, n * 8);
  const std::string_view all(bytes, n * 8);
  return std::string(all.substr(0, all.find('\0')));
}

std::string_view EventKindName(EventKind kind) {
  constexpr std::string_view kNames[] = {"instant", "begin", "end", "counter"};
  return kNames[static_cast<int>(kind)];
}

EventDef::EventDef(std::string_view subsystem, std::string_view name, EventKind kind,
                   std::initializer_list<FieldDef> fields)
    : subsystem_(subsystem),
      name_(name),
      kind_(kind) {
  WALFS_CHECK_MSG(fields.size() <= static_cast<std::size_t>(kMaxFields),
                  "trace event declared with too many fields");
  for (const FieldDef& f : fields) fields_[nfields_++] = f;
  Catalogue::Get().Register(this);
}

Catalogue& Catalogue::Get() {
  static Catalogue* catalogue = new Catalogue;  // never destroyed: events outlive main()
  // WALFS_TRACE_OUT: record this program (env_record.h).  After the static
  // above is set, so that the recorder may use the catalogue.
  static const bool env_checked = (StartRecordingFromEnvironment(*catalogue), true);
  (void)env_checked;
  return *catalogue;
}

bool Catalogue::AutoEnabledLocked(const EventDef* e) const {
  for (const std::string& p : auto_enable_) {
    if (p == "all" || p == e->subsystem_) return true;
    if (p.size() == e->subsystem_.size() + 1 + e->name_.size() && p.starts_with(e->subsystem_) &&
        p[e->subsystem_.size()] == '/' && p.ends_with(e->name_))
      return true;
  }
  return false;
}

void Catalogue::SetAutoEnable(std::vector<std::string> patterns) {
  MutexLock l(&mu_);
  auto_enable_ = std::move(patterns);
  for (EventDef* e : events_) {
    if (!AutoEnabledLocked(e)) continue;
    e->enabled_.store(true, std::memory_order_relaxed);
    RefreshLocked(e);
  }
}

void Catalogue::Register(EventDef* event) {
  MutexLock l(&mu_);
  for (const EventDef* e : events_)
    WALFS_CHECK_MSG(e->subsystem_ != event->subsystem_ || e->name_ != event->name_,
                    "trace event declared twice");
  WALFS_CHECK_MSG(events_.size() < 0xffff, "too many trace events");
  events_.push_back(event);
  event->id_ = static_cast<std::uint16_t>(events_.size());
  if (AutoEnabledLocked(event)) event->enabled_.store(true, std::memory_order_relaxed);
  RefreshLocked(event);
}

void Catalogue::RefreshLocked(EventDef* event) {
  event->active_.store(event->enabled_.load(std::memory_order_relaxed) && tracing_on(),
                       std::memory_order_relaxed);
}

std::vector<const EventDef*> Catalogue::Events() const {
  MutexLock l(&mu_);
  return {events_.begin(), events_.end()};
}

std::size_t Catalogue::size() const {
  MutexLock l(&mu_);
  return events_.size();
}

const EventDef* Catalogue::Find(std::string_view subsystem, std::string_view name) const {
  MutexLock l(&mu_);
  for (const EventDef* e : events_)
    if (e->subsystem_ == subsystem && e->name_ == name) return e;
  return nullptr;
}

const EventDef* Catalogue::ById(std::uint16_t id) const {
  MutexLock l(&mu_);
  if (id == 0 || id > events_.size()) return nullptr;
  return events_[id - 1];
}

std::vector<std::string> Catalogue::Subsystems() const {
  MutexLock l(&mu_);
  std::vector<std::string> out;
  for (const EventDef* e : events_)
    if (std::find(out.begin(), out.end(), e->subsystem_) == out.end()) out.emplace_back(e->subsystem_);
  return out;
}

Status Catalogue::SetFilter(const EventDef& event, std::string_view text) {
  EventDef* target = nullptr;
  MutexLock l(&mu_);
  for (EventDef* e : events_)
    if (e == &event) target = e;
  if (target == nullptr) return Status::NotFound("no such trace event: " + event.full_name());
  if (text == "0") {
    target->filter_.store(nullptr, std::memory_order_release);
    return Status::Ok();
  }
  std::unique_ptr<EventFilter> parsed;
  WALFS_ASSIGN_OR_RETURN(parsed, EventFilter::Parse(text, event));
  const std::string key = event.full_name() + "\n" + parsed->text();
  auto it = filters_.find(key);
  if (it == filters_.end()) it = filters_.emplace(key, std::move(parsed)).first;
  target->filter_.store(it->second.get(), std::memory_order_release);
  return Status::Ok();
}

std::string Catalogue::FilterText(const EventDef& event) const {
  const EventFilter* f = event.filter();
  return f == nullptr ? "none" : f->text();
}

Status Catalogue::SetEnabled(std::string_view subsystem, std::string_view name, bool on) {
  MutexLock l(&mu_);
  for (EventDef* e : events_) {
    if (e->subsystem_ == subsystem && e->name_ == name) {
      e->enabled_.store(on, std::memory_order_relaxed);
      RefreshLocked(e);
      return Status::Ok();
    }
  }
  return Status::NotFound("no trace event " + std::string(subsystem) + "/" + std::string(name));
}

Status Catalogue::SetSubsystemEnabled(std::string_view subsystem, bool on) {
  MutexLock l(&mu_);
  bool found = false;
  for (EventDef* e : events_) {
    if (e->subsystem_ != subsystem) continue;
    found = true;
    e->enabled_.store(on, std::memory_order_relaxed);
    RefreshLocked(e);
  }
  if (!found) return Status::NotFound("no trace subsystem " + std::string(subsystem));
  return Status::Ok();
}

void Catalogue::SetAllEnabled(bool on) {
  MutexLock l(&mu_);
  for (EventDef* e : events_) {
    e->enabled_.store(on, std::memory_order_relaxed);
    RefreshLocked(e);
  }
}

void Catalogue::SetTracingOn(bool on) {
  MutexLock l(&mu_);
  tracing_on_.store(on, std::memory_order_relaxed);
  for (EventDef* e : events_) RefreshLocked(e);
}

}  // namespace walfs::tracing
