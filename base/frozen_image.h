// FrozenImage: a device image that never changes again, from which any
// number of MemoryDevices start as private copy-on-write mappings.  A crash
// campaign materialises thousands of images from one starting image; with a
// FrozenImage each costs a mapping and the pages its writes touch, not a
// copy of the whole image (under the sanitizers a 16 MiB copy was most of a
// crash state's time).
//
//   WALFS_ASSIGN_OR_RETURN(std::shared_ptr<const FrozenImage> base,
//       FrozenImage::Make(size, [&](std::byte* p) { return dev->Read(0, p, size); }));
//   MemoryDevice a(base), b(base);    // each sees the image, neither sees the other's writes
//
// The bytes live in a memfd sealed against every change once filled (the
// kernel refuses writes, growth and shrinking), so a view can trust that
// the pages it has not written are the image's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "base/status.h"

namespace walfs {

// Unmaps what it owns; a mapping of 0 bytes is none.
struct MappingUnmap {
  std::size_t bytes = 0;
  void operator()(std::byte* p) const;
};
using Mapping = std::unique_ptr<std::byte, MappingUnmap>;

class FrozenImage {
 public:
  // An image of `size` bytes: fill(p) writes them at p (size bytes of
  // zeros to start with), then the image is sealed.  fill's error, or the
  // system's (memfd_create, ftruncate, mmap, sealing), is returned.
  static Result<std::shared_ptr<const FrozenImage>> Make(
      std::uint64_t size, const std::function<Status(std::byte*)>& fill);
  ~FrozenImage();
  FrozenImage(const FrozenImage&) = delete;
  FrozenImage& operator=(const FrozenImage&) = delete;

  std::uint64_t size() const { return size_; }

  // A writable view of the image private to the caller: reads see the
  // image, a write copies the page it touches.  Throws std::bad_alloc when
  // the system cannot map it (as an allocation that fails would).
  Mapping MapPrivate() const;

 private:
  FrozenImage(int fd, std::uint64_t size) : fd_(fd), size_(size) {}

  const int fd_;
  const std::uint64_t size_;
};

}  // namespace walfs
