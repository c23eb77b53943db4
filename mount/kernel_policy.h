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

namespace walfs::mount {

struct KernelPolicy {
  // The kernel's page cache holds written data and writes it back later
  // (FUSE_CAP_WRITEBACK_CACHE); without it every write(2) is a WRITE.
  bool writeback_cache = false;
  // Answer poll(2) on the control files, so that poll/select/epoll on
  // .walfs/trace_pipe sleep until events arrive.  Off by default: the kernel
  // then also asks the daemon before every io_uring read or write of every
  // file (io_uring's nonblocking check polls a file without FMODE_NOWAIT),
  // a synchronous round trip that made 4 KiB io_uring reads 4x slower.
  // Off, the first poll request is refused with ENOSYS and the kernel stops
  // asking: poll reports every walfs file readable and writable.
  bool trace_poll = false;
  // How long the kernel may keep a name -> inode binding and an inode's
  // attributes without asking again, in seconds.
  double entry_timeout = 1.0;
  double attr_timeout = 1.0;

  // The INIT answer: which of the kernel's offered capabilities walfs wants.
  void Negotiate(fuse_conn_info* conn) const;

  // A reply for a name that now refers to `st` (st.st_ino already the
  // kernel's inode number).
  fuse_entry_param Entry(const struct stat& st) const;
  // A control-directory entry: never cached (its files change on their own).
  static fuse_entry_param UncachedEntry(const struct stat& st);
};

}  // namespace walfs::mount
