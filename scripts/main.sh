#!/usr/bin/env bash
# The main job: installs what is missing, builds build/ (RelWithDebInfo, the
# same configuration as job (a) of scripts/test.sh), runs the grant-head
# contention bench in its quick form, then the on-disk log bench (fsync-style
# commits, io_uring vs pwrite) in its quick form, then records the journal's
# trace of a short traced run and shows a slice of it and its summary.  Then
# it makes a fresh walfs image, mounts it, runs a short fio job and a short
# walfs-aim (AIM7 fserver) mix on it, shows a slice of /.walfs/trace_pipe and
# /.walfs/stats, unmounts and checks the image with fsck.walfs -n.  Extra
# arguments go to the grant-head bench.
#
# Usage: scripts/main.sh [bench args...]
# Environment: WALFS_JOBS   parallel build jobs (default 2).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs=${WALFS_JOBS:-2}

scripts/setup.sh

cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
cmake --build build -j "$jobs"

bench=build/bin/grant_head_bench
if [[ ! -x "$bench" ]]; then
  echo "main.sh: $bench was not built (is it in bench/CMakeLists.txt?)" >&2
  exit 1
fi
echo "==== $bench --quick $*"
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
# A consumer of trace_pipe for the whole load; its first lines are shown below.
timeout 60 cat "$mnt/.walfs/trace_pipe" > "$fsdir/trace_pipe.txt" &
pipe_pid=$!
echo "==== fio randwrite-4k-fsync-1j on walfs (SIZE=32m RUNTIME=3s)"
if command -v fio > /dev/null; then
  SIZE=32m RUNTIME=3s DIRECT=0 bench/fio/run-job.sh bench/fio/randwrite-4k-fsync-1j.fio "$mnt" \
    | grep -E 'IOPS|lat \(|clat percentiles' | head -8
fi
echo "==== walfs-aim $mnt --quick (AIM7 fserver mix, users 1..4)"
build/bin/walfs-aim "$mnt" --quick
kill "$pipe_pid" 2>/dev/null || true
wait "$pipe_pid" 2>/dev/null || true
echo "==== $mnt/.walfs/trace_pipe (first 25 lines of $(wc -l < "$fsdir/trace_pipe.txt") read during the load)"
head -25 "$fsdir/trace_pipe.txt"
echo "==== $mnt/.walfs/stats"
cat "$mnt/.walfs/stats"
echo "==== umount $mnt && fsck.walfs -n $img"
fusermount3 -u "$mnt"
# The daemon exits once the image is clean: wait for it before checking.
for _ in $(seq 1 100); do pgrep -f "walfs $img" > /dev/null || break; sleep 0.1; done
build/bin/fsck.walfs -n "$img"
