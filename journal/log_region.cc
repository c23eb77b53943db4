#include "journal/log_region.h"

#include <fmt/format.h>

#include "base/check.h"

namespace walfs::journal {

Status LogRegion::Validate() const {
  if (device == nullptr) return Status::InvalidArgument("log region has no device");
  if (sectors < 8)
    return Status::InvalidArgument(fmt::format("log of {} sectors is too small", sectors));
  const std::uint64_t end = offset + std::uint64_t{sectors} * kLogSectorSize;
  if (offset % kLogSectorSize != 0 || end > device->size_bytes())
    return Status::InvalidArgument(fmt::format(
        "log region [{}, {}) does not fit a {}-byte device in whole sectors", offset, end,
        device->size_bytes()));
  return Status::Ok();
}

Result<std::string> LogRegion::ReadSectors(std::uint32_t first, std::uint32_t count) const {
  WALFS_CHECK(first < sectors && count <= sectors);
  std::string out(std::size_t{count} * kLogSectorSize, '\0');
  const std::uint32_t before_end = std::min(count, sectors - first);
  WALFS_RETURN_IF_ERROR(device->Read(offset + std::uint64_t{first} * kLogSectorSize, out.data(),
                                     std::size_t{before_end} * kLogSectorSize));
  if (before_end < count)
    WALFS_RETURN_IF_ERROR(device->Read(offset, out.data() + std::size_t{before_end} * kLogSectorSize,
                                       std::size_t{count - before_end} * kLogSectorSize));
  return out;
}

Result<std::uint32_t> LogRegion::CycleAt(std::uint32_t sector) const {
  WALFS_ASSIGN_OR_RETURN(std::string s, ReadSectors(sector, 1));
  return SectorCycle(s);
}

Status LogRegion::WriteSectors(std::uint32_t first, const std::string& bytes) const {
  WALFS_CHECK(first < sectors && bytes.size() % kLogSectorSize == 0 &&
              bytes.size() / kLogSectorSize <= sectors);
  const auto count = static_cast<std::uint32_t>(bytes.size() / kLogSectorSize);
  const std::uint32_t before_end = std::min(count, sectors - first);
  WALFS_RETURN_IF_ERROR(device->Write(offset + std::uint64_t{first} * kLogSectorSize, bytes.data(),
                                      std::size_t{before_end} * kLogSectorSize));
  if (before_end < count)
    WALFS_RETURN_IF_ERROR(device->Write(offset, bytes.data() + std::size_t{before_end} * kLogSectorSize,
                                        std::size_t{count - before_end} * kLogSectorSize));
  return Status::Ok();
}

}  // namespace walfs::journal
