// The contents of the /.walfs control files and the parsing of what is
// written to them: text in, text out.  The tree, the inode numbers and the
// open handles are ControlDir's (control_dir.h); this file knows nothing of
// them, so each file's format can be read (and tested) in one place.
//
// Every value file reads as one value and a newline ("1\n", "deferred\n").
// Written values are trimmed of blanks and newlines first (TrimValue), so
// that `echo 1 > enable` and `echo -n 1 > enable` both work.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "tracing/event.h"
#include "tracing/options.h"
#include "tracing/tracer.h"

namespace walfs::mount {

// The files of options/.  Each but kGrantWake is a TracerOptions field.
enum class ControlOption : std::uint8_t {
  kWakeup,
  kWakeupDelayUs,
  kBufferPercent,
  kSafetyTimeoutMs,
  kRecursion,
  kOverwrite,
  kBufferSizeKb,
  kTraceClock,
  kGrantWake,  // the journal's grant-head wake mode, through ControlDir::Sources
};

struct ControlOptionFile {
  ControlOption option;
  std::string_view name;
};
// The tracer's option files, in the order of docs/tracing.md's table.
inline constexpr ControlOptionFile kTracerOptionFiles[] = {
    {ControlOption::kWakeup, "wakeup"},
    {ControlOption::kWakeupDelayUs, "wakeup_delay_us"},
    {ControlOption::kBufferPercent, "buffer_percent"},
    {ControlOption::kSafetyTimeoutMs, "safety_timeout_ms"},
    {ControlOption::kRecursion, "recursion"},
    {ControlOption::kOverwrite, "overwrite"},
    {ControlOption::kBufferSizeKb, "buffer_size_kb"},
    {ControlOption::kTraceClock, "trace_clock"},
};
inline constexpr std::string_view kGrantWakeFile = "grant_wake";

// README: the fixed files' lines, then one line per Sources::File (name and
// help), then the example.
extern const std::string_view kControlReadmeFiles;
extern const std::string_view kControlReadmeExample;

// Without leading and trailing blanks, tabs and newlines.
std::string_view TrimValue(std::string_view s);
// "0" or "1"; InvalidArgument otherwise.
Result<bool> ParseControlBool(std::string_view s);
// Decimal digits only, fitting 32 bits; InvalidArgument otherwise.
Result<std::uint32_t> ParseControlU32(std::string_view s);

// An enable file: "1\n" when every event of `events` in `subsystem` (every
// event when empty) is enabled, "0\n" when none is (or there are none), "X\n"
// when mixed, as tracefs prints.
std::string EnableText(const std::vector<const tracing::EventDef*>& events,
                       std::string_view subsystem);

// set_event (tracefs's): the enabled events, one "subsystem:event" a line.
std::string SetEventText(const std::vector<const tracing::EventDef*>& events);
// A write to set_event: blank-separated items, each "subsystem:event",
// "subsystem:*", "subsystem", "*:event" or "*:*" ("*" alone too), with a
// leading '!' to disable instead of enable.  The changes, in order, or
// InvalidArgument naming the first item that matches no event (then
// nothing changes).
Result<std::vector<std::pair<const tracing::EventDef*, bool>>> ParseSetEvent(
    const std::vector<const tracing::EventDef*>& events, std::string_view value);

// events/<subsystem>/<event>/format: tracefs's layout for our fixed 64-byte
// record (common fields, then the event's at offset 16 + 8 i) and a printf
// style `print fmt` line.
std::string FormatText(const tracing::EventDef& event);

// stats: `mount_stats` (newline-terminated here if it is not), then a
// `tracer:` section of "  key: value" lines and one line per ring.
std::string StatsText(std::string mount_stats, const tracing::TracerStats& stats,
                      bool tracing_on);

// trace: ftrace's header block and one line per entry readable now, from a
// non-consuming snapshot (the text `walfs-trace print --header` writes).
std::string TraceText(tracing::Tracer* tracer);

// An option file's text for the tracer's current options.  trace_clock
// lists every usable clock with the current one in brackets: "[mono] tsc\n".
std::string TracerOptionText(ControlOption option, const tracing::TracerOptions& options);

// Parses a written (trimmed) value into its field of *options; the caller
// applies the result with Tracer::SetOptions, which validates ranges.
// InvalidArgument for a value that does not parse (then *options is unchanged).
Status ParseTracerOption(ControlOption option, std::string_view value,
                         tracing::TracerOptions* options);

}  // namespace walfs::mount
