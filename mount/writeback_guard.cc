#include "mount/writeback_guard.h"

namespace walfs::mount {

bool WritebackGuard::Lost(std::uint64_t ino, int err) {
  MutexLock l(&mu_);
  ++lost_count_;
  return lost_.try_emplace(ino, err).second;  // the first error is the one fsync reports
}

int WritebackGuard::LostErrno(std::uint64_t ino) const {
  MutexLock l(&mu_);
  const auto it = lost_.find(ino);
  return it == lost_.end() ? 0 : it->second;
}

void WritebackGuard::Clear(std::uint64_t ino) {
  MutexLock l(&mu_);
  lost_.erase(ino);
}

void WritebackGuard::CachedWriterOpened(std::uint64_t ino) {
  MutexLock l(&mu_);
  if (++cached_writers_[ino] == 1 && writers_observer_) writers_observer_(ino, true, true);
}

void WritebackGuard::CachedWriterReleased(std::uint64_t ino) {
  MutexLock l(&mu_);
  auto it = cached_writers_.find(ino);
  // Invariant: every release matches an open counted here (the handle says so).
  WALFS_CHECK(it != cached_writers_.end() && it->second > 0);
  if (--it->second > 0) return;
  cached_writers_.erase(it);
  if (writers_observer_) writers_observer_(ino, false, !cached_writers_.empty());
}

bool WritebackGuard::HasCachedWriters(std::uint64_t ino) const {
  MutexLock l(&mu_);
  return cached_writers_.contains(ino);
}

bool WritebackGuard::NoteAvailable(std::uint64_t available_bytes) {
  const bool low = available_bytes < low_space_bytes();
  const bool was = low_space_.exchange(low, std::memory_order_acq_rel);
  return low && !was;
}

bool WritebackGuard::AdmitCachedWrite(std::uint64_t available_bytes) {
  if (available_bytes >= gate_bytes()) return true;
  refused_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

std::vector<std::uint64_t> WritebackGuard::CachedWriterInodes() const {
  MutexLock l(&mu_);
  std::vector<std::uint64_t> out;
  out.reserve(cached_writers_.size());
  for (const auto& [ino, n] : cached_writers_) out.push_back(ino);
  return out;
}

std::uint64_t WritebackGuard::lost_writebacks() const {
  MutexLock l(&mu_);
  return lost_count_;
}

}  // namespace walfs::mount
