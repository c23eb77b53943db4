// A file's bytes, whole, for specs that check a tool left an image unchanged.
// One read(2) loop into a sized string: under the sanitizers a per-character
// stream copy of a 64 MiB image cost 5 s a call (TSan checks every byte).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace walfs::testing {

// The bytes of `path`; empty when it cannot be read (the spec's comparison
// then fails and says so).
inline std::string FileBytes(const std::string& path) {
  std::string bytes;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return bytes;
  struct stat st {};
  if (::fstat(fd, &st) == 0) bytes.resize(static_cast<std::size_t>(st.st_size));
  std::size_t have = 0;
  while (have < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + have, bytes.size() - have);
    if (n <= 0) break;
    have += static_cast<std::size_t>(n);
  }
  bytes.resize(have);
  ::close(fd);
  return bytes;
}

}  // namespace walfs::testing
