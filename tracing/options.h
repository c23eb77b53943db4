// The tracer's run-time switches (tracefs `options/`), each with a string
// table so that the control files, stats and benches print names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace walfs::tracing {

// How a waiting trace_pipe reader is woken when events arrive.
enum class WakeupMode : std::uint8_t {
  // The commit that finds a reader asleep wakes it, a syscall on the commit
  // path (kept to reproduce ftrace's pathology).
  kImmediate = 0,
  // The first commit after a reader sleeps arms the waker thread (one
  // syscall), which wakes readers wakeup_delay_us later.  The default.
  kDeferred = 1,
};

enum class RecursionMode : std::uint8_t {
  // Signals that land while an event is written are held until it is done
  // (wrapped handlers only; fault signals are never held).  The default.
  kSafe = 0,
  // A thread-local flag: an event from a handler that lands mid-write is
  // dropped and counted.
  kFast = 1,
  // Per-context recursion bits: a handler's event nests inside the
  // interrupted one; only true recursion within one context is refused.
  kContext = 2,
};

enum class ClockKind : std::uint8_t {
  kMonotonic = 0,  // CLOCK_MONOTONIC via the vDSO
  kTsc = 1,        // RDTSC scaled to the monotonic clock (x86-64 with invariant TSC)
};

std::string_view WakeupModeName(WakeupMode m);
std::string_view RecursionModeName(RecursionMode m);
std::string_view ClockKindName(ClockKind c);
Result<WakeupMode> ParseWakeupMode(std::string_view s);
Result<RecursionMode> ParseRecursionMode(std::string_view s);
Result<ClockKind> ParseClockKind(std::string_view s);
// kTsc where the CPU has an invariant TSC (constant_tsc + nonstop_tsc: CPUID
// 0x80000007 EDX bit 8; clock.h), else kMonotonic.  The first call
// calibrates the TSC against CLOCK_MONOTONIC (5 ms).
ClockKind DefaultClockKind();

struct TracerOptions {
  bool overwrite = true;                 // flight recorder; false: discard new events when full
  std::uint32_t buffer_size_kb = 256;    // per thread ring
  WakeupMode wakeup = WakeupMode::kDeferred;
  std::uint32_t wakeup_delay_us = 2000;
  // Wake a reader as soon as any ring is this full (0: never early), so that
  // a deferred reader does not lose events to a full ring.
  std::uint32_t buffer_percent = 50;
  RecursionMode recursion = RecursionMode::kSafe;
  ClockKind clock = DefaultClockKind();
  // A reader blocked without a timeout re-checks the rings this often even
  // if no wakeup comes (0: never), so that no missed wakeup can hold events
  // back for longer.  One futex timeout a second costs a blocked reader
  // microseconds of CPU.
  std::uint32_t safety_timeout_ms = 1000;

  // InvalidArgument naming the bad field.
  Status Validate() const;
};

}  // namespace walfs::tracing
