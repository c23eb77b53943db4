// StartGate: lines up a cell's worker threads so that their measured loops
// start together, after every thread has done its set-up (ring attach,
// timer creation, warm-up) — set-up cost stays out of the timings.
//
//   StartGate gate(threads);
//   worker:  setup(); gate.ArriveAndWait(); t0 = now(); loop();
//   main:    gate.WaitArrived(); gate.Open();
//
// A mutex and a condition variable, not std::latch, whose libstdc++ 12 wait
// on an 8-byte counter goes through a shared waiter pool of its own (and
// which TSan sees only as atomics).  A TSan run of trace_bench_smoke
// (2026-12-05) timed out at 120 s inside one recursion cell (4 threads,
// fast, quiet) that takes well under a second; where it waited was not
// caught, and three reruns under load passed.  std::mutex, not base/mutex.h:
// trace_bench_lttng links no walfs library.
#pragma once

#include <condition_variable>
#include <mutex>

namespace walfs::bench {

class StartGate {
 public:
  explicit StartGate(int threads) : waiting_(threads) {}

  void ArriveAndWait() {
    std::unique_lock l(mu_);
    if (--waiting_ == 0) cv_.notify_all();
    cv_.wait(l, [this] { return open_; });
  }
  void WaitArrived() {
    std::unique_lock l(mu_);
    cv_.wait(l, [this] { return waiting_ == 0; });
  }
  void Open() {
    std::lock_guard l(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_;       // workers not yet arrived, under mu_
  bool open_ = false;  // under mu_
};

}  // namespace walfs::bench
