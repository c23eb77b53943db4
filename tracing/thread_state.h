// Per-thread tracer state, shared by the commit path (tracer.cc) and the
// signal-handler wrapper (signals.cc).  Internal to tracing/.
//
// Everything here is read and written by its own thread and by signal
// handlers that interrupt it, never by other threads: volatile sig_atomic_t
// and atomic_signal_fence are the right tools, not atomics.
#pragma once

#include <csignal>
#include <cstdint>

namespace walfs::tracing {

class Ring;

struct DeferredSignal {
  int sig;
  siginfo_t info;
};

struct ThreadState {
  Ring* ring;                     // this thread's ring (owned by the registry and the holder)
  std::uint32_t generation;       // tracer generation the ring belongs to
  std::uint32_t tid;
  volatile sig_atomic_t dead;     // thread-exit destructors ran: record nothing more
  volatile sig_atomic_t busy;     // fast: an event is being written
  volatile sig_atomic_t ctx_bits; // context: 1 = normal context writing, 2 = signal context
  volatile sig_atomic_t signal_depth;  // >0 inside a wrapped signal handler
  volatile sig_atomic_t defer_depth;   // safe: >0 while writing; signals are held
  volatile sig_atomic_t running_deferred;
  volatile sig_atomic_t npending;
  std::uint32_t pending_overflow;  // held signals beyond kMaxDeferred (run at once)
  // Signals held and blocked (through the interrupted context's signal mask)
  // until the write ends; bit n-1 for signal n.
  volatile std::uint64_t blocked_mask;
  static constexpr int kMaxDeferred = 8;
  DeferredSignal pending[kMaxDeferred];
};

// Zero-initialised, trivially destructible: no TLS guard, usable from
// signal handlers.
ThreadState& CurrentThreadState();

// Runs the handlers held while this thread was writing (safe mode).
void RunDeferredSignals(ThreadState& ts);

}  // namespace walfs::tracing
