// A file's digest, for specs that check a tool or a mount left an image
// unchanged.
//
//   const FileDigest before = DigestOfFile(image);
//   ... run the tool ...
//   EXPECT_TRUE(DigestOfFile(image) == before) << "the image changed";
//
// Compare digests, not copies: under TSan holding a 64 MiB image twice and
// comparing the copies cost about 3 s a check (every byte's shadow is
// touched), the digest reads 1 MiB at a time into one buffer and its
// CRC32C (ISA-L, not instrumented) costs a tenth of that.  Any write a tool
// makes (a superblock, a log sector) changes the CRC.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/crc32c.h"

namespace walfs::testing {

// A file's length and CRC32C; a file that cannot be read has length -1,
// and its digest equals none (so that a check of it fails).
struct FileDigest {
  std::int64_t bytes = -1;
  std::uint32_t crc = 0;
  bool operator==(const FileDigest& o) const { return bytes >= 0 && bytes == o.bytes && crc == o.crc; }
};

inline FileDigest DigestOfFile(const std::string& path) {
  FileDigest d;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return d;
  std::vector<char> buf(1 << 20);
  std::int64_t bytes = 0;
  ssize_t n;
  while ((n = ::read(fd, buf.data(), buf.size())) > 0) {
    d.crc = crc32c::Extend(d.crc, buf.data(), static_cast<std::size_t>(n));
    bytes += n;
  }
  ::close(fd);
  if (n == 0) d.bytes = bytes;
  return d;
}

}  // namespace walfs::testing
