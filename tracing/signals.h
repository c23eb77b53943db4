// Signal handlers that the tracer knows about.
//
// Recursion modes safe and context need to know when a signal handler runs
// on a thread that is in the middle of writing an event.  Handlers installed
// through InstallSignalHandler() run behind a wrapper that tells them:
//  - safe: a handler for an asynchronous signal that lands mid-write is held
//    and run as soon as the write ends (the userspace analogue of
//    local_irq_save: a flag that our own signal entry checks, instead of two
//    sigprocmask syscalls per event).  Fault signals (SIGSEGV, SIGBUS,
//    SIGFPE, SIGILL, SIGTRAP, SIGSYS) are never held.
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
