// Device contents for the block-device specs: a byte pattern that differs
// with its seed at every offset, and a constant fill.
#pragma once

#include <cstddef>
#include <vector>

namespace walfs::testing {

inline std::vector<std::byte> Pattern(std::size_t len, unsigned seed) {
  std::vector<std::byte> v(len);
  for (std::size_t i = 0; i < len; ++i) v[i] = std::byte((i * 131 + seed * 7 + 1) & 0xff);
  return v;
}

inline std::vector<std::byte> Filled(std::size_t len, unsigned char value) {
  return std::vector<std::byte>(len, std::byte{value});
}

}  // namespace walfs::testing
