#!/usr/bin/env bash
# The main job: installs what is missing, builds the programs it runs into
# build/ (RelWithDebInfo, the same configuration as job (a) of
# scripts/test.sh; the tests are built by the test command), then:
#   1. the grant-head contention bench, quick: first the lock-bound workload,
#      where the seed's effect shows (wakeq and waking against inline), then
#      the default tail-bound one, where the modes look alike because the
#      log's tail, not the grant-head lock, limits throughput;
#   2. the on-disk log bench (fsync-style commits, io_uring vs pwrite), quick;
#   3. the journal's trace of a short traced run: a slice and its summary;
#   4. a fresh walfs image, mounted: a short fio job (its latency
#      percentiles) and a short walfs-aim (AIM7 fserver) mix, with
#      /.walfs/trace_pipe read throughout (its first lines and how many were
#      read or lost are shown; the rest is not kept), /.walfs/stats, then
#      unmount and fsck.walfs -n.
# Ends with how long setup, build and run took.  Extra arguments go to both
# grant-head bench runs.
#
# Usage: scripts/main.sh [bench args...]
# Environment: WALFS_JOBS   parallel build jobs (default 2).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs=${WALFS_JOBS:-2}

t0=$SECONDS
scripts/setup.sh
t_setup=$((SECONDS - t0))

t0=$SECONDS
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
# What this job runs, and what `cmake --install build` installs (the
# programs and their man pages: README "Install"); scripts/test.sh builds
# the rest.
cmake --build build -j "$jobs" --target grant_head_bench log_bench walfs_trace mkfs_walfs \
  fsck_walfs walfs_mount walfs-aim walfs_admin walfs_growfs walfs_logprint walfs_man_pages
t_build=$((SECONDS - t0))
t_run_start=$SECONDS

bench=build/bin/grant_head_bench
echo "==== $bench --quick --work-ns 0 --writeback-us 0 --use 0.05 --locks mutex $*"
echo "     lock-bound: log space returns at once, so the grant-head slow path limits throughput;"
echo "     the seed's effect shows here (vs_inline of waking and wakeq from 4 threads up)"
"$bench" --quick --work-ns 0 --writeback-us 0 --use 0.05 --locks mutex "$@"
echo
echo "==== $bench --quick $*"
echo "     tail-bound (the default workload): space returns only as the tail moves, so with the"
echo "     default (mutex) head lock the modes look alike; inline still pays duplicate wakes"
echo "     (wakes_per_tx), and with --locks spin it collapses"
"$bench" --quick "$@"

echo
echo "==== build/bin/log_bench --quick --dir build"
build/bin/log_bench --quick --dir build

# The journal's own account of a short run: every reservation, sleep and
# wake, recorded by the embedded tracer (docs/tracing.md).
trace=build/main.wtrace
echo
echo "==== build/bin/walfs-trace record -o $trace -e journal -- $bench (8 threads, wakeq, 200 ms)"
build/bin/walfs-trace record -o "$trace" -e journal -- \
  "$bench" --threads 8 --locks mutex --modes wakeq --duration-ms 200 --reps 1 > /dev/null
echo "==== walfs-trace print $trace (a slice around the first grant-head sleep)"
build/bin/walfs-trace print "$trace" | grep -m1 -B4 -A12 'journal_grant_sleep' || true
echo "==== walfs-trace stats $trace"
build/bin/walfs-trace stats "$trace"
echo "==== walfs-trace plot -o build/main-plots $trace"
build/bin/walfs-trace plot -o build/main-plots --title "grant_head_bench, 8 threads, wakeq" "$trace"

# The filesystem itself: a fresh image, mounted, loaded, traced, checked.
fsdir=build/main-fs
mnt=$fsdir/mnt
img=$fsdir/walfs.img
if mountpoint -q "$mnt" 2>/dev/null; then fusermount3 -u "$mnt" || umount -l "$mnt"; fi
rm -rf "$fsdir"
mkdir -p "$mnt"
echo
echo "==== mkfs.walfs $img 1G && walfs $img $mnt"
build/bin/mkfs.walfs -q "$img" 1G
build/bin/walfs "$img" "$mnt"
cleanup_mount() {
  if mountpoint -q "$mnt" 2>/dev/null; then fusermount3 -u "$mnt" || umount -l "$mnt"; fi
}
trap cleanup_mount EXIT
# Every FUSE operation's entry and exit, and the journal's events.
echo 1 > "$mnt/.walfs/events/fs/enable"
echo 1 > "$mnt/.walfs/events/journal/enable"
# A consumer of trace_pipe for the whole load.  Only its first 25 lines are
# kept, with the count of lines read and of events the reader lost (the
# whole stream is hundreds of MB).
timeout 60 cat "$mnt/.walfs/trace_pipe" |
  awk -v head="$fsdir/trace_pipe.head" '
    NR <= 25 { print > head }
    /\[LOST [0-9]+ EVENTS\]/ { match($0, /LOST [0-9]+/); lost += substr($0, RSTART + 5, RLENGTH - 5) }
    END { print NR, lost + 0 }' > "$fsdir/trace_pipe.count" &
pipe_pid=$!
echo "==== fio randwrite-4k-fsync-1j on walfs (SIZE=32m RUNTIME=3s)"
if command -v fio > /dev/null; then
  # The summary lines, the write's completion-latency percentiles (the page
  # cache's), and the fsync's own line and percentiles (the journal's: the
  # point of this job), each under its header.
  SIZE=32m RUNTIME=3s DIRECT=0 bench/fio/run-job.sh bench/fio/randwrite-4k-fsync-1j.fio "$mnt" |
    awk '/(clat|sync) percentiles/ { pct = 1; print; next }
         pct && /^ *\|/ { print; next }
         { pct = 0 }
         /fsync\/fdatasync/ { print; next }
         /IOPS|^ *(s|c)?lat \(|^ *sync \(/ { print }'
fi
echo "==== walfs-aim $mnt --quick (AIM7 fserver mix, users 1..4)"
build/bin/walfs-aim "$mnt" --quick
pkill -f "cat $mnt/.walfs/trace_pipe" 2>/dev/null || true
wait "$pipe_pid" 2>/dev/null || true
read -r pipe_lines pipe_lost < "$fsdir/trace_pipe.count" || true
echo "==== $mnt/.walfs/trace_pipe: ${pipe_lines:-0} lines read during the load, ${pipe_lost:-0} events lost by the reader; the first 25:"
cat "$fsdir/trace_pipe.head" 2>/dev/null || true
echo "==== $mnt/.walfs/stats"
cat "$mnt/.walfs/stats"
echo "==== umount $mnt && fsck.walfs -n $img"
fusermount3 -u "$mnt"
# The daemon is still writing back; fsck waits for it (base/file_lock.h).
build/bin/fsck.walfs -n "$img"
echo
echo "==== main.sh took $((SECONDS - t_run_start + t_build + t_setup)) s: setup ${t_setup} s, build ${t_build} s, run $((SECONDS - t_run_start)) s"
