#include "base/messages.h"

#include <syslog.h>

#include <chrono>
#include <cstdio>

namespace walfs {
namespace {

const auto kStart = std::chrono::steady_clock::now();

int SyslogPriority(Severity s) {
  switch (s) {
    case Severity::kInfo: return LOG_INFO;
    case Severity::kWarning: return LOG_WARNING;
    case Severity::kError: return LOG_ERR;
  }
  return LOG_ERR;
}

std::string Line(double seconds, Severity severity, std::string_view text) {
  return fmt::format("[{:12.6f}] walfs {}: {}", seconds, SeverityName(severity), text);
}

}  // namespace

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
  }
  return "?";
}

Messages& Messages::Get() {
  static Messages* const m = new Messages();  // never destroyed: used from exiting threads
  return *m;
}

Messages::SinkSetting Messages::SetSink(Sink sink, Severity min) {
  MutexLock l(&mu_);
  if (sink == Sink::kSyslog && sink_ != Sink::kSyslog) openlog("walfs", LOG_PID, LOG_DAEMON);
  const SinkSetting before{sink_, sink_min_};
  sink_ = sink;
  sink_min_ = min;
  return before;
}

void Messages::Emit(const Entry& e) {
  if (e.severity < sink_min_) return;
  switch (sink_) {
    case Sink::kStderr:
      fmt::print(stderr, "{}\n", Line(e.seconds, e.severity, e.text));
      return;
    case Sink::kSyslog:
      syslog(SyslogPriority(e.severity), "%s", e.text.c_str());
      return;
    case Sink::kNone: return;
  }
}

void Messages::Add(Severity severity, std::string text) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - kStart).count();
  MutexLock l(&mu_);
  ++count_;
  if (!ring_.empty() && ring_.back().severity == severity && ring_.back().text == text) {
    ++ring_.back().repeats;
    return;  // the sink saw it once; Text() shows the count
  }
  if (ring_.size() == kCapacity) ring_.pop_front();
  ring_.push_back(Entry{seconds, severity, std::move(text), 0});
  Emit(ring_.back());
}

std::string Messages::Text() const {
  MutexLock l(&mu_);
  std::string out;
  for (const Entry& e : ring_) {
    out += Line(e.seconds, e.severity, e.text);
    if (e.repeats > 0) out += fmt::format(" (repeated {} more time{})", e.repeats, e.repeats == 1 ? "" : "s");
    out += '\n';
  }
  return out;
}

std::uint64_t Messages::count() const {
  MutexLock l(&mu_);
  return count_;
}

void Messages::Clear() {
  MutexLock l(&mu_);
  ring_.clear();
}

}  // namespace walfs
