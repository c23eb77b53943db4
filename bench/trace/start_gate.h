// StartGate: lines up a cell's worker threads so that their measured loops
// start together, after every thread has done its set-up (ring attach,
// timer creation, warm-up) — set-up cost stays out of the timings.
//
//   StartGate gate(threads);
//   worker:  setup(); gate.ArriveAndWait(); t0 = now(); loop();
//   main:    gate.WaitArrived(); gate.Open();
#pragma once

#include <latch>

namespace walfs::bench {

class StartGate {
 public:
  explicit StartGate(int threads) : arrived_(threads) {}

  void ArriveAndWait() {
    arrived_.count_down();
    open_.wait();
  }
  void WaitArrived() { arrived_.wait(); }
  void Open() { open_.count_down(); }

 private:
  std::latch arrived_;
  std::latch open_{1};
};

}  // namespace walfs::bench
