// Sizes the specs build images and files from.
#pragma once

#include <cstdint>

namespace walfs::testing {

inline constexpr std::uint64_t kKiB = 1ull << 10;
inline constexpr std::uint64_t kMiB = 1ull << 20;

}  // namespace walfs::testing
