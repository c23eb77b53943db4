// Filesystem::Op (fs/fs_op.h): one operation's transaction, the inodes it
// dirtied and the blocks it reserved; and the helpers every operation uses
// to change an inode (StoreCore), stamp it (Now) and name its type (DirentType).
#include "fs/fs_op.h"

#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <atomic>

namespace walfs::fs {

using format::InodeCore;
using journal::TransType;

std::uint8_t DirentType(std::uint32_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return DT_REG;
    case S_IFDIR: return DT_DIR;
    case S_IFLNK: return DT_LNK;
    case S_IFCHR: return DT_CHR;
    case S_IFBLK: return DT_BLK;
    case S_IFIFO: return DT_FIFO;
    case S_IFSOCK: return DT_SOCK;
    default: return DT_UNKNOWN;
  }
}

format::Timestamp Now() {
  // The kernel's current_time(): the coarse clock (a tick's resolution), so
  // that back-to-back writes find the timestamps already current and log
  // nothing (Write skips its transaction then).
  timespec ts{};
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return format::Timestamp{ts.tv_sec, static_cast<std::uint32_t>(ts.tv_nsec)};
}

void StoreCore(const InodeRef& ip, InodeCore next) {
  MutexLock l(&ip->core_mu);
  next.next_unlinked = ip->core.next_unlinked;
  ip->core = std::move(next);
}

Filesystem::Op::~Op() {
  if (tx_) tx_->Cancel();
  if (reserved_) fs_->UnreserveBlocks(reserved_);
}

Status Filesystem::Op::Begin(TransType type, std::uint64_t blocks, bool freeing) {
  if (blocks) {
    WALFS_RETURN_IF_ERROR(fs_->ReserveBlocks(blocks, freeing));
    reserved_ = blocks;
  }
  WALFS_ASSIGN_OR_RETURN(FsTransaction tx, FsTransaction::Begin(fs_->log_.get(), type));
  tx_.emplace(std::move(tx));
  tx_->CountAgHeaderWaits(&fs_->counters_.ag_header);
  tx_->SetPrecommit([this](FsTransaction* t) { return LogInodes(t); });
  return Status::Ok();
}

void Filesystem::Op::Dirty(const InodeRef& ip) {
  std::erase(timestamps_only_, ip.get());
  if (std::none_of(dirty_.begin(), dirty_.end(), [&](const InodeRef& d) { return d.get() == ip.get(); }))
    dirty_.push_back(ip);
}

void Filesystem::Op::DirtyTimestamps(const InodeRef& ip) {
  if (std::any_of(dirty_.begin(), dirty_.end(), [&](const InodeRef& d) { return d.get() == ip.get(); })) return;
  dirty_.push_back(ip);
  timestamps_only_.push_back(ip.get());
}

void Filesystem::Op::SetNextUnlinked(const InodeRef& ip, std::uint64_t next) {
  {
    MutexLock l(&ip->core_mu);
    ip->core.next_unlinked = next;
  }
  for (auto& [ino, n] : next_patches_)
    if (ino == ip->ino) {
      n = next;
      return;
    }
  next_patches_.emplace_back(ip->ino, next);
}

Status Filesystem::Op::LogInodes(FsTransaction* tx) {
  // Chunk blocks last and in ascending order: inode order is block order.
  std::sort(dirty_.begin(), dirty_.end(), [](const InodeRef& a, const InodeRef& b) { return a->ino < b->ino; });
  std::sort(next_patches_.begin(), next_patches_.end());
  auto patch = next_patches_.begin();
  for (const InodeRef& ip : dirty_) {
    for (; patch != next_patches_.end() && patch->first < ip->ino; ++patch)
      WALFS_RETURN_IF_ERROR(fs_->ialloc_->LogInode(tx, patch->first, nullptr, patch->second));
    std::optional<std::uint64_t> next;
    if (patch != next_patches_.end() && patch->first == ip->ino) next = (patch++)->second;
    const InodeCore core = ip->Core();
    WALFS_RETURN_IF_ERROR(fs_->ialloc_->LogInode(tx, ip->ino, &core, next));
  }
  for (; patch != next_patches_.end(); ++patch)
    WALFS_RETURN_IF_ERROR(fs_->ialloc_->LogInode(tx, patch->first, nullptr, patch->second));
  next_patches_.clear();
  return Status::Ok();
}

Result<std::uint64_t> Filesystem::Op::Commit() {
  Result<std::uint64_t> seq = tx_->Commit();
  tx_.reset();
  if (!seq.ok()) return seq;
  auto raise = [&](std::atomic<std::uint64_t>& to) {
    std::uint64_t prev = to.load(std::memory_order_relaxed);
    while (prev < *seq && !to.compare_exchange_weak(prev, *seq)) {
    }
  };
  for (const InodeRef& ip : dirty_) {
    raise(ip->last_seq);
    if (std::find(timestamps_only_.begin(), timestamps_only_.end(), ip.get()) == timestamps_only_.end())
      raise(ip->datasync_seq);
  }
  return seq;
}
}  // namespace walfs::fs
