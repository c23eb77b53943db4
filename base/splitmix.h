// splitmix64's finaliser: a cheap, well-spread 64-bit hash, for the
// generated contents of the harnesses (crash, kill test) that a checker
// must recompute from a seed.
#pragma once

#include <cstdint>

namespace walfs {

inline std::uint64_t SplitMix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace walfs
