#include "mount/poll_notifier.h"

#include <pthread.h>

#include <chrono>

namespace walfs::mount {

void PollNotifier::Stop() {
  {
    std::lock_guard l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard l(mu_);
  for (auto& [handle, ph] : polls_) fuse_pollhandle_destroy(ph);
  polls_.clear();
}

void PollNotifier::Watch(std::uint64_t handle, fuse_pollhandle* ph) {
  std::lock_guard l(mu_);
  if (stopping_) {
    fuse_pollhandle_destroy(ph);
    return;
  }
  polls_.emplace_back(handle, ph);
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  cv_.notify_all();
}

void PollNotifier::Forget(std::uint64_t handle) {
  std::lock_guard l(mu_);
  std::erase_if(polls_, [&](const auto& p) {
    if (p.first != handle) return false;
    fuse_pollhandle_destroy(p.second);
    return true;
  });
}

void PollNotifier::Loop() {
  pthread_setname_np(pthread_self(), "walfs-poll");
  std::unique_lock l(mu_);
  while (!stopping_) {
    if (polls_.empty()) {
      cv_.wait(l);
      continue;
    }
    cv_.wait_for(l, std::chrono::milliseconds(kCheckMs));
    std::erase_if(polls_, [&](const auto& p) {
      if (!readable_(p.first)) return false;
      fuse_lowlevel_notify_poll(p.second);  // the kernel polls again
      fuse_pollhandle_destroy(p.second);
      return true;
    });
  }
}

}  // namespace walfs::mount
