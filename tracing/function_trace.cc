// The function tracer: entry and exit hooks for code built with
// -finstrument-functions (CMake: walfs_enable_function_trace(target)).
// Records go through the same rings and recursion modes as every event;
// the tracer's own code (tracing/, base/) is never instrumented, and the
// recursion protection refuses (and counts) any event the hooks would
// raise from inside a write.
#include "tracing/event.h"

namespace walfs::tracing {

WALFS_TRACE_EVENT(kFuncEntry, "func", "entry", EventKind::kBegin, {"fn", FieldKind::kHex},
                  {"caller", FieldKind::kHex});
WALFS_TRACE_EVENT(kFuncExit, "func", "exit", EventKind::kEnd, {"fn", FieldKind::kHex},
                  {"caller", FieldKind::kHex});

}  // namespace walfs::tracing

extern "C" {

__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void* fn, void* caller) {
  WALFS_TRACE(walfs::tracing::kFuncEntry, reinterpret_cast<std::uintptr_t>(fn),
              reinterpret_cast<std::uintptr_t>(caller));
}

__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void* fn, void* caller) {
  WALFS_TRACE(walfs::tracing::kFuncExit, reinterpret_cast<std::uintptr_t>(fn),
              reinterpret_cast<std::uintptr_t>(caller));
}

}  // extern "C"
