// Lsn: a log sequence number, XFS style: the cycle (how many times the log
// has wrapped, from 1) in the high 32 bits and the log sector number within
// the log in the low 32.  LSNs order log records across wraps; on-disk
// metadata carries the LSN of the last change to it, so recovery can skip
// replaying a change that is already there.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace walfs::journal {

using Lsn = std::uint64_t;

inline constexpr Lsn kNullLsn = 0;  // cycle 0 never occurs in a written log

constexpr Lsn MakeLsn(std::uint32_t cycle, std::uint32_t sector) {
  return (Lsn{cycle} << 32) | sector;
}
constexpr std::uint32_t CycleOf(Lsn lsn) { return static_cast<std::uint32_t>(lsn >> 32); }
constexpr std::uint32_t SectorOf(Lsn lsn) { return static_cast<std::uint32_t>(lsn); }

// "cycle:sector", as xfs_logprint prints LSNs.
inline std::string LsnString(Lsn lsn) { return fmt::format("{}:{}", CycleOf(lsn), SectorOf(lsn)); }

}  // namespace walfs::journal
