#include "base/block_device_memory.h"

#include <cstring>
#include <utility>

namespace walfs {

MemoryDevice::MemoryDevice(std::uint64_t size_bytes, std::uint32_t logical_block_size)
    : MemoryDevice(std::vector<std::byte>(size_bytes), logical_block_size) {}

MemoryDevice::MemoryDevice(std::vector<std::byte> image, std::uint32_t logical_block_size)
    : BlockDevice(image.size(), logical_block_size, /*io_alignment=*/1),
      image_(std::move(image)) {}

MemoryDevice::~MemoryDevice() { worker_.Stop(); }

std::vector<std::byte> MemoryDevice::Contents() const {
  MutexLock l(&mu_);
  return image_;
}

std::uint64_t MemoryDevice::flush_count() const {
  MutexLock l(&mu_);
  return flush_count_;
}

Status MemoryDevice::DoRead(std::uint64_t offset, std::byte* buf, std::size_t len) {
  if (len == 0) return Status::Ok();
  MutexLock l(&mu_);
  std::memcpy(buf, image_.data() + offset, len);
  return Status::Ok();
}

Status MemoryDevice::DoWrite(std::uint64_t offset, const std::byte* buf, std::size_t len,
                             IoFlags flags) {
  MutexLock l(&mu_);
  if (flags & kIoPreflush) ++flush_count_;
  if (len > 0) std::memcpy(image_.data() + offset, buf, len);
  return Status::Ok();
}

Status MemoryDevice::DoFlush() {
  MutexLock l(&mu_);
  ++flush_count_;
  return Status::Ok();
}

void MemoryDevice::DoSubmit(std::vector<IoRequest> batch) {
  worker_.EnqueueRequests(std::move(batch), [this](const IoRequest& r) { return Execute(r); });
}

}  // namespace walfs
