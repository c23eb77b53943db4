// Event catalogue: every trace event is declared once, with its subsystem,
// name, kind and typed fields, and enabled per event or per subsystem at run
// time.
//
// Declare (in the .cc that emits it, or a *_events.cc of the subsystem):
//
//   WALFS_TRACE_EVENT(kGrantSleep, "journal", "grant_sleep", EventKind::kInstant,
//                     {"tid"}, {"need"}, {"free"});
//
// and emit:
//
//   WALFS_TRACE(kGrantSleep, tic->tid(), need, free);
//
// A disabled event costs one relaxed load and a not-taken branch: `active`
// is true only when the event is enabled and tracing is on.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "tracing/record.h"

namespace walfs::tracing {

class EventFilter;

enum class FieldKind : std::uint8_t {
  kU64 = 0,  // printed in decimal
  kI64 = 1,  // printed in decimal, signed
  kHex = 2,  // printed as 0x...
  // 8 bytes of a string, NUL padded.  Consecutive kChars fields with the
  // same name are one string of 8 bytes each (a file name, a comm), printed
  // as name=value: {"name", kChars}, {"name", kChars}, {"name", kChars}.
  kChars = 3,
};

// Packs `s` into `n` kChars fields (8*n bytes, NUL padded); false when `s`
// was longer and was cut.
bool PackChars(std::string_view s, std::uint64_t* fields, int n);
// The string held by `n` kChars fields (up to the first NUL).
std::string UnpackChars(const std::uint64_t* fields, std::size_t n);

// How exporters treat an event (Chrome trace JSON: durations, instants,
// counters).  A kBegin and the next kEnd of the same name prefix on the same
// thread form a duration: "fs_write_enter" / "fs_write_exit".
enum class EventKind : std::uint8_t {
  kInstant = 0,
  kBegin = 1,
  kEnd = 2,
  kCounter = 3,  // every field is a counter series
};

std::string_view FieldKindName(FieldKind kind);
std::string_view EventKindName(EventKind kind);

struct FieldDef {
  FieldDef(const char* field_name, FieldKind field_kind = FieldKind::kU64)  // NOLINT
      : name(field_name), kind(field_kind) {}
  std::string_view name;
  FieldKind kind;
};

// Trivially destructible on purpose: events are static objects that threads
// still running at exit (the WALFS_TRACE_OUT recorder, a daemon's workers)
// may read after other translation units' static destructors ran, so an
// EventDef must hold nothing that dies.  Its names are string literals.
class EventDef {
 public:
  // Registers the event in the Catalogue.  `subsystem` and `name` must have
  // static storage (WALFS_TRACE_EVENT passes literals): they are not copied.
  EventDef(std::string_view subsystem, std::string_view name, EventKind kind,
           std::initializer_list<FieldDef> fields);
  EventDef(const EventDef&) = delete;
  EventDef& operator=(const EventDef&) = delete;

  std::uint16_t id() const { return id_; }
  std::string_view subsystem() const { return subsystem_; }
  std::string_view name() const { return name_; }
  // "subsystem_name", as ftrace prints it.
  std::string full_name() const { return std::string(subsystem_) + "_" + std::string(name_); }
  EventKind kind() const { return kind_; }
  std::span<const FieldDef> fields() const { return {fields_.data(), nfields_}; }

  bool active() const { return active_.load(std::memory_order_relaxed); }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  // The filter a record must pass to be written (event_filter.h); null: none.
  const EventFilter* filter() const { return filter_.load(std::memory_order_acquire); }

  // Records the event (callers go through WALFS_TRACE, which checks active()).
  template <typename... Args>
  void Emit(Args... args) const {
    static_assert(sizeof...(Args) <= kMaxFields, "too many fields for one record");
    const std::uint64_t values[kMaxFields] = {static_cast<std::uint64_t>(args)...};
    CommitEvent(*this, values);
  }

 private:
  friend class Catalogue;
  static void CommitEvent(const EventDef& event, const std::uint64_t* values);

  const std::string_view subsystem_;
  const std::string_view name_;
  const EventKind kind_;
  std::array<FieldDef, kMaxFields> fields_{"", "", "", "", "", ""};
  std::size_t nfields_ = 0;
  std::uint16_t id_ = 0;
  std::atomic<bool> enabled_{false};
  std::atomic<bool> active_{false};  // enabled_ && tracing on
  std::atomic<const EventFilter*> filter_{nullptr};  // owned by the Catalogue
};

// The process-wide list of events.  Ids are assigned in registration order
// from 1; trace files carry the catalogue, so ids need not be stable across
// builds.
class Catalogue {
 public:
  static Catalogue& Get();

  std::vector<const EventDef*> Events() const;
  std::size_t size() const;  // events registered so far (ids 1..size)
  const EventDef* Find(std::string_view subsystem, std::string_view name) const;
  const EventDef* ById(std::uint16_t id) const;
  std::vector<std::string> Subsystems() const;

  // NotFound for an unknown event or subsystem.
  Status SetEnabled(std::string_view subsystem, std::string_view name, bool on);
  Status SetSubsystemEnabled(std::string_view subsystem, bool on);
  void SetAllEnabled(bool on);
  // Installs a filter on one event (event_filter.h's grammar); "0" removes
  // it.  InvalidArgument for text that does not parse; the event keeps its
  // filter then.  FilterText: the installed text, or "none".
  Status SetFilter(const EventDef& event, std::string_view text);
  std::string FilterText(const EventDef& event) const;

  // Enables every event, present and future, that matches one of
  // `patterns` ("all", "subsystem" or "subsystem/event"): events registered
  // later (static initialisers of other files) are enabled as they come.
  void SetAutoEnable(std::vector<std::string> patterns);

  // Global switch (tracefs `tracing_on`); events stay individually enabled.
  void SetTracingOn(bool on);
  bool tracing_on() const { return tracing_on_.load(std::memory_order_relaxed); }

 private:
  friend class EventDef;
  Catalogue() = default;
  void Register(EventDef* event) EXCLUDES(mu_);
  void RefreshLocked(EventDef* event) REQUIRES(mu_);

  mutable Mutex mu_;
  std::vector<EventDef*> events_ GUARDED_BY(mu_);  // index = id - 1
  std::vector<std::string> auto_enable_ GUARDED_BY(mu_);
  // Every filter installed, by event and text: never freed (a thread may be
  // evaluating one as it is replaced; events outlive main()).
  std::map<std::string, std::unique_ptr<EventFilter>, std::less<>> filters_ GUARDED_BY(mu_);
  bool AutoEnabledLocked(const EventDef* event) const REQUIRES(mu_);
  std::atomic<bool> tracing_on_{true};
};

}  // namespace walfs::tracing

#define WALFS_TRACE_EVENT(var, subsystem, name, kind, ...) \
  ::walfs::tracing::EventDef var(subsystem, name, kind, {__VA_ARGS__})

#define WALFS_TRACE(event, ...)                                  \
  do {                                                           \
    if (__builtin_expect((event).active(), 0)) (event).Emit(__VA_ARGS__); \
  } while (0)
