// An inode's literal area (the 352 bytes after the core: the data fork, then
// the xattr fork), held in place.  Every operation copies an InodeCore at
// least once (the caller's copy, changed and stored back under the inode's
// lock); as a std::string the area cost a malloc and a free per copy, the
// largest share of the daemon's allocations per request (docs/benchmarks.md).
// The interface is the part of std::string's that inodes use: the bytes
// [0, size()) are the area's contents, up to kCapacity of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <string_view>

#include "base/check.h"

namespace walfs::fs::format {

class Literal {
 public:
  static constexpr std::size_t kCapacity = 512 - 160;  // kInodeSize - kInodeCoreSize

  Literal() = default;
  Literal(std::string_view s) { assign(s); }  // NOLINT: implicit, as from a std::string
  Literal& operator=(std::string_view s) {
    assign(s);
    return *this;
  }

  void assign(std::string_view s) { assign(s.data(), s.size()); }
  void assign(const char* p, std::size_t n) {
    WALFS_CHECK(n <= kCapacity);
    if (n != 0) std::memmove(bytes_, p, n);
    size_ = static_cast<std::uint16_t>(n);
  }
  void assign(std::size_t n, char c) {
    WALFS_CHECK(n <= kCapacity);
    std::memset(bytes_, c, n);
    size_ = static_cast<std::uint16_t>(n);
  }
  void resize(std::size_t n, char c = '\0') {
    WALFS_CHECK(n <= kCapacity);
    if (n > size_) std::memset(bytes_ + size_, c, n - size_);
    size_ = static_cast<std::uint16_t>(n);
  }
  void clear() { size_ = 0; }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  char* data() { return bytes_; }
  const char* data() const { return bytes_; }
  char* begin() { return bytes_; }
  char* end() { return bytes_ + size_; }
  const char* begin() const { return bytes_; }
  const char* end() const { return bytes_ + size_; }
  char& operator[](std::size_t i) { return bytes_[i]; }
  char operator[](std::size_t i) const { return bytes_[i]; }

  operator std::string_view() const { return {bytes_, size_}; }  // NOLINT: implicit, as std::string's
  std::string substr(std::size_t pos, std::size_t n = std::string::npos) const {
    return std::string(std::string_view(*this).substr(pos, n));
  }

  friend bool operator==(const Literal& a, const Literal& b) {
    return std::string_view(a) == std::string_view(b);
  }
  friend std::ostream& operator<<(std::ostream& os, const Literal& l) { return os << std::string_view(l); }

 private:
  std::uint16_t size_ = 0;
  char bytes_[kCapacity]{};
};

}  // namespace walfs::fs::format
