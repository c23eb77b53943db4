#!/usr/bin/env bash
# The main job: installs what is missing, builds build/ (RelWithDebInfo, the
# same configuration as job (a) of scripts/test.sh), runs the grant-head
# contention bench in its quick form, then the on-disk log bench (fsync-style
# commits, io_uring vs pwrite) in its quick form, then records the journal's trace of a
# short traced run and shows a slice of it and its summary.  Extra arguments
# go to the bench.
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
