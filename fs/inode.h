// In-core inodes (XFS's xfs_inode and inode cache).  While a file is in use
// its inode lives in memory: the in-core core is the truth, and it reaches
// its chunk block only when a transaction that changed it commits
// (InodeCache::LogDirty, called from the transaction's precommit hook), so
// chunk blocks are locked last and in ascending order.
//
//   WALFS_ASSIGN_OR_RETURN(InodeRef ip, icache.Get(ino));
//   std::unique_lock l(ip->rw);          // the operation's lock
//   { MutexLock c(&ip->core_mu); ip->core.mtime = now; }
//   trans.MarkDirty(ip);                 // fs/fs_op.h
//
// Locks, in order: inode rw locks (ascending inode number when an operation
// takes several: rename, link), then AG headers (ascending), then other
// metadata buffers, then chunk blocks (ascending, at commit).  core_mu is a
// leaf lock guarding `core` for the moments it is read or changed.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <unordered_map>

#include "base/mutex.h"
#include "base/status.h"
#include "fs/format/inode_format.h"
#include "fs/ialloc.h"

namespace walfs::fs {

class Inode {
 public:
  explicit Inode(const format::InodeCore& c) : ino(c.ino), core(c) {}

  const std::uint64_t ino;
  // Serialises an operation's changes (exclusive) against its readers
  // (shared): data reads, lookups, readdir.
  std::shared_mutex rw;
  mutable Mutex core_mu;
  format::InodeCore core GUARDED_BY(core_mu);
  // The checkpoint sequence of the inode's last committed change (fsync
  // forces the log to it), and of its last change other than timestamps
  // (fdatasync forces the log to that one: the size, the block map and the
  // rest are needed to read the data back; mtime and ctime are not).
  std::atomic<std::uint64_t> last_seq{0};
  std::atomic<std::uint64_t> datasync_seq{0};
  // File data written in place since the last fsync (it needs a device
  // flush of its own if the log force has nothing to write).
  std::atomic<bool> data_dirty{false};
  // The kernel's lookup count (FUSE), and whether the inode is on its AG's
  // unlinked list (no links, still in use).
  std::uint64_t lookups = 0;  // guarded by the cache's mutex
  // An O_TMPFILE inode not linked yet: nlink 0, on the unlinked list, and
  // Link may give it its first name (the kernel's I_LINKABLE).
  std::atomic<bool> linkable{false};
  bool pinned = false;        // never evicted (the root)

  format::InodeCore Core() const {
    MutexLock l(&core_mu);
    return core;
  }
};
using InodeRef = std::shared_ptr<Inode>;

class InodeCache {
 public:
  // current_seq: the log's current checkpoint sequence.  An inode read
  // back from its chunk block may have been changed and evicted before that
  // change was durable, so it starts with last_seq = datasync_seq =
  // current_seq() and
  // data_dirty set: its first fsync forces everything (XFS keeps such
  // inodes in memory until written back; walfs forgets them and pays one
  // wider force instead).
  InodeCache(InodeAllocator* ialloc, std::function<std::uint64_t()> current_seq)
      : ialloc_(ialloc), current_seq_(std::move(current_seq)) {}

  // The in-core inode, read from its chunk block on a miss.  NotFound for a
  // free inode (a stale handle), Corruption for one that fails its checks.
  Result<InodeRef> Get(std::uint64_t ino);
  // Adds a freshly allocated inode (its core already set).
  InodeRef Insert(const format::InodeCore& core);
  // The kernel's lookup count.  Forget returns the inode when the count
  // reaches zero (the caller decides: evict, or free an unlinked inode).
  void AddLookup(const InodeRef& ip, std::uint64_t n = 1);
  InodeRef Forget(std::uint64_t ino, std::uint64_t n);
  // No lookup count from the kernel (an in-process caller's inode).
  bool Unused(const InodeRef& ip) const {
    MutexLock l(&mu_);
    return ip->lookups == 0 && !ip->pinned;
  }
  // Drops an inode nobody uses any more (lookups 0, no other reference).
  void Evict(std::uint64_t ino);
  std::size_t size() const;
  // Every cached inode (unmount, stats).
  std::vector<InodeRef> All() const;

 private:
  InodeAllocator* const ialloc_;
  const std::function<std::uint64_t()> current_seq_;
  mutable Mutex mu_;
  std::unordered_map<std::uint64_t, InodeRef> map_ GUARDED_BY(mu_);
  // Serialises misses so one inode is never loaded twice.
  Mutex load_mu_;
};

}  // namespace walfs::fs
