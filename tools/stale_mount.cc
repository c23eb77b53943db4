#include "tools/stale_mount.h"

#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <optional>

#include <fmt/format.h>

#include "base/mount_table.h"

extern char** environ;

namespace walfs::tools {

namespace {

// Several dead mounts stacked on one point are rare; more than this many is
// something else (a mount that comes back), and is left to the user.
constexpr int kMaxDetach = 8;

// "a fuse.walfs mount of /img/a" for the topmost mount at `abs`.
std::string DescribeMount(const std::string& abs) {
  const std::optional<MountEntry> m = TopMountAt(abs);
  return m ? fmt::format("a {} mount of {}", m->fstype, m->source) : "a FUSE mount";
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) == nullptr) return path;
  return fmt::format("{}/{}", cwd, path);
}

// `fusermount3 -uz PATH`; "" on success, else why not.
std::string FusermountLazy(const std::string& path) {
  const char* argv[] = {"fusermount3", "-uz", path.c_str(), nullptr};
  pid_t pid = 0;
  const int err = posix_spawnp(&pid, "fusermount3", nullptr, nullptr,
                               const_cast<char* const*>(argv), environ);
  if (err != 0) return fmt::format("cannot run fusermount3: {}", std::strerror(err));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return "fusermount3 -uz failed (its message is above)";
}

// stat(2) alone can miss a dead mount: the kernel answers it from cached
// attributes for attr_timeout after the daemon died.  statfs(2) always asks
// the daemon.
bool Dead(const std::string& path) {
  struct stat st = {};
  if (::stat(path.c_str(), &st) != 0) return errno == ENOTCONN;
  struct statfs sf = {};
  return ::statfs(path.c_str(), &sf) != 0 && errno == ENOTCONN;
}

}  // namespace

Status ClearStaleMount(const std::string& mountpoint, std::FILE* out) {
  const std::string abs = Absolute(mountpoint);
  for (int i = 0; i < kMaxDetach; ++i) {
    if (!Dead(mountpoint)) return Status::Ok();
    const std::string what = DescribeMount(abs);
    fmt::print(out,
               "walfs: {}: {} is still there but its daemon is gone (Transport endpoint is "
               "not connected: it was killed or crashed); detaching it\n",
               mountpoint, what);
    std::string why;
    if (geteuid() == 0) {
      if (::umount2(mountpoint.c_str(), MNT_DETACH) != 0)
        why = fmt::format("umount2(MNT_DETACH): {}", std::strerror(errno));
    } else {
      why = FusermountLazy(mountpoint);
    }
    if (!why.empty()) {
      return Status::FromErrno(
          ENOTCONN, fmt::format("{}: cannot detach the dead mount ({}); run `fusermount3 -uz {}` "
                                "(or, as root, `umount -l {}`) and mount again",
                                mountpoint, why, mountpoint, mountpoint));
    }
  }
  return Status::FromErrno(
      ENOTCONN, fmt::format("{}: still not connected after detaching {} dead mounts; run "
                            "`umount -l {}` until `stat {}` works, and mount again",
                            mountpoint, kMaxDetach, mountpoint, mountpoint));
}

}  // namespace walfs::tools
