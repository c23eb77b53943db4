// LogRegion: the circular log area of an image — a sector range of a
// BlockDevice — and reads of sector runs that may wrap past its end.
#pragma once

#include <cstdint>
#include <string>

#include "base/block_device.h"
#include "base/status.h"
#include "journal/log_format.h"

namespace walfs::journal {

struct LogRegion {
  BlockDevice* device = nullptr;
  std::uint64_t offset = 0;   // byte offset of sector 0 of the log on the device
  std::uint32_t sectors = 0;  // log size in kLogSectorSize sectors

  // InvalidArgument unless the region lies on the device and holds at least
  // a few records.
  Status Validate() const;

  // Reads `count` sectors starting at `first`, continuing at sector 0 past
  // the end of the log.  count <= sectors.
  Result<std::string> ReadSectors(std::uint32_t first, std::uint32_t count) const;
  // The cycle stamped in one sector (0: never written).
  Result<std::uint32_t> CycleAt(std::uint32_t sector) const;
  // Writes bytes (whole sectors) starting at `first`, wrapping likewise.
  Status WriteSectors(std::uint32_t first, const std::string& bytes) const;
};

}  // namespace walfs::journal
