#include "mount/sync_client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/mount_table.h"

namespace walfs::mount {
namespace {

constexpr std::string_view kWalfsType = "fuse.walfs";
constexpr std::string_view kControlPath = "/.walfs/sync";

}  // namespace

Result<FsSyncer> FsSyncer::Open(int fd) { return OpenImpl(fd, fmt::format("fd {}", fd), false); }

Result<FsSyncer> FsSyncer::OpenWalfs(int fd, const std::string& what) { return OpenImpl(fd, what, true); }

Result<FsSyncer> FsSyncer::OpenImpl(int fd, const std::string& what, bool require_walfs) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return Status::FromErrno(errno, what);
  std::vector<MountEntry> same_fs;
  for (MountEntry& e : ReadMountTable())
    if (makedev(e.major, e.minor) == st.st_dev) same_fs.push_back(std::move(e));
  bool on_walfs = false;
  for (const MountEntry& e : same_fs) on_walfs |= e.fstype == kWalfsType;
  if (!on_walfs) {
    if (!require_walfs) return FsSyncer(fd, -1, "");
    return Status::NotFound(fmt::format("{} is not on a walfs mount (it is {})", what,
                                        same_fs.empty() ? std::string("not in the mount table")
                                                        : same_fs.back().fstype));
  }
  // The control directory is at the filesystem's root, so at a mount point
  // that shows the root; try each such one (the same image may be mounted
  // at two places, one of them hidden by another mount).
  std::string why = fmt::format(
      "{} is on a bind mount of a walfs subdirectory ({}); run walfs sync on the walfs mount itself", what,
      same_fs.front().root);
  for (const MountEntry& e : same_fs) {
    if (e.fstype != kWalfsType || e.root != "/") continue;
    const std::string path = (e.point == "/" ? "" : e.point) + std::string(kControlPath);
    const int cfd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    // A read-only mount (the kernel refuses the open) has nothing to sync.
    if (cfd < 0 && errno == EROFS) return FsSyncer(fd, -1, e.point);
    if (cfd < 0) {
      why = errno == ENOENT
                ? fmt::format("{} is a walfs mount without {} (its daemon is older than walfs sync); "
                              "fsync a directory on it instead",
                              e.point, kControlPath.substr(1))
                : Status::FromErrno(errno, path).ToString();
      continue;
    }
    struct stat cst {};
    if (fstat(cfd, &cst) != 0 || cst.st_dev != st.st_dev) {
      close(cfd);
      why = fmt::format("{} is not on the filesystem of {} (another mount hides it)", path, what);
      continue;
    }
    return FsSyncer(fd, cfd, e.point);
  }
  return Status::NotSupported(why);
}

FsSyncer::FsSyncer(FsSyncer&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      control_fd_(std::exchange(other.control_fd_, -1)),
      mountpoint_(std::move(other.mountpoint_)) {}

FsSyncer& FsSyncer::operator=(FsSyncer&& other) noexcept {
  if (this != &other) {
    if (control_fd_ >= 0) close(control_fd_);
    fd_ = std::exchange(other.fd_, -1);
    control_fd_ = std::exchange(other.control_fd_, -1);
    mountpoint_ = std::move(other.mountpoint_);
  }
  return *this;
}

FsSyncer::~FsSyncer() {
  if (control_fd_ >= 0) close(control_fd_);
}

Status FsSyncer::Sync() const {
  // First the kernel's dirty pages (a writeback_cache mount's) on their way
  // to the daemon: the control file's sync covers only what the daemon was
  // given (syncfs does not wait for FUSE writeback to arrive; a close or an
  // fsync of the file does).
  if (syncfs(fd_) != 0) return Status::FromErrno(errno, "syncfs");
  if (control_fd_ < 0) return Status::Ok();
  // Any value will do; the write returns when the sync is done.
  const ssize_t n = pwrite(control_fd_, "1\n", 2, 0);
  if (n < 0) return Status::FromErrno(errno, mountpoint_ + std::string(kControlPath));
  if (n != 2) return Status::IoError(fmt::format("{}{}: short write ({} bytes)", mountpoint_, kControlPath, n));
  return Status::Ok();
}

}  // namespace walfs::mount
