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

std::uint64_t WritebackGuard::lost_writebacks() const {
  MutexLock l(&mu_);
  return lost_count_;
}

}  // namespace walfs::mount
