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
// later fsync: a file opened for writing while the free space is below the
// reserve (`wb_reserve_mb=`, default 256 MiB: many times the dirty data the
// kernel lets one FUSE mount hold, which is 1% of its dirty limit) is opened
// write-through (FOPEN_DIRECT_IO): its writes reach walfs as they are made
// and get ENOSPC when space runs out.  Files opened earlier keep the cache.
//
// Thread safety: every method may be called from any FUSE worker.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "base/mutex.h"

namespace walfs::mount {

class WritebackGuard {
 public:
  explicit WritebackGuard(std::uint64_t reserve_bytes) : reserve_bytes_(reserve_bytes) {}

  // Whether a file opened now for writing should bypass the kernel's cache.
  bool WriteThrough(std::uint64_t available_bytes) const { return available_bytes < reserve_bytes_; }

  // A write-back of ino failed with err: remembered for every later fsync.
  // True for the first loss since the file was last emptied.
  bool Lost(std::uint64_t ino, int err) EXCLUDES(mu_);
  // The error a write-back of ino got, 0 if none.
  int LostErrno(std::uint64_t ino) const EXCLUDES(mu_);
  // The file was truncated to zero length: nothing lost is left in it.
  void Clear(std::uint64_t ino) EXCLUDES(mu_);

  std::uint64_t reserve_bytes() const { return reserve_bytes_; }
  std::uint64_t lost_writebacks() const EXCLUDES(mu_);

 private:
  const std::uint64_t reserve_bytes_;
  mutable Mutex mu_;  // leaf
  std::unordered_map<std::uint64_t, int> lost_ GUARDED_BY(mu_);  // ino -> errno
  std::uint64_t lost_count_ GUARDED_BY(mu_) = 0;
};

}  // namespace walfs::mount
