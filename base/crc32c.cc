#include "base/crc32c.h"

#include <isa-l/crc.h>

#include <climits>

namespace walfs::crc32c {

// ISA-L's crc32_iscsi neither pre- nor post-inverts: it continues from the raw
// register value.  The standard CRC32C inverts both ways, so Extend() converts
// at each end; Value("123456789") == 0xe3069283.
std::uint32_t Extend(std::uint32_t crc, const void* data, std::size_t n) {
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));  // ISA-L takes a non-const pointer; it only reads.
  std::uint32_t reg = ~crc;
  while (n > 0) {
    const int chunk = n > INT_MAX ? INT_MAX : static_cast<int>(n);
    reg = crc32_iscsi(p, chunk, reg);
    p += chunk;
    n -= static_cast<std::size_t>(chunk);
  }
  return ~reg;
}

}  // namespace walfs::crc32c
