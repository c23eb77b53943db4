// RandomWorkload: a long seeded random POSIX workload -- creates, mkdir and
// rmdir, symlinks (inline and block targets), sparse, unaligned, appending
// and overwriting writes, truncates up and down (and, with `preallocate`,
// fallocates that writes then land in), renames within and across
// directories and over existing files, links, unlinks, xattrs,
// fsync/fdatasync, and forgets (the kernel dropping an inode).
#pragma once

#include <cstdint>
#include <random>

#include "crash/workload.h"

namespace walfs::crash {

struct RandomWorkloadOptions {
  int ops = 400;
  // false: the kernel keeps every linked inode (forgets only unlinked ones);
  // see FsyncAfterTheInodeWasForgottenForcesItsChanges.
  bool forget_linked = true;
  bool low_lsn = false;  // see Content
  // Half the truncates become fallocates (with and without KEEP_SIZE), so
  // that writes land in unwritten extents (a seed's operations differ from
  // the same seed's without).
  bool preallocate = false;
};

class RandomWorkload final : public Workload {
 public:
  RandomWorkload(std::uint64_t seed, RandomWorkloadOptions options)
      : Workload(seed, options.low_lsn), options_(options), rng_(seed) {}

 private:
  Status Body() override;
  Status Step();
  std::uint64_t R(std::uint64_t n) { return n ? rng_() % n : 0; }
  bool P(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) { return v[R(v.size())]; }

  Status CreateOp(bool symlink);
  Status MakeDirOp();
  Status WriteOp();
  Status TruncateOp();
  Status FallocateOp();
  Status RenameOp();
  Status LinkOp();
  Status UnlinkOp();
  Status RmdirOp();
  Status XattrOp();
  Status FsyncOp();
  Status ForgetOp();

  RandomWorkloadOptions options_;
  std::mt19937_64 rng_;
};

}  // namespace walfs::crash
