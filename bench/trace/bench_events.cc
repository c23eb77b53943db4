#include "bench/trace/bench_events.h"

namespace walfs::bench {

using tracing::EventKind;

WALFS_TRACE_EVENT(kGetuidEnter, "bench", "getuid_enter", EventKind::kBegin, {"seq"}, {"arg"});
WALFS_TRACE_EVENT(kGetuidExit, "bench", "getuid_exit", EventKind::kEnd, {"seq"}, {"arg"});
WALFS_TRACE_EVENT(kStormSignal, "bench", "storm_signal", EventKind::kInstant, {"seq"},
                  {"signo"});

Status EnableBenchEvents(bool on) { return tracing::Catalogue::Get().SetSubsystemEnabled("bench", on); }

}  // namespace walfs::bench
