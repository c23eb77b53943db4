// Filesystem::Op: one filesystem operation's transaction -- the journal
// transaction with its held buffers (FsTransaction), the in-core inodes it
// changed (written into their chunk blocks when each step commits, in
// ascending order), and the blocks it reserved up front.
//
//   Op op(this);
//   WALFS_RETURN_IF_ERROR(op.Begin(TransType::kCreate, /*blocks=*/16));
//   ... change inodes (StoreCore), op.Dirty(ip) ...
//   WALFS_RETURN_IF_ERROR(op.Commit());
//
// Dropping an Op without Commit cancels it (a dirty cancel shuts the log
// down: the in-core state can no longer be trusted).
#pragma once

#include <optional>
#include <vector>

#include "fs/filesystem.h"
#include "fs/fs_trans.h"

namespace walfs::fs {

class Filesystem::Op {
 public:
  explicit Op(Filesystem* fs) : fs_(fs) {}
  ~Op();
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  // `blocks`: the most the operation may allocate; `freeing`: it is freeing
  // space, and may use the pool kept for that.
  Status Begin(journal::TransType type, std::uint64_t blocks, bool freeing = false);
  FsTransaction* tx() { return &*tx_; }
  void Dirty(const InodeRef& ip);
  // The same for a change of the inode's timestamps alone (fdatasync does
  // not force such a change).  A Dirty() of the same inode in the same
  // operation wins.
  void DirtyTimestamps(const InodeRef& ip);
  // Changes an inode's unlinked-list link: in memory now, and in its chunk
  // block (that field alone) when the step commits -- never through a
  // Dirty() of an inode this operation does not own (whose in-core state
  // may carry another operation's uncommitted changes).
  void SetNextUnlinked(const InodeRef& ip, std::uint64_t next);
  // Commits; every dirty inode's last_seq (and, unless only its timestamps
  // changed, its datasync_seq) becomes the commit's sequence.
  Result<std::uint64_t> Commit();
  // Commits this step and starts the next with nothing held.
  Status Roll() { return tx_->RollReleasing(); }

 private:
  Status LogInodes(FsTransaction* tx);
  Filesystem* const fs_;
  std::optional<FsTransaction> tx_;
  std::vector<InodeRef> dirty_;
  std::vector<const Inode*> timestamps_only_;  // of dirty_: DirtyTimestamps() alone
  std::vector<std::pair<std::uint64_t, std::uint64_t>> next_patches_;  // ino, next_unlinked
  std::uint64_t reserved_ = 0;
};

// Replaces an inode's in-core core with `next` (a changed copy), keeping the
// unlinked-list link, which belongs to the unlinked-list code.
void StoreCore(const InodeRef& ip, format::InodeCore next);
format::Timestamp Now();
// A directory entry's file type (DT_*) for an inode mode.
std::uint8_t DirentType(std::uint32_t mode);
// The error an operation returns to a POSIX caller (Status::ToErrno).
inline Status Errno(int err, std::string_view what) { return Status::FromErrno(err, what); }

}  // namespace walfs::fs
