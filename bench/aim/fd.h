// Fd: an owned file descriptor, and whole-buffer read/write helpers that turn
// a failed or short transfer into a Status naming what was being done.
//
//   Fd fd(openat(dir, name, O_RDONLY | O_CLOEXEC));
//   if (!fd.ok()) return Status::FromErrno(errno, "open name");
//   WALFS_RETURN_IF_ERROR(WriteAll(fd.get(), buf, n, "write name"));
//
// The test recipes do not use Fd where re-aim's order of close() against
// unlink() is the point of the test (unlink while open); they close by hand.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string>
#include <utility>

#include "base/status.h"

namespace walfs::bench::aim {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Fd() { Reset(); }

  bool ok() const { return fd_ >= 0; }
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// A short write with no errno is reported as EIO (the file system accepted
// less than asked, which no recipe expects).
inline Status WriteAll(int fd, const void* buf, std::size_t n, const std::string& what) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Status::FromErrno(w < 0 ? errno : EIO, what);
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return Status::Ok();
}

// Reads until EOF into `out`.
inline Status ReadToEnd(int fd, std::string* out, const std::string& what) {
  char buf[4096];  // stdio's buffer size: what fgets() would read per call
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::FromErrno(errno, what);
    if (r == 0) return Status::Ok();
    out->append(buf, static_cast<std::size_t>(r));
  }
}

}  // namespace walfs::bench::aim
