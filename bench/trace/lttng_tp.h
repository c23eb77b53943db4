/* LTTng-UST tracepoint provider "walfs_bench": the same two events, with the
 * same two integer fields, that trace_bench records through walfs's tracer
 * (bench_events.h), so that the LTTng table compares like with like.
 * lttng_tp.c instantiates the probes; lttng_emitter.cc fires them. */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER walfs_bench

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "bench/trace/lttng_tp.h"

#if !defined(WALFS_BENCH_TRACE_LTTNG_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define WALFS_BENCH_TRACE_LTTNG_TP_H

#include <stdint.h>

#include <lttng/tracepoint.h>

TRACEPOINT_EVENT(walfs_bench, getuid_enter,
                 TP_ARGS(uint64_t, seq, uint64_t, arg),
                 TP_FIELDS(ctf_integer(uint64_t, seq, seq)
                           ctf_integer(uint64_t, arg, arg)))

TRACEPOINT_EVENT(walfs_bench, getuid_exit,
                 TP_ARGS(uint64_t, seq, uint64_t, arg),
                 TP_FIELDS(ctf_integer(uint64_t, seq, seq)
                           ctf_integer(uint64_t, arg, arg)))

#endif /* WALFS_BENCH_TRACE_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
