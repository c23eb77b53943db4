// KernelPolicy: what walfs lets the kernel's FUSE client cache, and which
// requests it tells the kernel it need not send.  Every FUSE request is a
// round trip (10-20 us here) that a kernel filesystem never pays; walfs is
// its image's only writer and every change to the image passes through this
// mount, so the kernel may cache whatever it watches change itself.  Each
// choice below names what it saves and why no cached state can hide a change
// (docs/fuse_policy.md has the table with the measurements).
//
//   KernelPolicy policy{.writeback_cache = true};
//   policy.Negotiate(conn);                        // the INIT handler
//   fuse_entry_param e = policy.Entry(ino, st);    // lookup/create/mkdir replies
#pragma once

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>

namespace walfs::mount {

struct KernelPolicy {
  // The kernel's page cache holds written data and writes it back later
  // (FUSE_CAP_WRITEBACK_CACHE); without it every write(2) is a WRITE.  What
  // a write that returned success is then promised: mount/writeback_guard.h.
  bool writeback_cache = true;
  // Below this much free space, files opened for writing bypass the cache
  // (WritebackGuard).
  std::uint64_t writeback_reserve_bytes = std::uint64_t{256} << 20;
  // While a file is open for writing through the cache, the kernel is made
  // to write this mount's dirty pages back to walfs every this many
  // milliseconds (mount/writeback_push.h): what a killed daemon can lose of
  // such writes.  0: only the kernel's own write-back (about 30 s).
  int writeback_push_ms = 10;
  // Answer poll(2) on the control files, so that poll/select/epoll on
  // .walfs/trace_pipe sleep until events arrive.  Off by default: the kernel
  // then also asks the daemon before every io_uring read or write of every
  // file (io_uring's nonblocking check polls a file without FMODE_NOWAIT),
  // a synchronous round trip that made 4 KiB io_uring reads 4x slower.
  // Off, the first poll request is refused with ENOSYS and the kernel stops
  // asking: poll reports every walfs file readable and writable.
  bool trace_poll = false;
  // Take over clearing setuid/setgid from the kernel (FUSE_HANDLE_KILLPRIV_V2,
  // through SessionIo): the kernel stops asking for security.capability
  // before writes and for the attributes before each chown.
  bool killpriv_v2 = true;
  // How requests reach the daemon (mount/uring_transport.h): "auto" (the
  // io_uring rings when the kernel offers them, /dev/fuse otherwise),
  // "uring" (the same, and a warning when they are not offered) or "dev".
  std::string transport = "auto";
  // Lanes (threads, each with one ring entry) per CPU queue of the rings:
  // how many of a CPU's requests are served at once.
  std::uint32_t uring_lanes = 4;
  // FLUSH (every close(2)) is refused with ENOSYS and the kernel stops
  // sending it: walfs keeps no per-open state a close could end, and the
  // kernel still writes its cached pages back before close returns.
  bool skip_flush = true;
  // OPENDIR is refused with ENOSYS and the kernel stops sending it and
  // RELEASEDIR: a walfs directory needs no open state (readdir cookies are
  // stable offsets), and the kernel then caches readdir results, dropping
  // them when it changes the directory itself (walfs is the only writer).
  bool skip_opendir = true;
  // How long the kernel may keep a name -> inode binding and an inode's
  // attributes without asking again, in seconds.  Long: the kernel makes
  // every change itself and updates or invalidates what it cached (and walfs
  // invalidates what it changes on its own: set-id bits cleared by a WRITE).
  double entry_timeout = 86400;
  double attr_timeout = 86400;
  // How long a name that does not exist stays known not to exist (a
  // negative dentry): a create in that directory replaces it.  0: the kernel
  // asks again every time (create after lookup, `make`'s stat storms).
  double negative_timeout = 86400;

  // The INIT answer: which of the kernel's offered capabilities walfs wants.
  void Negotiate(fuse_conn_info* conn) const;

  // A reply for a name that now refers to `st` (st.st_ino already the
  // kernel's inode number).
  // The policy as `-o` options, one `name=value` a line, in walfs(8)'s
  // words (writeback_cache=on, wb_reserve_mb=256, ...): the mount's part
  // of .walfs/mount_options.
  std::string OptionsText() const;
  fuse_entry_param Entry(const struct stat& st) const;
  // The reply for a name that does not exist.
  fuse_entry_param NegativeEntry() const;
  // A control-directory entry: never cached (its files change on their own).
  static fuse_entry_param UncachedEntry(const struct stat& st);
};

}  // namespace walfs::mount
