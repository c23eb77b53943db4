#include "base/frozen_image.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <new>


namespace walfs {

void MappingUnmap::operator()(std::byte* p) const {
  if (p != nullptr && bytes > 0) ::munmap(p, bytes);
}

Result<std::shared_ptr<const FrozenImage>> FrozenImage::Make(
    std::uint64_t size, const std::function<Status(std::byte*)>& fill) {
  const int fd = ::memfd_create("walfs-frozen-image", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Status::FromErrno(errno, "memfd_create for a frozen image");
  // Owned from here on: the destructor closes it on every path.
  std::shared_ptr<const FrozenImage> image(new FrozenImage(fd, size));
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0)
    return Status::FromErrno(errno, "sizing a frozen image");
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return Status::FromErrno(errno, "mapping a frozen image to fill it");
    Status filled = fill(static_cast<std::byte*>(p));
    ::munmap(p, size);  // a shared writable mapping would keep F_SEAL_WRITE off
    WALFS_RETURN_IF_ERROR(filled);
  }
  if (::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
    return Status::FromErrno(errno, "sealing a frozen image");
  return image;
}

FrozenImage::~FrozenImage() { ::close(fd_); }

Mapping FrozenImage::MapPrivate() const {
  if (size_ == 0) return Mapping(nullptr, MappingUnmap{0});
  void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd_, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return Mapping(static_cast<std::byte*>(p), MappingUnmap{size_});
}

}  // namespace walfs
