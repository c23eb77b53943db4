// WritebackGuard: what walfs promises about writes the kernel's page cache
// holds (the writeback cache, on by default).  With it, write(2) returns
// once the data is in the kernel's cache; walfs sees it only when the kernel
// writes it back, perhaps after close, and the kernel reserves no space for
// it.  So near a full disk a write could succeed and its data be lost.  The
// guarantee (docs/reliability.md, "Writes and a full disk"):
//
//   A write(2) that returned success is on disk after a successful fsync.
//   If writing it back failed, that fsync and every later fsync of the file
//   fail (with the error the write-back got, ENOSPC for a full disk), until
//   the file is truncated to zero length.
//
// and, so that programs see ENOSPC from write(2) itself rather than from a
// later fsync, and no write that returned success is lost for want of space:
//
//  - A file opened for writing while the free space is below the reserve
//    (`wb_reserve_mb=`, default 256 MiB) is opened write-through
//    (FOPEN_DIRECT_IO): its writes reach walfs as they are made and get
//    ENOSPC when space runs out.
//  - A file opened earlier keeps the cache, and the kernel reserves nothing
//    for what it accepts into it.  But it holds at most `dirty_bound` bytes
//    of this mount's data dirty (the bdi's max_bytes: strict_limit is on for
//    FUSE, max_ratio 1 %), and before each write(2) it refreshes the file's
//    mode if its attributes were invalidated (fuse_cache_write_iter:
//    fuse_update_attributes, STATX_MODE is not among what the writeback
//    cache keeps), with a GETATTR that names the open file.  So once the
//    free space falls below the reserve (low space), walfs invalidates the
//    attributes of every file open through the cache, answers each such
//    GETATTR and invalidates them again, so that every write(2) asks first;
//    and it refuses the GETATTR with ENOSPC -- which write(2) returns --
//    once the free space is below the gate: twice the dirty bound plus
//    kGateMarginBytes.  Everything the kernel had accepted before then fits
//    in what is left.  Reads and stat(2) are not refused: the kernel keeps
//    the size itself and asks for attributes on their behalf without naming
//    the open file.
//
// What this does not cover (docs/reliability.md): a single write(2) call
// larger than the gate's margin that starts just above the gate (the kernel
// asks once per call and writes back during it), and stores through a
// shared mapping (a page fault asks nothing); a failed write-back of those
// is still reported by fsync and msync.
//
// Thread safety: every method may be called from any FUSE worker.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/mutex.h"

namespace walfs::mount {

class WritebackGuard {
 public:
  // Margin above twice the dirty bound: one write(2) of up to this much,
  // admitted just above the gate, still fits.
  static constexpr std::uint64_t kGateMarginBytes = std::uint64_t{16} << 20;
  // The dirty bound when the bdi's cannot be read (a FUSE bdi at 1 % of a
  // dirty limit of 6.4 GiB; walfs reads the real one at mount).
  static constexpr std::uint64_t kDefaultDirtyBoundBytes = std::uint64_t{64} << 20;

  explicit WritebackGuard(std::uint64_t reserve_bytes) : reserve_bytes_(reserve_bytes) {}

  // Whether a file opened now for writing should bypass the kernel's cache.
  bool WriteThrough(std::uint64_t available_bytes) const { return available_bytes < low_space_bytes(); }

  // The most this mount's data the kernel may hold dirty (bytes).
  void SetDirtyBound(std::uint64_t bytes) { dirty_bound_.store(bytes, std::memory_order_relaxed); }
  std::uint64_t dirty_bound() const { return dirty_bound_.load(std::memory_order_relaxed); }
  // Below this much free space cached writers are refused.
  std::uint64_t gate_bytes() const { return 2 * dirty_bound() + kGateMarginBytes; }
  // Below this much free space the mount is in low space: the reserve, or
  // the gate if that is higher (a reserve below it would admit writes the
  // space left could not hold).  A reserve of 0 turns the guard off: the
  // cache is kept to the last block, and a write-back that finds no space
  // is reported by fsync only.
  std::uint64_t low_space_bytes() const {
    return reserve_bytes_ == 0 ? 0 : std::max(reserve_bytes_, gate_bytes());
  }

  // Called with the free space after a change to it.  True when the mount
  // has just entered low space: the caller must invalidate the attributes
  // of every CachedWriterInodes() so that their next write(2) asks.
  bool NoteAvailable(std::uint64_t available_bytes);
  bool low_space() const { return low_space_.load(std::memory_order_acquire); }
  // A cached writer's GETATTR in low space: whether its write(2) may go on.
  // Counts the refusals.
  bool AdmitCachedWrite(std::uint64_t available_bytes);
  std::uint64_t refused_writes() const { return refused_.load(std::memory_order_relaxed); }
  std::vector<std::uint64_t> CachedWriterInodes() const EXCLUDES(mu_);

  // A write-back of ino failed with err: remembered for every later fsync.
  // True for the first loss since the file was last emptied.
  bool Lost(std::uint64_t ino, int err) EXCLUDES(mu_);
  // The error a write-back of ino got, 0 if none.
  int LostErrno(std::uint64_t ino) const EXCLUDES(mu_);
  // The file was truncated to zero length: nothing lost is left in it.
  void Clear(std::uint64_t ino) EXCLUDES(mu_);

  // Handles open for writing through the kernel's cache (opened for write
  // and not write-through).  While ino has one, the kernel may hold dirty
  // pages of it that walfs has not seen: a handle is counted from the open
  // to its RELEASE, which the kernel sends only after it has written the
  // file's dirty pages back (fuse_release: write_inode_now) and after the
  // last mapping of it is gone (an mmap holds the open file).
  void CachedWriterOpened(std::uint64_t ino) EXCLUDES(mu_);
  void CachedWriterReleased(std::uint64_t ino) EXCLUDES(mu_);
  bool HasCachedWriters(std::uint64_t ino) const EXCLUDES(mu_);
  // Told, under the guard's lock, each time a file's first such handle
  // opens (open = true) and its last one is released (false), with
  // whether any file still has one: only those files' pages may the kernel
  // hold dirty (the writeback push, mount/writeback_push.h).  Set before
  // the session serves; `observer` must not call back into the guard.
  using WritersObserver = std::function<void(std::uint64_t ino, bool open, bool any)>;
  void SetWritersObserver(WritersObserver observer) { writers_observer_ = std::move(observer); }

  std::uint64_t reserve_bytes() const { return reserve_bytes_; }
  std::uint64_t lost_writebacks() const EXCLUDES(mu_);

 private:
  const std::uint64_t reserve_bytes_;
  std::atomic<std::uint64_t> dirty_bound_{kDefaultDirtyBoundBytes};
  std::atomic<bool> low_space_{false};
  std::atomic<std::uint64_t> refused_{0};
  mutable Mutex mu_;  // leaf
  std::unordered_map<std::uint64_t, int> lost_ GUARDED_BY(mu_);  // ino -> errno
  std::uint64_t lost_count_ GUARDED_BY(mu_) = 0;
  std::unordered_map<std::uint64_t, std::uint32_t> cached_writers_ GUARDED_BY(mu_);  // ino -> handles
  WritersObserver writers_observer_;  // set before any writer
};

}  // namespace walfs::mount
