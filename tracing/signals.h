// Signal handlers that the tracer knows about.
//
// Recursion modes safe and context need to know when a signal handler runs
// on a thread that is in the middle of writing an event.  Handlers installed
// through InstallSignalHandler() run behind a wrapper that tells them:
//  - safe: a handler for an asynchronous signal that lands mid-write is held
//    and run as soon as the write ends, and the signal stays blocked until
//    then (the wrapper adds it to the interrupted context's uc_sigmask, so
//    further instances wait in the kernel exactly as for a blocked signal).
//    This is the userspace analogue of local_irq_save: a flag our own signal
//    entry checks costs nothing per event, where sigprocmask would cost two
//    syscalls per event; a syscall (the unblock) is made only when a signal
//    actually landed mid-write.  Fault signals (SIGSEGV, SIGBUS, SIGFPE,
//    SIGILL, SIGTRAP, SIGSYS) are never held.  A held handler runs with a
//    null ucontext argument.
//  - context: the handler runs at once, in the signal context; its events
//    nest inside the interrupted one.
// Handlers installed with plain sigaction() still work, but their events are
// refused (and counted) when they land mid-write.
#pragma once

#include <csignal>

#include "base/status.h"

namespace walfs::tracing {

using SignalHandler = void (*)(int, siginfo_t*, void*);

// sigaction(sig) with `handler` behind the tracer's wrapper; SA_SIGINFO is
// added to `flags`.  InvalidArgument for a signal that cannot be caught.
Status InstallSignalHandler(int sig, SignalHandler handler, int flags = SA_RESTART);
// Restores SIG_DFL for `sig`.
Status RestoreDefaultSignalHandler(int sig);

bool IsFaultSignal(int sig);

}  // namespace walfs::tracing
