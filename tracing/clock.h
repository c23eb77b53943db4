// The trace clock and the CPU number, the two things every event records.
#pragma once

#include <cstdint>

#include "tracing/options.h"

namespace walfs::tracing {

// Nanoseconds on the CLOCK_MONOTONIC time base.  kTsc reads the invariant
// TSC and scales it with a multiplier calibrated at start-up (falls back to
// the monotonic clock where there is no usable TSC).
std::int64_t TraceClockNs(ClockKind kind);
bool TscUsable();

// The CPU the caller runs on: RDPID where the CPU has it (a few cycles),
// else sched_getcpu() through the vDSO.
std::uint16_t CurrentCpu();

}  // namespace walfs::tracing
