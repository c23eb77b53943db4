/* The walfs_bench provider's probes, linked statically into trace_bench_lttng. */
#define TRACEPOINT_CREATE_PROBES
#define TRACEPOINT_DEFINE
#include "bench/trace/lttng_tp.h"
