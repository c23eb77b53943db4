// Monotonic time in nanoseconds, for latency counters and timeouts.
#pragma once

#include <cstdint>
#include <ctime>

namespace walfs {

inline std::int64_t MonotonicNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// CPU time consumed by the whole process, in nanoseconds.
inline std::int64_t ProcessCpuNanos() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// CPU time consumed by the calling thread, in nanoseconds.
inline std::int64_t ThreadCpuNanos() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// A duration in nanoseconds as microseconds or milliseconds, for reports.
constexpr double NanosToMicros(std::uint64_t ns) { return static_cast<double>(ns) / 1e3; }
constexpr double NanosToMillis(std::uint64_t ns) { return static_cast<double>(ns) / 1e6; }

}  // namespace walfs
