#include "fs/inode.h"

#include <fmt/format.h>

namespace walfs::fs {

Result<InodeRef> InodeCache::Get(std::uint64_t ino) {
  {
    MutexLock l(&mu_);
    auto it = map_.find(ino);
    if (it != map_.end()) return it->second;
  }
  MutexLock load(&load_mu_);
  {
    MutexLock l(&mu_);
    auto it = map_.find(ino);
    if (it != map_.end()) return it->second;
  }
  WALFS_ASSIGN_OR_RETURN(format::InodeCore core, ialloc_->ReadCore(nullptr, ino));
  if (core.free()) return Status::NotFound(fmt::format("inode {} is not in use", ino));
  auto ip = std::make_shared<Inode>(core);
  if (current_seq_) {
    const std::uint64_t seq = current_seq_();
    ip->last_seq.store(seq);
    ip->datasync_seq.store(seq);
  }
  ip->data_dirty.store(true);
  MutexLock l(&mu_);
  map_.emplace(ino, ip);
  return ip;
}

InodeRef InodeCache::Insert(const format::InodeCore& core) {
  auto ip = std::make_shared<Inode>(core);
  MutexLock l(&mu_);
  map_[core.ino] = ip;
  return ip;
}

void InodeCache::AddLookup(const InodeRef& ip, std::uint64_t n) {
  MutexLock l(&mu_);
  ip->lookups += n;
}

InodeRef InodeCache::Forget(std::uint64_t ino, std::uint64_t n) {
  MutexLock l(&mu_);
  auto it = map_.find(ino);
  if (it == map_.end()) return nullptr;
  Inode& ip = *it->second;
  ip.lookups = n >= ip.lookups ? 0 : ip.lookups - n;
  if (ip.lookups != 0 || ip.pinned) return nullptr;
  return it->second;
}

void InodeCache::Evict(std::uint64_t ino) {
  MutexLock l(&mu_);
  auto it = map_.find(ino);
  if (it == map_.end()) return;
  // Someone found it again (a lookup, an operation still running): keep it.
  if (it->second->lookups != 0 || it->second->pinned || it->second.use_count() > 1) return;
  map_.erase(it);
}

std::size_t InodeCache::size() const {
  MutexLock l(&mu_);
  return map_.size();
}

std::vector<InodeRef> InodeCache::All() const {
  MutexLock l(&mu_);
  std::vector<InodeRef> out;
  out.reserve(map_.size());
  for (const auto& [ino, ip] : map_) out.push_back(ip);
  return out;
}

}  // namespace walfs::fs
