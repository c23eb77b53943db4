#!/usr/bin/env bash
# LTTng-UST session control for trace_bench's LTTng table (trace_bench runs
# it as build/bin/trace_bench_run_lttng.sh; CMake copies it there).
#
#   run_lttng.sh start
#       Makes sure an lttng-sessiond runs; starts one (--daemonize
#       --no-kernel) if none does.  Prints "sessiond=running" or
#       "sessiond=started pid=N", or "skipped: <reason>" and exits 1.
#   run_lttng.sh run EMITTER THREADS ITERATIONS WARMUP SUBBUF_SIZE NUM_SUBBUF
#       Creates a session that writes to a fresh temporary directory, a
#       per-UID user-space channel of NUM_SUBBUF x SUBBUF_SIZE per CPU
#       (discard mode, the default), enables walfs_bench:*, starts, runs
#       EMITTER THREADS ITERATIONS WARMUP, stops (lttng stop waits until the
#       consumer has written everything), destroys the session and removes
#       the trace.  Prints
#         result ns_per_event=X events=N discarded=D lost_packets=P trace_bytes=B
#       or "skipped: <reason>" and exits 1.
#   run_lttng.sh stop PID
#       Stops the session daemon "start" started: only PID, and only if it
#       is an lttng-sessiond.
set -uo pipefail

skip() { echo "skipped: $*"; exit 1; }

# Runs one lttng command; its output is left in LTTNG_OUT.  Not in a
# subshell, so that skip ends the script.
lttng_do() {
  LTTNG_OUT=$(lttng "$@" 2>&1) || skip "lttng $1 failed: $(tail -n 1 <<<"$LTTNG_OUT")"
}

rundir() { if ((EUID == 0)); then echo /var/run/lttng; else echo "$HOME/.lttng"; fi; }

sessiond_pid() {
  local f pid
  f="$(rundir)/lttng-sessiond.pid"
  [[ -r "$f" ]] || return 1
  pid=$(<"$f")
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == lttng-sessiond ]] || return 1
  echo "$pid"
}

cmd_start() {
  command -v lttng >/dev/null || skip "lttng (package lttng-tools) is not installed"
  command -v lttng-sessiond >/dev/null || skip "lttng-sessiond (package lttng-tools) is not installed"
  if sessiond_pid >/dev/null; then
    echo "sessiond=running"
    return 0
  fi
  local out
  out=$(lttng-sessiond --daemonize --no-kernel 2>&1) ||
    skip "lttng-sessiond --daemonize failed: $(tail -n 1 <<<"$out")"
  local pid
  for _ in $(seq 50); do
    pid=$(sessiond_pid) && break
    sleep 0.1
  done
  [[ -n "${pid:-}" ]] || skip "lttng-sessiond started but wrote no pid file in $(rundir)"
  echo "sessiond=started pid=$pid"
}

cmd_run() {
  (($# == 6)) || skip "run: expected EMITTER THREADS ITERATIONS WARMUP SUBBUF_SIZE NUM_SUBBUF"
  local emitter=$1 threads=$2 iterations=$3 warmup=$4 subbuf=$5 nsubbuf=$6
  [[ -x "$emitter" ]] || skip "emitter $emitter is not built"
  local session="walfs-bench-$$" dir out
  dir=$(mktemp -d "${TMPDIR:-/tmp}/walfs-lttng.XXXXXX") || skip "mktemp failed"
  # Whatever happens below, the session goes and the trace is removed.
  trap 'lttng destroy "$session" >/dev/null 2>&1; rm -rf "$dir"' EXIT

  lttng_do create "$session" --output="$dir/trace"
  lttng_do enable-channel -u -s "$session" --buffers-uid --subbuf-size="$subbuf" \
    --num-subbuf="$nsubbuf" bench
  lttng_do enable-event -u -s "$session" -c bench 'walfs_bench:*'
  lttng_do start "$session"

  local rc=0
  out=$("$emitter" "$threads" "$iterations" "$warmup" 2>&1) || rc=$?
  lttng_do stop "$session"
  local stop_out=$LTTNG_OUT
  if ((rc != 0)); then
    grep -q '^skipped: ' <<<"$out" && { grep '^skipped: ' <<<"$out" | head -n 1; exit 1; }
    skip "emitter exited with status $rc: $(tail -n 1 <<<"$out")"
  fi
  local discarded lost_packets bytes
  discarded=$(sed -nE 's/.*Warning: ([0-9]+) events were discarded.*/\1/p' <<<"$stop_out" | head -n 1)
  lost_packets=$(sed -nE 's/.*Warning: ([0-9]+) packets were lost.*/\1/p' <<<"$stop_out" | head -n 1)
  lttng_do destroy "$session"
  bytes=$(du -sb "$dir/trace" 2>/dev/null | cut -f1)
  echo "result $(grep '^ns_per_event=' <<<"$out" | head -n 1) discarded=${discarded:-0}" \
    "lost_packets=${lost_packets:-0} trace_bytes=${bytes:-0}"
}

cmd_stop() {
  (($# == 1)) || skip "stop: expected PID"
  local pid=$1
  [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == lttng-sessiond ]] || return 0
  kill -TERM "$pid"
  for _ in $(seq 50); do
    [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == lttng-sessiond ]] || return 0
    sleep 0.1
  done
  echo "lttng-sessiond $pid did not exit within 5 s" >&2
}

case "${1:-}" in
  start) shift; cmd_start "$@" ;;
  run) shift; cmd_run "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  *) echo "usage: $0 start | run EMITTER THREADS ITERATIONS WARMUP SUBBUF_SIZE NUM_SUBBUF | stop PID" >&2; exit 2 ;;
esac
