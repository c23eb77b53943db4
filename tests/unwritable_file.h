// UnwritableFile: makes a file one this process cannot open for writing, for
// as long as the object lives, the way read-only media look to a program:
//
//   UnwritableFile ro(image);
//   if (!ro.why_not().empty()) GTEST_SKIP() << ro.why_not();
//   // open(image, O_RDWR) now fails (EPERM as root, EACCES otherwise)
//
// As root it sets the immutable attribute (`chattr +i`, FS_IOC_SETFLAGS),
// which even root cannot write through; as anyone else it makes the file
// mode 0444.  The destructor undoes it (`chattr -i`, mode 0644), so a test
// that fails part way leaves nothing immutable behind.  Where neither works
// (the filesystem has no immutable attribute, or root lacks
// CAP_LINUX_IMMUTABLE) why_not() says so and the test skips.
#pragma once

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace walfs::testing {

class UnwritableFile {
 public:
  explicit UnwritableFile(std::string path) : path_(std::move(path)) {
    if (::geteuid() == 0) {
      if (!SetImmutable(true, &why_not_)) return;
      immutable_ = true;
    } else {
      if (::chmod(path_.c_str(), 0444) != 0) {
        why_not_ = "chmod 0444 " + path_ + ": " + std::strerror(errno);
        return;
      }
      chmodded_ = true;
    }
    const int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
      why_not_ = path_ + " can still be opened for writing (" + how() + " did not stop it)";
    }
  }
  ~UnwritableFile() {
    std::string ignored;
    if (immutable_) SetImmutable(false, &ignored);
    if (chmodded_) ::chmod(path_.c_str(), 0644);
  }
  UnwritableFile(const UnwritableFile&) = delete;
  UnwritableFile& operator=(const UnwritableFile&) = delete;

  // "" once the file cannot be opened for writing; otherwise why not.
  const std::string& why_not() const { return why_not_; }
  // "chattr +i" or "mode 0444": for test messages.
  std::string how() const { return ::geteuid() == 0 ? "chattr +i" : "mode 0444"; }

 private:
  bool SetImmutable(bool on, std::string* why) {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      *why = "open " + path_ + ": " + std::strerror(errno);
      return false;
    }
    int flags = 0;
    bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    if (ok) {
      flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
      ok = ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    }
    if (!ok)
      *why = std::string("chattr ") + (on ? "+i " : "-i ") + path_ + ": " + std::strerror(errno) +
             " (the filesystem under the test's temp dir has no immutable attribute, or root lacks "
             "CAP_LINUX_IMMUTABLE)";
    ::close(fd);
    return ok;
  }

  std::string path_;
  std::string why_not_;
  bool immutable_ = false;
  bool chmodded_ = false;
};

}  // namespace walfs::testing
