#include "tracing/clock.h"

#include <sched.h>

#include <ctime>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace walfs::tracing {

namespace {

__extension__ using Int128 = __int128;
__extension__ using UInt128 = unsigned __int128;

std::int64_t MonoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

struct CpuFeatures {
  bool rdpid = false;
  bool invariant_tsc = false;
};

CpuFeatures Detect() {
  CpuFeatures f;
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) f.rdpid = (c >> 22) & 1;
  if (__get_cpuid(0x80000007, &a, &b, &c, &d)) f.invariant_tsc = (d >> 8) & 1;
#endif
  return f;
}

const CpuFeatures kFeatures = Detect();

// ns = base_ns + ((tsc - base_tsc) * mult) >> 32, calibrated against
// CLOCK_MONOTONIC over a few milliseconds at start-up.
struct TscScale {
  std::uint64_t base_tsc = 0;
  std::int64_t base_ns = 0;
  std::uint64_t mult = 0;  // ns per tick, 32.32 fixed point
};

TscScale Calibrate() {
  TscScale s;
#if defined(__x86_64__)
  if (!kFeatures.invariant_tsc) return s;
  const std::uint64_t t0 = __rdtsc();
  const std::int64_t n0 = MonoNs();
  std::int64_t n1;
  do n1 = MonoNs(); while (n1 - n0 < 5'000'000);
  const std::uint64_t t1 = __rdtsc();
  if (t1 <= t0) return s;
  s.base_tsc = t1;
  s.base_ns = n1;
  s.mult = static_cast<std::uint64_t>((static_cast<UInt128>(n1 - n0) << 32) / (t1 - t0));
#endif
  return s;
}

const TscScale& Scale() {
  static const TscScale scale = Calibrate();
  return scale;
}

}  // namespace

bool TscUsable() { return Scale().mult != 0; }

ClockKind DefaultClockKind() { return TscUsable() ? ClockKind::kTsc : ClockKind::kMonotonic; }

std::int64_t TraceClockNs(ClockKind kind) {
#if defined(__x86_64__)
  if (kind == ClockKind::kTsc) {
    const TscScale& s = Scale();
    if (s.mult != 0) {
      // Signed: another CPU's TSC may read a little behind the base.
      const auto d = static_cast<std::int64_t>(__rdtsc() - s.base_tsc);
      return s.base_ns + static_cast<std::int64_t>(
                             (static_cast<Int128>(d) * static_cast<Int128>(s.mult)) >> 32);
    }
  }
#endif
  (void)kind;
  return MonoNs();
}

std::uint16_t CurrentCpu() {
#if defined(__x86_64__)
  if (kFeatures.rdpid) {
    std::uint64_t aux;
    asm volatile("rdpid %0" : "=r"(aux));
    return static_cast<std::uint16_t>(aux & 0xfff);  // Linux: low 12 bits = CPU
  }
#endif
  const int cpu = sched_getcpu();
  return static_cast<std::uint16_t>(cpu < 0 ? 0 : cpu);
}

}  // namespace walfs::tracing
