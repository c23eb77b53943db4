// Messages: walfs's kernel log (what `dmesg` shows for a kernel
// filesystem).  The few lines an administrator needs -- mount, recovery,
// shutdown, I/O and corruption errors -- each stamped with the seconds since
// the process started, kept in a bounded ring that `/.walfs/messages` shows,
// and copied to a sink: stderr (tools, tests, a foreground daemon) or syslog
// (a detached daemon, whose stderr is /dev/null).  The sink gets messages of
// at least its severity: by default stderr, warnings and errors (so tests
// that mount thousands of images do not print a line each); the daemon
// asks for info too.
//
//   Message(Severity::kError, "{}: log write failed: {}", image, s.ToString());
//   std::string text = Messages::Get().Text();  // "[    1.234567] walfs error: ...\n"
//
// A message repeated back to back is kept once with a count ("(repeated 3
// more times)"), so an error returned to every caller of a shut-down filesystem
// does not flood the ring or the sink.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "base/mutex.h"

namespace walfs {

enum class Severity : std::uint8_t { kInfo, kWarning, kError };

std::string_view SeverityName(Severity s);  // "info", "warning", "error"

class Messages {
 public:
  enum class Sink : std::uint8_t { kStderr, kSyslog, kNone };

  static constexpr std::size_t kCapacity = 256;  // lines kept; older ones are dropped

  static Messages& Get();

  struct SinkSetting {
    Sink sink;
    Severity min;
  };

  // Where new messages of at least `min` are copied (every message is kept
  // in the ring).  kSyslog opens syslog as "walfs" with the process id,
  // facility daemon.  Returns the setting it replaced.
  SinkSetting SetSink(Sink sink, Severity min = Severity::kInfo) EXCLUDES(mu_);

  void Add(Severity severity, std::string text) EXCLUDES(mu_);

  // The ring, oldest first, one "[seconds] walfs <severity>: text" line each.
  std::string Text() const EXCLUDES(mu_);
  // Messages added since the process started (repeats included).
  std::uint64_t count() const EXCLUDES(mu_);

  // Empties the ring (tests).
  void Clear() EXCLUDES(mu_);

 private:
  struct Entry {
    double seconds;
    Severity severity;
    std::string text;
    std::uint64_t repeats;  // further identical messages right after this one
  };

  Messages() = default;
  void Emit(const Entry& e) REQUIRES(mu_);

  mutable Mutex mu_;
  std::deque<Entry> ring_ GUARDED_BY(mu_);
  std::uint64_t count_ GUARDED_BY(mu_) = 0;
  Sink sink_ GUARDED_BY(mu_) = Sink::kStderr;
  Severity sink_min_ GUARDED_BY(mu_) = Severity::kWarning;
};

// Sets the sink while it lives, then puts back the setting it replaced:
// for code that expects messages and reports them itself (a crash
// campaign, whose every torn state's mount warns that it trimmed the log).
class ScopedMessageSink {
 public:
  explicit ScopedMessageSink(Messages::Sink sink, Severity min = Severity::kInfo)
      : before_(Messages::Get().SetSink(sink, min)) {}
  ~ScopedMessageSink() { Messages::Get().SetSink(before_.sink, before_.min); }
  ScopedMessageSink(const ScopedMessageSink&) = delete;
  ScopedMessageSink& operator=(const ScopedMessageSink&) = delete;

 private:
  const Messages::SinkSetting before_;
};

template <typename... Args>
void Message(Severity severity, fmt::format_string<Args...> f, Args&&... args) {
  Messages::Get().Add(severity, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace walfs
