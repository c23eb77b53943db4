// ScratchFile: one temporary file of a test recipe, stepped through by hand
// so that each recipe keeps re-aim's order of creat/open, close and unlink
// (several unlink a file while it is still open).  Whatever a failed recipe
// leaves open or linked, the destructor closes and unlinks, so a failing
// job leaves nothing behind either.  Internal to the recipes.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/status.h"

namespace walfs::bench::aim {

class ScratchFile {
 public:
  ScratchFile(int dir_fd, std::string name) : dir_fd_(dir_fd), name_(std::move(name)) {}
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  ~ScratchFile() {
    if (fd_ >= 0) ::close(fd_);
    if (linked_) ::unlinkat(dir_fd_, name_.c_str(), 0);
  }

  // creat(2): O_WRONLY | O_CREAT | O_TRUNC, mode 0777 as re-aim (less umask).
  Status Creat(int extra_flags = 0) { return Open(O_WRONLY | O_CREAT | O_TRUNC | extra_flags); }

  Status Open(int flags) {
    fd_ = ::openat(dir_fd_, name_.c_str(), flags | O_CLOEXEC, 0777);
    if (fd_ < 0) return Status::FromErrno(errno, "open " + name_);
    if (flags & O_CREAT) linked_ = true;
    return Status::Ok();
  }

  Status Close() {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return Status::FromErrno(errno, "close " + name_);
    return Status::Ok();
  }

  Status Unlink() {
    if (::unlinkat(dir_fd_, name_.c_str(), 0) != 0) return Status::FromErrno(errno, "unlink " + name_);
    linked_ = false;
    return Status::Ok();
  }

  int fd() const { return fd_; }
  const std::string& name() const { return name_; }

 private:
  int dir_fd_;
  std::string name_;
  int fd_ = -1;
  bool linked_ = false;
};

}  // namespace walfs::bench::aim
