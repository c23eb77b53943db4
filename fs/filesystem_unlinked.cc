// The unlinked lists (XFS's AGI unlinked buckets, one list per AG): an
// inode whose last link goes while it is still open is put on its AG's
// list in the same transaction, taken off when it is freed, and a mount
// after a crash frees what the lists still hold (ProcessUnlinkedLists).
// The list's head is in the AG header; each inode names the next
// (next_unlinked, changed only through Op::SetNextUnlinked); the
// predecessors are kept in memory (unlinked_prev_) so that a removal is one
// step, except for lists a crashed mount left, walked on disk.
#include "fs/filesystem.h"

#include <optional>

#include <fmt/format.h>

#include "base/coding.h"
#include "fs/format/ag_format.h"
#include "fs/format/block_types.h"
#include "fs/fs_op.h"

namespace walfs::fs {

namespace {
constexpr std::uint32_t kUnlinkedHeadOffset = 72;  // in the AG header (ag_format.h)
}  // namespace

Status Filesystem::ProcessUnlinkedLists() {
  for (std::uint32_t agno = 0; agno < sb_.ag_count; ++agno) {
    for (;;) {
      std::uint64_t head;
      {
        WALFS_ASSIGN_OR_RETURN(BufRef agh, cache_->Read(sb_.AgStart(agno), format::BlockType::kAgHeader));
        agh->Lock();
        head = DecodeFixed64(reinterpret_cast<const char*>(agh->data().data()) + kUnlinkedHeadOffset);
        agh->Unlock();
      }
      if (head == 0) break;
      WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(head));
      if (ip->Core().nlink != 0)
        return Status::Corruption(fmt::format("inode {} is on AG {}'s unlinked list with links", head, agno));
      WALFS_RETURN_IF_ERROR(Inactivate(ip));
      ip.reset();
      icache_->Evict(head);
    }
  }
  return Status::Ok();
}

Status Filesystem::AddUnlinked(Op& op, const InodeRef& ip) NO_THREAD_SAFETY_ANALYSIS {
  const std::uint32_t agno = ialloc_->AgOf(ip->ino);
  WALFS_ASSIGN_OR_RETURN(BufRef agh, cache_->Read(sb_.AgStart(agno), format::BlockType::kAgHeader));
  if (!op.tx()->HoldAgHeader(agh, agno))
    return Status::Internal(fmt::format("AG {} header out of order for the unlinked list", agno));
  char* p = reinterpret_cast<char*>(agh->data().data());
  const std::uint64_t head = DecodeFixed64(p + kUnlinkedHeadOffset);
  op.SetNextUnlinked(ip, head);
  EncodeFixed64(p + kUnlinkedHeadOffset, ip->ino);
  op.tx()->LogRange(agh, kUnlinkedHeadOffset, kUnlinkedHeadOffset + 7);
  {
    MutexLock l(&unlinked_mu_);
    if (head != 0) unlinked_prev_[head] = ip->ino;
  }
  return Status::Ok();
}

Status Filesystem::RemoveUnlinked(Op& op, const InodeRef& ip) NO_THREAD_SAFETY_ANALYSIS {
  const std::uint32_t agno = ialloc_->AgOf(ip->ino);
  WALFS_ASSIGN_OR_RETURN(BufRef agh, cache_->Read(sb_.AgStart(agno), format::BlockType::kAgHeader));
  if (!op.tx()->HoldAgHeader(agh, agno))
    return Status::Internal(fmt::format("AG {} header out of order for the unlinked list", agno));
  const std::uint64_t next = ip->Core().next_unlinked;
  op.SetNextUnlinked(ip, 0);
  std::optional<std::uint64_t> prev;
  {
    MutexLock l(&unlinked_mu_);
    auto it = unlinked_prev_.find(ip->ino);
    if (it != unlinked_prev_.end()) {
      prev = it->second;
      unlinked_prev_.erase(it);
    }
    if (next != 0) {
      if (prev)
        unlinked_prev_[next] = *prev;
      else
        unlinked_prev_.erase(next);
    }
  }
  if (!prev) {
    char* p = reinterpret_cast<char*>(agh->data().data());
    if (DecodeFixed64(p + kUnlinkedHeadOffset) != ip->ino) {
      // Inherited from a crashed mount: find the predecessor on disk.
      std::uint64_t at = DecodeFixed64(p + kUnlinkedHeadOffset);
      while (at != 0) {
        WALFS_ASSIGN_OR_RETURN(InodeRef pp, Iget(at));
        const std::uint64_t n = pp->Core().next_unlinked;
        if (n == ip->ino) {
          prev = at;
          break;
        }
        at = n;
      }
      if (!prev) return Status::Corruption(fmt::format("inode {} is not on AG {}'s unlinked list", ip->ino, agno));
    } else {
      EncodeFixed64(p + kUnlinkedHeadOffset, next);
      op.tx()->LogRange(agh, kUnlinkedHeadOffset, kUnlinkedHeadOffset + 7);
    }
  }
  if (prev) {
    WALFS_ASSIGN_OR_RETURN(InodeRef pp, Iget(*prev));
    op.SetNextUnlinked(pp, next);  // that field only: pp's other changes are its own operation's
  }
  return Status::Ok();
}
}  // namespace walfs::fs
