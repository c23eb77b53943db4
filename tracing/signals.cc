#include "tracing/signals.h"

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "tracing/thread_state.h"

namespace walfs::tracing {

namespace {

std::atomic<SignalHandler> g_handlers[NSIG];

void RunHandler(ThreadState& ts, SignalHandler h, int sig, siginfo_t* info, void* uctx) {
  ts.signal_depth = ts.signal_depth + 1;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  h(sig, info, uctx);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  ts.signal_depth = ts.signal_depth - 1;
}

void Wrapper(int sig, siginfo_t* info, void* uctx) {
  const int saved_errno = errno;
  SignalHandler h = g_handlers[sig].load(std::memory_order_acquire);
  if (h == nullptr) return;
  ThreadState& ts = CurrentThreadState();
  if (ts.defer_depth > 0 && !IsFaultSignal(sig)) {
    // Safe mode, mid-write: hold the signal; the write runs it when it ends.
    const int n = ts.npending;
    if (n < ThreadState::kMaxDeferred) {
      ts.pending[n].sig = sig;
      ts.pending[n].info = *info;
      std::atomic_signal_fence(std::memory_order_seq_cst);
      ts.npending = n + 1;
      errno = saved_errno;
      return;
    }
    ++ts.pending_overflow;  // no room: run it now; its events will be refused
  }
  RunHandler(ts, h, sig, info, uctx);
  errno = saved_errno;
}

}  // namespace

bool IsFaultSignal(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP ||
         sig == SIGSYS;
}

// Held signals only ever queue while defer_depth > 0, i.e. inside a write;
// here defer_depth is 0, so the list can only grow through a handler we run
// (its own events end in a nested call, which returns at once and leaves the
// new entries to this loop).
void RunDeferredSignals(ThreadState& ts) {
  if (ts.running_deferred) return;
  ts.running_deferred = 1;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  for (int i = 0; i < ts.npending; ++i) {
    DeferredSignal d = ts.pending[i];
    SignalHandler h = g_handlers[d.sig].load(std::memory_order_acquire);
    if (h != nullptr) RunHandler(ts, h, d.sig, &d.info, nullptr);
  }
  ts.npending = 0;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  ts.running_deferred = 0;
}

Status InstallSignalHandler(int sig, SignalHandler handler, int flags) {
  if (sig <= 0 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP || handler == nullptr)
    return Status::InvalidArgument(fmt::format("cannot install a handler for signal {}", sig));
  g_handlers[sig].store(handler, std::memory_order_release);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = Wrapper;
  sa.sa_flags = flags | SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, nullptr) != 0)
    return Status::FromErrno(errno, fmt::format("sigaction({})", sig));
  return Status::Ok();
}

Status RestoreDefaultSignalHandler(int sig) {
  if (sig <= 0 || sig >= NSIG) return Status::InvalidArgument("bad signal number");
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, nullptr) != 0) return Status::FromErrno(errno, "sigaction");
  g_handlers[sig].store(nullptr, std::memory_order_release);
  return Status::Ok();
}

}  // namespace walfs::tracing
