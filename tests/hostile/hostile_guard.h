// Naming the round that crashed or hung.  A hostile round must never crash
// or hang, and when one does the seed is what a developer needs:
//
//   RoundGuard guard(/*timeout_s=*/120);
//   for (seed ...) { guard.Begin(seed); RunRound(base, seed); guard.End(); }
//
// A fatal signal (SIGSEGV, SIGABRT from a failed WALFS_CHECK, ...) or a
// sanitizer report prints "walfs-hostile: round seed=N died" before the
// process goes; a round that outlives the timeout prints "... hung" and
// aborts.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace walfs::hostile {

class RoundGuard {
 public:
  explicit RoundGuard(double timeout_s);
  ~RoundGuard();
  RoundGuard(const RoundGuard&) = delete;
  RoundGuard& operator=(const RoundGuard&) = delete;

  void Begin(std::uint64_t seed);
  void End();

 private:
  void Watch();
  const double timeout_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false;
  bool stop_ = false;
  std::uint64_t generation_ = 0;
  std::thread watcher_;
};

}  // namespace walfs::hostile
