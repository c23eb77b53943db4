#include "tracing/log_space_story.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>

#include "base/clock.h"

namespace walfs::tracing {

namespace {

// journal/wake_mode.h's names, by the value the events carry.
std::string ModeName(int mode) {
  switch (mode) {
    case 0: return "inline";
    case 1: return "waking";
    case 2: return "wakeq";
    case -1: return "?";
  }
  return std::to_string(mode);
}

std::string HeadName(int head) {
  switch (head) {
    case 0: return "reserve";
    case 1: return "write";
  }
  return std::to_string(head);
}

}  // namespace

const LogSpaceStory::Resolved& LogSpaceStory::Resolve(std::uint16_t id, const EventTable& events) {
  Resolved& r = resolved_[id];
  if (r.role != Role::kUnresolved) return r;
  const EventInfo* e = events.ById(id);
  if (e == nullptr) return r;  // not defined yet: look again at the next record
  r.role = Role::kNone;
  auto need = [&](Role role, std::initializer_list<std::string_view> names) {
    if (!FieldIndexes(*e, names, r.f)) return;
    r.role = role;
    r.mode = FieldIndex(*e, "mode");
  };
  const std::string& s = e->subsystem;
  const std::string& n = e->name;
  if (s == "journal" && n == "grant_sleep") {
    need(Role::kSleep, {"head"});
  } else if (s == "journal" && n == "grant_wake") {
    need(Role::kWake, {"head"});
  } else if (s == "journal" && n == "grant_wakeup") {
    need(Role::kWakeup, {"head", "got_space"});
  } else if (s == "journal" && n == "grant_granted") {
    need(Role::kGranted, {"head", "wait_ns"});
  } else if (s == "journal" && n == "wake_batch") {
    need(Role::kBatch, {"head"});
  } else if (s == "log" && n == "log_force") {
    need(Role::kForce, {"wait_ns", "already"});
  } else if (s == "journal" && n == "grant_bytes") {
    need(Role::kBytes, {"reserve", "write", "tail_space", "log_bytes"});
  }
  return r;
}

void LogSpaceStory::Add(const TraceEntry& entry, const EventTable& events) {
  if (entry.type != TraceEntry::Type::kRecord) return;
  const Record& rec = entry.record;
  const Resolved& r = Resolve(rec.event_id, events);
  auto f = [&](int i) { return rec.fields[r.f[i]]; };
  auto head = [&]() -> Head& {
    const int mode = r.mode >= 0 ? static_cast<int>(rec.fields[r.mode]) : -1;
    return heads_[{mode, static_cast<int>(f(0))}];
  };
  switch (r.role) {
    case Role::kUnresolved:
    case Role::kNone:
      return;
    case Role::kSleep:
      ++head().sleeps;
      return;
    case Role::kWake:
      ++head().wakes;
      return;
    case Role::kWakeup:
      ++(f(1) != 0 ? head().useful : head().futile);
      return;
    case Role::kGranted:
      head().waits_ns.push_back(f(1));
      return;
    case Role::kBatch:
      ++head().batches;
      return;
    case Role::kForce:
      ++forces_;
      if (f(1) != 0)
        ++forces_on_disk_;
      else
        force_waits_ns_.push_back(f(0));
      return;
    case Role::kBytes: {
      const std::uint64_t t = rec.timestamp;
      if (samples_ > 0 && t > last_ns_) {
        const std::uint64_t held = t - last_ns_;
        share_ns_ += last_share_ * static_cast<double>(held);
        if (last_share_ > kFullShare) above_ns_ += held;
      }
      if (samples_ == 0) first_ns_ = t;
      last_ns_ = std::max(last_ns_, t);
      ++samples_;
      log_bytes_ = f(3);
      const double used = static_cast<double>(f(2) + std::max(f(0), f(1)));
      last_share_ = log_bytes_ > 0 ? used / static_cast<double>(log_bytes_) : 0;
      peak_share_ = std::max(peak_share_, last_share_);
      return;
    }
  }
}

Report LogSpaceStory::GrantHeads() const {
  Report r({"mode", "head", "sleeps", "granted", "wait_p50_us", "wait_p99_us", "wait_max_us", "wakes",
            "useful_wakes", "futile_wakes", "wakes_per_sleep", "wake_batches"});
  for (const auto& [key, h] : heads_) {
    std::vector<std::uint64_t> w = h.waits_ns;
    std::sort(w.begin(), w.end());
    r.AddRow({Cell(ModeName(key.first)), Cell(HeadName(key.second)), Cell(h.sleeps),
              Cell(static_cast<std::uint64_t>(w.size())), Cell(NanosToMicros(NearestRank(w, 0.50)), 1),
              Cell(NanosToMicros(NearestRank(w, 0.99)), 1), Cell(NanosToMicros(w.empty() ? 0 : w.back()), 1),
              Cell(h.wakes), Cell(h.useful), Cell(h.futile),
              Cell(h.sleeps > 0 ? static_cast<double>(h.wakes) / static_cast<double>(h.sleeps) : 0.0, 2),
              Cell(h.batches)});
  }
  return r;
}

Report LogSpaceStory::Forces() const {
  Report r({"forces", "on_disk", "waited", "wait_p50_us", "wait_p99_us", "wait_max_us"});
  if (forces_ == 0) return r;
  std::vector<std::uint64_t> w = force_waits_ns_;
  std::sort(w.begin(), w.end());
  r.AddRow({Cell(forces_), Cell(forces_on_disk_), Cell(static_cast<std::uint64_t>(w.size())),
            Cell(NanosToMicros(NearestRank(w, 0.50)), 1), Cell(NanosToMicros(NearestRank(w, 0.99)), 1),
            Cell(NanosToMicros(w.empty() ? 0 : w.back()), 1)});
  return r;
}

Report LogSpaceStory::Space() const {
  Report r({"samples", "log_mib", "peak_used_pct", "mean_used_pct", "above_75_s", "above_75_pct"});
  if (samples_ == 0 || log_bytes_ == 0) return r;
  const std::uint64_t span = last_ns_ - first_ns_;
  const double mean = span > 0 ? share_ns_ / static_cast<double>(span) : last_share_;
  r.AddRow({Cell(samples_), Cell(static_cast<double>(log_bytes_) / (1 << 20), 2), Cell(100 * peak_share_, 1),
            Cell(100 * mean, 1), Cell(static_cast<double>(above_ns_) / 1e9, 3),
            Cell(span > 0 ? 100.0 * static_cast<double>(above_ns_) / static_cast<double>(span) : 0.0, 1)});
  return r;
}

}  // namespace walfs::tracing
