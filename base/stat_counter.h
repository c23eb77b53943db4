#pragma once

// Statistics counters: relaxed atomics that many threads bump and a stats
// reader samples.  No ordering with anything else is implied, so a reader
// may see counters from slightly different moments.

#include <atomic>
#include <cstdint>
#include <type_traits>

namespace walfs {

// *c += n.
inline void Inc(std::atomic<std::uint64_t>* c, std::uint64_t n = 1) {
  c->fetch_add(n, std::memory_order_relaxed);
}

// *max = max(*max, v): a high-water mark.
template <typename T>
void BumpMax(std::atomic<T>* max, std::type_identity_t<T> v) {
  T m = max->load(std::memory_order_relaxed);
  while (v > m && !max->compare_exchange_weak(m, v, std::memory_order_relaxed)) {
  }
}

}  // namespace walfs
