#include "tracing/signals.h"

#include <atomic>
#include <cerrno>
#include <cstring>

#include <pthread.h>
#include <ucontext.h>

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
  if (ts.defer_depth > 0 && !IsFaultSignal(sig) && uctx != nullptr && sig <= 64) {
    // Safe mode, mid-write: hold this one, and block the signal in the
    // context we return to, so that further instances stay pending in the
    // kernel (coalesced or queued, exactly as for a blocked signal) instead
    // of interrupting the write again.  The write runs the held handler and
    // unblocks the signal when it ends.
    const int n = ts.npending;
    if (n < ThreadState::kMaxDeferred) {
      ts.pending[n].sig = sig;
      ts.pending[n].info = *info;
      sigaddset(&static_cast<ucontext_t*>(uctx)->uc_sigmask, sig);
      ts.blocked_mask = ts.blocked_mask | (std::uint64_t{1} << (sig - 1));
      std::atomic_signal_fence(std::memory_order_seq_cst);
      ts.npending = n + 1;
      errno = saved_errno;
      return;
    }
    ++ts.pending_overflow;  // more distinct signals than slots: run it now
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
// new entries to this loop).  A held signal runs with a null ucontext: the
// context it interrupted is gone.
void RunDeferredSignals(ThreadState& ts) {
  if (ts.running_deferred) return;
  ts.running_deferred = 1;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  // Pop from the front, so the list stays short however long a storm runs.
  // No handler can append between the pop and the call: appends happen only
  // while defer_depth > 0, i.e. inside a handler's own event write.
  while (ts.npending > 0) {
    DeferredSignal d = ts.pending[0];
    const int n = ts.npending;
    for (int j = 1; j < n; ++j) ts.pending[j - 1] = ts.pending[j];
    ts.npending = n - 1;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    SignalHandler h = g_handlers[d.sig].load(std::memory_order_acquire);
    if (h != nullptr) RunHandler(ts, h, d.sig, &d.info, nullptr);
  }
  // Unblock what the held signals blocked (one syscall per write that held
  // any); instances that arrived meanwhile are delivered now.
  if (const std::uint64_t mask = ts.blocked_mask) {
    ts.blocked_mask = 0;
    sigset_t set;
    sigemptyset(&set);
    for (int sig = 1; sig <= 64; ++sig)
      if (mask & (std::uint64_t{1} << (sig - 1))) sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  }
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
