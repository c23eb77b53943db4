// CRC32C (Castagnoli), the checksum of every walfs on-disk header and log
// record.  Backed by Intel ISA-L's crc32_iscsi (Debian libisal), which picks
// the SSE4.2/PCLMUL/AVX-512 kernel at run time.
//
//   uint32_t crc = crc32c::Value(data, n);
//   crc = crc32c::Extend(crc, more, m);          // == Value(data ++ more)
//
// Mask/Unmask (LevelDB): a CRC stored inside data that is itself
// checksummed is masked so that CRCs of CRCs do not degenerate.
#pragma once

#include <cstddef>
#include <cstdint>

namespace walfs::crc32c {

// CRC32C of data[0, n) appended to a buffer whose CRC32C is `crc`.
std::uint32_t Extend(std::uint32_t crc, const void* data, std::size_t n);

inline std::uint32_t Value(const void* data, std::size_t n) { return Extend(0, data, n); }

inline constexpr std::uint32_t kMaskDelta = 0xa282ead8u;

inline std::uint32_t Mask(std::uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}

inline std::uint32_t Unmask(std::uint32_t masked) {
  std::uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace walfs::crc32c
