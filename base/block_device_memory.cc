#include "base/block_device_memory.h"

#include <sys/mman.h>

#include <cstring>
#include <new>
#include <utility>

namespace walfs {

void MemoryDevice::Unmap::operator()(std::byte* p) const {
  if (p != nullptr && bytes > 0) ::munmap(p, bytes);
}

std::unique_ptr<std::byte, MemoryDevice::Unmap> MemoryDevice::MapZeros(std::size_t bytes) {
  if (bytes == 0) return {nullptr, Unmap{0}};
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return {static_cast<std::byte*>(p), Unmap{bytes}};
}

MemoryDevice::MemoryDevice(std::uint64_t size_bytes, std::uint32_t logical_block_size)
    : BlockDevice(size_bytes, logical_block_size, /*io_alignment=*/1),
      map_(MapZeros(size_bytes)),
      image_(map_.get()) {}

MemoryDevice::MemoryDevice(std::vector<std::byte> image, std::uint32_t logical_block_size)
    : BlockDevice(image.size(), logical_block_size, /*io_alignment=*/1),
      owned_(std::move(image)),
      map_(nullptr, Unmap{0}),
      image_(owned_.data()) {}

MemoryDevice::~MemoryDevice() { worker_.Stop(); }

std::vector<std::byte> MemoryDevice::Contents() const {
  MutexLock l(&mu_);
  return std::vector<std::byte>(image_, image_ + size_bytes());
}

std::uint64_t MemoryDevice::flush_count() const {
  MutexLock l(&mu_);
  return flush_count_;
}

Status MemoryDevice::DoRead(std::uint64_t offset, std::byte* buf, std::size_t len) {
  if (len == 0) return Status::Ok();
  MutexLock l(&mu_);
  std::memcpy(buf, image_ + offset, len);
  return Status::Ok();
}

Status MemoryDevice::DoWrite(std::uint64_t offset, const std::byte* buf, std::size_t len,
                             IoFlags flags) {
  MutexLock l(&mu_);
  if (flags & kIoPreflush) ++flush_count_;
  if (len > 0) std::memcpy(image_ + offset, buf, len);
  return Status::Ok();
}

Status MemoryDevice::DoFlush() {
  MutexLock l(&mu_);
  ++flush_count_;
  return Status::Ok();
}

Status MemoryDevice::DoDiscard(std::uint64_t offset, std::uint64_t len) {
  MutexLock l(&mu_);
  std::memset(image_ + offset, 0, len);
  return Status::Ok();
}

void MemoryDevice::DoSubmit(std::vector<IoRequest> batch) {
  worker_.EnqueueRequests(std::move(batch), [this](const IoRequest& r) { return Execute(r); });
}

}  // namespace walfs
