// Filesystem (fs/filesystem.h): what every operation stands on -- block
// reservations for a transaction, the read-only and shutdown checks, inode
// lookup by number (Iget), stat(2)'s view of an inode -- and the inode
// operations that are not a family of their own (getattr, forget).  The
// families live beside it: the mount's life (filesystem_mount.cc), the
// namespace (filesystem_namei.cc), the unlinked lists
// (filesystem_unlinked.cc), data (filesystem_data.cc), attributes and
// xattrs (filesystem_xattr.cc, filesystem_acl.cc), growth, trim, repair,
// errors and stats (filesystem_<concern>.cc); one operation's transaction
// is fs/fs_op.h.
#include "fs/filesystem.h"

#include <fmt/format.h>

#include "base/messages.h"
#include "fs/fs_op.h"

namespace walfs::fs {

using format::InodeCore;

Status Filesystem::ReserveBlocks(std::uint64_t n, bool freeing) {
  // Free now (the allocator's count, which this operation's own
  // allocations lower while its reservation still stands: conservative)
  // minus what running operations may still take, minus the freeing pool.
  const std::int64_t pool = freeing ? 0 : kFreeingPool;
  std::int64_t r = reserved_blocks_.load(std::memory_order_relaxed);
  for (;;) {
    if (alloc_->FreeTotal() - r - pool < static_cast<std::int64_t>(n)) return Errno(ENOSPC, "no free space");
    if (reserved_blocks_.compare_exchange_weak(r, r + static_cast<std::int64_t>(n))) return Status::Ok();
  }
}

void Filesystem::UnreserveBlocks(std::uint64_t n) {
  reserved_blocks_.fetch_sub(static_cast<std::int64_t>(n));
}

Status Filesystem::CheckWritable() const {
  if (options_.read_only) return Errno(EROFS, "read-only filesystem");
  if (log_->IsShutdown()) return Status::Shutdown(fmt::format("the filesystem is shut down: {}", log_->status().ToString()));
  return Status::Ok();
}

Result<InodeRef> Filesystem::Iget(std::uint64_t ino) {
  if (ino / sb_.inodes_per_block() < sb_.data_start() || ino / sb_.inodes_per_block() >= sb_.total_blocks)
    return Errno(ESTALE, fmt::format("inode {} is outside the filesystem", ino));
  Result<InodeRef> ip = icache_->Get(ino);
  if (!ip.ok() && ip.status().code() == StatusCode::kNotFound) return Errno(ESTALE, ip.status().message());
  return ip;
}

struct stat Filesystem::StatOf(const InodeCore& c) const {
  struct stat st {};
  st.st_ino = c.ino;
  st.st_mode = c.mode;
  st.st_nlink = c.nlink;
  st.st_uid = c.uid;
  st.st_gid = c.gid;
  st.st_rdev = c.rdev;
  st.st_size = static_cast<off_t>(c.size);
  st.st_blksize = sb_.block_size;
  st.st_blocks = static_cast<blkcnt_t>(c.nblocks * (sb_.block_size / 512));
  st.st_atim = {c.atime.sec, c.atime.nsec};
  st.st_mtim = {c.mtime.sec, c.mtime.nsec};
  st.st_ctim = {c.ctime.sec, c.ctime.nsec};
  return st;
}

void Filesystem::Forget(std::uint64_t ino, std::uint64_t n) {
  InodeRef ip = icache_->Forget(ino, n);
  if (!ip) return;
  if (ip->Core().nlink == 0 && !options_.read_only && !log_->IsShutdown()) {
    Status s = Inactivate(ip);
    if (!s.ok()) Message(Severity::kError, "{}: freeing unlinked inode {}: {}", options_.image, ino, s.ToString());
  }
  ip.reset();
  icache_->Evict(ino);
}

Result<struct stat> Filesystem::GetAttr(std::uint64_t ino) {
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  // Under the core's lock rather than from a Core() copy: the copy would
  // allocate and copy the literal area (400+ bytes) for every GETATTR.
  MutexLock l(&ip->core_mu);
  return StatOf(ip->core);
}

}  // namespace walfs::fs
