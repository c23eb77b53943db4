#include "base/block_device_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

#include "base/check.h"

namespace walfs {

Mapping MemoryDevice::MapZeros(std::size_t bytes) {
  if (bytes == 0) return Mapping(nullptr, MappingUnmap{0});
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return Mapping(static_cast<std::byte*>(p), MappingUnmap{bytes});
}

MemoryDevice::MemoryDevice(std::uint64_t size_bytes, std::uint32_t logical_block_size)
    : BlockDevice(size_bytes, logical_block_size, /*io_alignment=*/1),
      map_(MapZeros(size_bytes)),
      image_(map_.get()) {}

MemoryDevice::MemoryDevice(std::vector<std::byte> image, std::uint32_t logical_block_size)
    : BlockDevice(image.size(), logical_block_size, /*io_alignment=*/1),
      owned_(std::move(image)),
      map_(nullptr, MappingUnmap{0}),
      image_(owned_.data()) {}

MemoryDevice::MemoryDevice(std::shared_ptr<const FrozenImage> base,
                           std::span<const ImagePatch> patches, std::uint32_t logical_block_size)
    : BlockDevice(base->size(), logical_block_size, /*io_alignment=*/1),
      frozen_(std::move(base)),
      map_(frozen_->MapPrivate()),
      image_(map_.get()) {
  MutexLock l(&mu_);
  changed_.assign((size_bytes() + kPage - 1) / kPage, false);
  for (const ImagePatch& p : patches) {
    WALFS_CHECK(p.offset <= size_bytes() && p.bytes.size() <= size_bytes() - p.offset);
    if (p.bytes.empty()) continue;
    std::memcpy(image_ + p.offset, p.bytes.data(), p.bytes.size());
    MarkChanged(p.offset, p.bytes.size());
  }
}

MemoryDevice::~MemoryDevice() { worker_.Stop(); }

std::vector<std::byte> MemoryDevice::Contents() const {
  MutexLock l(&mu_);
  return std::vector<std::byte>(image_, image_ + size_bytes());
}

std::unique_ptr<MemoryDevice> MemoryDevice::Clone() const {
  MutexLock l(&mu_);
  if (frozen_ == nullptr)
    return std::make_unique<MemoryDevice>(std::vector<std::byte>(image_, image_ + size_bytes()),
                                          logical_block_size());
  // One patch per run of changed pages, pointing into this device's bytes
  // (stable while mu_ is held).
  std::vector<ImagePatch> runs;
  for (std::size_t page = 0; page < changed_.size();) {
    if (!changed_[page]) {
      ++page;
      continue;
    }
    std::size_t end = page;
    while (end < changed_.size() && changed_[end]) ++end;
    const std::uint64_t offset = page * kPage;
    const std::uint64_t len = std::min<std::uint64_t>(end * kPage, size_bytes()) - offset;
    runs.push_back({offset, std::span<const std::byte>(image_ + offset, len)});
    page = end;
  }
  return std::make_unique<MemoryDevice>(frozen_, runs, logical_block_size());
}

void MemoryDevice::MarkChanged(std::uint64_t offset, std::uint64_t len) {
  if (frozen_ == nullptr || len == 0) return;
  for (std::uint64_t page = offset / kPage; page <= (offset + len - 1) / kPage; ++page)
    changed_[page] = true;
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
  MarkChanged(offset, len);
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
  MarkChanged(offset, len);
  return Status::Ok();
}

void MemoryDevice::DoSubmit(std::vector<IoRequest> batch) {
  worker_.EnqueueRequests(std::move(batch), [this](const IoRequest& r) { return Execute(r); });
}

}  // namespace walfs
