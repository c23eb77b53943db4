// ShortWorkload: short operation sequences after an fsync, where most crash
// bugs hide (CrashMonkey's ACE, "seq-1" / "seq-2").  A fixed setup makes
// two files with data and an xattr, A in the root and B in directory d, and
// fsyncs both and both directories; then 1 to 4 core operations run on A or
// B, each followed by a persistence point (none, fsync or fdatasync of the
// file, fsync of its directory, fsync of the other file).  The last one
// always has a persistence point.  Only crash states after the setup are
// checked.
//
// Sequences are numbered by seed, systematically first:
//   seeds 1 .. kSeq1               every core op x every final persistence
//                                  (seeds 1..32: each op on A and B, then fsync)
//   the next kSeq2                 every pair (seq-2)
//   above                          seeded random sequences of 3 or 4 ops
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "crash/workload.h"

namespace walfs::crash {

enum class ShortCore : std::uint8_t {
  kAppend,           // 3000 bytes at the end
  kOverwrite,        // 4 KiB at byte 1000 (two blocks, unaligned)
  kTruncateDown,     // to a third (unaligned)
  kTruncateUp,       // 10000 bytes more
  kSetXattr,         // replace user.a
  kRemoveXattr,      // user.a
  kLink,             // a new name in the other directory
  kUnlink,           // its first name (the file stays open)
  kRename,           // to a new name in its directory
  kRenameOtherDir,   // to a new name in the other directory
  kRenameOver,       // over the other file's name
  kExchange,         // RENAME_EXCHANGE with the other file
  kCreateSibling,    // a new file with data beside it
  kReplaceViaTmp,    // write a temp file, fsync it, rename it over the file
  kMoveIntoNewDir,   // mkdir beside it, rename it into that directory
  kRenameParent,     // rename directory d (B's parent)
  kCount
};
enum class ShortPersist : std::uint8_t { kNone, kFsync, kFdatasync, kFsyncDir, kFsyncOther, kCount };

struct ShortOp {
  ShortCore core;
  int target;  // 0: A, 1: B
  ShortPersist persist;
};

constexpr std::uint64_t kShortCoreOps = static_cast<std::uint64_t>(ShortCore::kCount) * 2;
constexpr std::uint64_t kShortPersists = static_cast<std::uint64_t>(ShortPersist::kCount);
constexpr std::uint64_t kSeq1 = kShortCoreOps * (kShortPersists - 1);
constexpr std::uint64_t kSeq2 = kShortCoreOps * kShortPersists * kSeq1;

// The sequence seed `seed` (1-based) stands for.
std::vector<ShortOp> ShortSequence(std::uint64_t seed);
// "rename-over(A) fsync; append(B) -", for reports.
std::string DescribeSequence(const std::vector<ShortOp>& seq);

class ShortWorkload final : public Workload {
 public:
  explicit ShortWorkload(std::uint64_t seed) : Workload(seed, false), seq_(ShortSequence(seed)) {}
  const std::vector<ShortOp>& sequence() const { return seq_; }

 private:
  Status Body() override;
  Status Setup();
  Status Core(const ShortOp& op, int step);
  Status Persist(const ShortOp& op);
  // A file's first name, its directory (as an index into h_.dirs), and the
  // directory it is not in.
  const Name* NameOf(int fid) const;
  int DirOf(int fid) const;
  int OtherDir(int fid) const;

  std::vector<ShortOp> seq_;
  int files_[2] = {0, 0};  // fids of A and B
  int d_ = 0;              // directory d
};

}  // namespace walfs::crash
