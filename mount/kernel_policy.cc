#include "mount/kernel_policy.h"

#include <fmt/format.h>

namespace walfs::mount {

void KernelPolicy::Negotiate(fuse_conn_info* conn) const {
  if (writeback_cache && (conn->capable & FUSE_CAP_WRITEBACK_CACHE)) conn->want |= FUSE_CAP_WRITEBACK_CACHE;
  // Requests arrive through read(2) on /dev/fuse, where SessionIo sees them
  // (splice would bypass it; libfuse only splices for a write_buf handler).
  conn->want &= ~FUSE_CAP_SPLICE_READ;
  // The kernel clears setuid/setgid on write, truncate and chown itself and
  // tells walfs through setattr (walfs does not know the writer's
  // capabilities, which decide it).
  conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
  // Byte-range and flock locks stay the kernel's own (local to this mount,
  // which is the image's only user).
  if (conn->capable & FUSE_CAP_POSIX_LOCKS) conn->want &= ~FUSE_CAP_POSIX_LOCKS;
  if (conn->capable & FUSE_CAP_FLOCK_LOCKS) conn->want &= ~FUSE_CAP_FLOCK_LOCKS;
  // POSIX ACLs: the kernel enforces and caches them; walfs keeps them in
  // step with the mode and applies the umask itself, which a directory's
  // default ACL replaces (fs/filesystem_acl.cc, docs/fs.md "POSIX ACLs").
  if (conn->capable & FUSE_CAP_POSIX_ACL) conn->want |= FUSE_CAP_POSIX_ACL;
  if (conn->capable & FUSE_CAP_DONT_MASK) conn->want |= FUSE_CAP_DONT_MASK;
  // fstrim sends FITRIM on the mount's root directory; libfuse refuses
  // directory ioctls with ENOTTY unless this was granted (it is libfuse's
  // default; asked for here so that the choice is written down).
  if (conn->capable & FUSE_CAP_IOCTL_DIR) conn->want |= FUSE_CAP_IOCTL_DIR;
}

std::string KernelPolicy::OptionsText() const {
  auto onoff = [](bool b) { return b ? "on" : "off"; };
  return fmt::format(
      "writeback_cache={}\nwb_reserve_mb={}\nwb_push_ms={}\nattr_timeout={}\nentry_timeout={}\n"
      "negative_timeout={}\nflush_requests={}\nopendir_requests={}\nkillpriv_v2={}\ntrace_poll={}\n"
      "transport={}\nuring_lanes={}\n",
      onoff(writeback_cache), writeback_reserve_bytes >> 20, writeback_push_ms, attr_timeout, entry_timeout,
      negative_timeout, onoff(!skip_flush), onoff(!skip_opendir), onoff(killpriv_v2), onoff(trace_poll), transport,
      uring_lanes);
}

fuse_entry_param KernelPolicy::Entry(const struct stat& st) const {
  fuse_entry_param e{};
  e.ino = st.st_ino;
  e.attr = st;
  e.attr_timeout = attr_timeout;
  e.entry_timeout = entry_timeout;
  return e;
}

fuse_entry_param KernelPolicy::NegativeEntry() const {
  fuse_entry_param e{};  // ino 0: the kernel keeps a negative dentry
  e.entry_timeout = negative_timeout;
  return e;
}

fuse_entry_param KernelPolicy::UncachedEntry(const struct stat& st) {
  fuse_entry_param e{};
  e.ino = st.st_ino;
  e.attr = st;
  return e;
}

}  // namespace walfs::mount
