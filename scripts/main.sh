#!/usr/bin/env bash
# The main job: installs what is missing, builds build/ (RelWithDebInfo, the
# same configuration as job (a) of scripts/test.sh) and runs the grant-head
# contention bench in its quick form.  Extra arguments go to the bench.
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
exec "$bench" --quick "$@"
