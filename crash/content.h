// Content: the bytes a crash workload writes, as a pure function of (seed,
// file, generation, offset), so a checker can tell for every byte of a
// recovered file which write (if any) could have put it there.  Never zero:
// a zero byte is a hole or a truncated tail.
//
//   const Content c(seed, fid, gen, /*low_lsn=*/false);
//   std::string bytes = c.Bytes(off, len);   // what write `gen` of file `fid` wrote
//   if (got[o] == c.At(o)) ...               // explained by that write
#pragma once

#include <cstdint>
#include <string>

#include "base/splitmix.h"

namespace walfs::crash {

inline std::uint64_t Mix(std::uint64_t x) { return SplitMix64(x); }

// With `low_lsn`, bytes 12..15 of every 4 KiB are zero: the high half of the
// LSN a metadata block header keeps at byte 8 (fs/format/block_header.h), so
// a freed data block reads as cycle 0 (the regression spec
// DataBlockReusedAsMetadataIsReplayed covers the other case).
class Content {
 public:
  Content(std::uint64_t seed, int fid, std::uint32_t gen, bool low_lsn)
      : key_(Mix(Mix(seed ^ Mix(static_cast<std::uint64_t>(fid))) ^ gen)), low_lsn_(low_lsn) {}

  char At(std::uint64_t off) const {
    if (low_lsn_ && (off & 4095) >= 12 && (off & 4095) < 16) return '\0';
    const auto b = static_cast<std::uint8_t>(Mix(key_ ^ (off >> 3)) >> ((off & 7) * 8));
    return static_cast<char>(b ? b : 0xa5);
  }
  std::string Bytes(std::uint64_t off, std::size_t len) const {
    std::string s(len, '\0');
    for (std::size_t i = 0; i < len; ++i) s[i] = At(off + i);
    return s;
  }

 private:
  std::uint64_t key_;
  bool low_lsn_;
};

}  // namespace walfs::crash
