// FsSyncer: makes a filesystem durable from outside its daemon, the way that
// works on it -- what `walfs sync` and walfs-aim's syncs use.
//
// sync(2) and syncfs(2) start writing the kernel's dirty pages of a FUSE
// mount (with -o writeback_cache) to its daemon -- without waiting for the
// daemon to have them: FUSE writeback completes asynchronously to sync --
// and never ask the daemon for durability (FUSE_SYNCFS goes to virtiofs
// only).  On walfs, Sync() therefore runs syncfs and then writes the mount's
// `.walfs/sync` (mount/sync_file.h), whose write returns once the log is
// forced and the image flushed: everything the daemon was given before is
// durable (a closed file's pages were given at its close; an open file's
// cached pages may still be on their way, so fsync that file).  On any other
// filesystem it is syncfs.
//
//   WALFS_ASSIGN_OR_RETURN(FsSyncer syncer, FsSyncer::Open(dir_fd));  // at setup
//   WALFS_RETURN_IF_ERROR(syncer.Sync());                             // as often as needed
//
// A walfs mount is recognised by the mount table: the entry whose device is
// the file's st_dev, of type fuse.walfs.  Its control file is opened at its
// mount point (which must show the filesystem's root: a bind mount of a
// walfs subdirectory is refused, as are a mount point hidden by another
// mount and a daemon without the file).  No FUSE header, no fs dependency.
#pragma once

#include <string>
#include <utility>

#include "base/status.h"

namespace walfs::mount {

class FsSyncer {
 public:
  // On walfs: the mount's .walfs/sync is opened now and kept open.
  // `fd` (any file or directory) must stay open while the syncer is used.
  static Result<FsSyncer> Open(int fd);
  // As Open, but a filesystem other than walfs is NotFound, saying so
  // ("/tmp is not on a walfs mount (it is ext4)").  `what` names `fd` in
  // messages.
  static Result<FsSyncer> OpenWalfs(int fd, const std::string& what);

  FsSyncer(FsSyncer&& other) noexcept;
  FsSyncer& operator=(FsSyncer&& other) noexcept;
  FsSyncer(const FsSyncer&) = delete;
  FsSyncer& operator=(const FsSyncer&) = delete;
  ~FsSyncer();

  // Every change made before the call is durable when it returns OK.
  Status Sync() const;

  // Syncs through the control file (false elsewhere, and on a read-only
  // walfs mount, which has nothing to sync: Sync() is syncfs alone there).
  bool walfs() const { return control_fd_ >= 0; }
  // The walfs mount point ("" on other filesystems).
  const std::string& mountpoint() const { return mountpoint_; }

 private:
  FsSyncer(int fd, int control_fd, std::string mountpoint)
      : fd_(fd), control_fd_(control_fd), mountpoint_(std::move(mountpoint)) {}
  static Result<FsSyncer> OpenImpl(int fd, const std::string& what, bool require_walfs);

  int fd_ = -1;          // the caller's
  int control_fd_ = -1;  // ours: MOUNTPOINT/.walfs/sync, write-only
  std::string mountpoint_;
};

}  // namespace walfs::mount
