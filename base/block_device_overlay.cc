#include "base/block_device_overlay.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace walfs {

Result<std::unique_ptr<OverlayDevice>> OverlayDevice::Create(BlockDevice* inner) {
  if (inner->io_alignment() != 1)
    return Status::InvalidArgument(fmt::format(
        "an overlay needs an inner device without aligned I/O ({} needs {}-byte alignment)",
        inner->Describe(), inner->io_alignment()));
  return std::unique_ptr<OverlayDevice>(new OverlayDevice(inner));
}

OverlayDevice::OverlayDevice(BlockDevice* inner)
    : BlockDevice(inner->size_bytes(), inner->logical_block_size(), /*io_alignment=*/1),
      inner_(inner),
      sector_(inner->logical_block_size()) {}

OverlayDevice::~OverlayDevice() { worker_.Stop(); }

std::string OverlayDevice::Describe() const {
  return fmt::format("in-memory overlay over {}", inner_->Describe());
}

std::size_t OverlayDevice::changed_sectors() const {
  MutexLock l(&mu_);
  return sectors_.size();
}

Status OverlayDevice::DoRead(std::uint64_t offset, std::byte* buf, std::size_t len) {
  if (len == 0) return Status::Ok();
  WALFS_RETURN_IF_ERROR(inner_->Read(offset, buf, len));
  const std::uint64_t end = offset + len;
  MutexLock l(&mu_);
  for (auto it = sectors_.lower_bound(offset / sector_); it != sectors_.end(); ++it) {
    const std::uint64_t start = it->first * sector_;
    if (start >= end) break;
    const std::uint64_t from = std::max(start, offset);
    const std::uint64_t to = std::min(start + it->second.size(), end);
    std::memcpy(buf + (from - offset), it->second.data() + (from - start), to - from);
  }
  return Status::Ok();
}

Status OverlayDevice::DoWrite(std::uint64_t offset, const std::byte* buf, std::size_t len,
                              IoFlags /*flags*/) {
  const std::uint64_t end = offset + len;
  MutexLock l(&mu_);
  for (std::uint64_t s = offset / sector_; s * sector_ < end; ++s) {
    const std::uint64_t start = s * sector_;
    auto it = sectors_.find(s);
    if (it == sectors_.end()) {
      // The last sector of a device whose size is not a multiple of the
      // sector size is short.
      std::vector<std::byte> data(std::min<std::uint64_t>(sector_, size_bytes() - start));
      WALFS_RETURN_IF_ERROR(inner_->Read(start, data.data(), data.size()));
      it = sectors_.emplace(s, std::move(data)).first;
    }
    const std::uint64_t from = std::max(start, offset);
    const std::uint64_t to = std::min(start + it->second.size(), end);
    std::memcpy(it->second.data() + (from - start), buf + (from - offset), to - from);
  }
  return Status::Ok();
}

void OverlayDevice::DoSubmit(std::vector<IoRequest> batch) {
  worker_.EnqueueRequests(std::move(batch), [this](const IoRequest& r) { return Execute(r); });
}

}  // namespace walfs
