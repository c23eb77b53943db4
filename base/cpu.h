// CPU-level helpers shared by the lock and ring code.
#pragma once

#include <cstddef>

namespace walfs {

// Hot atomics get a cache line of their own so that writers of one do not
// invalidate readers of another (false sharing).  64 bytes on x86-64 and
// most arm64; a constant rather than std::hardware_destructive_interference_size
// so that layouts do not change with compiler flags.
inline constexpr std::size_t kCacheLineSize = 64;

// The body of a spin-wait loop: tells the core we are spinning (x86 PAUSE,
// arm64 YIELD) so that a sibling hyperthread runs and the loop exit does not
// take a memory-order mis-speculation.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  asm volatile("" ::: "memory");
#endif
}

}  // namespace walfs
