#!/usr/bin/env bash
# The CI test run (.ci/run calls exactly this).  Installs what is missing, then
# runs each job's tests in order, stopping at the first that fails, while
# the next job builds beside them (see "pipelined" below):
#
#   a. gcc     RelWithDebInfo            build/                 ctest
#      uring   the gcc build again        build/                 ctest -L fuse, over the
#              io_uring rings (WALFS_FUSE_TRANSPORT=uring; only where
#              /sys/module/fuse/parameters/enable_uring is writable)
#   b. asan    clang, address,undefined  build/variants/asan    ctest -LE peers
#              -DWALFS_WERROR=ON (-Wthread-safety, STYLE.md rule 10)
#   c. tsan    clang, thread             build/variants/tsan    ctest -LE peers; the FUSE
#              suites over /dev/fuse, the transport's own specs (UringTransport.*)
#              over the rings (enable_uring on for the job where writable)
#   d. fuzz    clang, -DWALFS_FUZZ=ON    build/variants/fuzz    ctest -L fuzz
#              (builds only the libFuzzer targets; each runs 10 s)
#
# What each job runs.  gcc: every test at its full count, the label `peers`
# included (peers_smoke, fio_jobs_smoke: the Python peer runner, fio and
# walfs-aim on tmpfs/ext4/XFS, not walfs; walfs-aim has its own smoke test
# in every job).  asan and tsan: every test but `peers`, every concurrent
# test included; clang's warnings are errors in the asan build, so it is
# also the warnings job (a separate plain clang job ran the gcc job's tests
# again for 11 minutes of CI and found nothing they did not).  The FUSE
# suites (label `fuse`) are one ctest entry per suite: each suite shares
# one mount.  The other spec binaries are one ctest entry per spec in the
# gcc job and one per shard of about 8 specs in asan and tsan
# (WALFS_SPECS_PER_PROCESS, cmake/WalfsGtestShards.cmake: a sanitizer's
# process start costs more than most unit specs), so every spec also runs
# alone in CI and the gcc job's summary lists every skipped spec.  The randomized campaigns run fewer rounds under the
# sanitizers (tests/sanitizer_build.h), gcc -> asan -> tsan:
#     fs_crash_test random seeds          3 -> 2 -> 0 (tsan: the random
#                                        runs of walfs_crashtest_quick)
#     fs_crash_test seq-1 fsync sequences 32 -> 32 -> 8 (every other of
#                                        file A's)
#     log_crash_test seeds (each plain    3 -> 3 -> 1
#     and with the lazy push)
#     log_crash_test flush prefixes,      every -> every -> every 8th;
#     reordered samples                   150 -> 150 -> 40
#     FsFaultCampaign seeds              40 -> 16 -> 8
#     hostile_image_test rounds/flavour  36 -> 18 -> 9
#     hostile_log_damage_test rounds     36 -> 12 -> 6
#     Dir.AHugeDirectory... entries      100,000 -> 20,000 -> 10,000
#     walfs_crashtest_quick (random      --ops 200 --samples 16; tsan
#     workload; seq-1 is FsCrashShort)   --ops 100 --samples 8
#     FsCrashDiscard, FsCrashPreallocated 400 -> 200 -> 100 operations;
#                                        reordered samples 40 -> 40 -> 8
#     UninitAgCrash, FsckRepairCrash     every prefix -> every 2nd -> every
#                                        4th (and each ending at a flush);
#                                        under tsan then every 4th of those
#                                        states (crash/planner.h's
#                                        state_stride)
#     walfs_killtest_quick               gcc only (over /dev/fuse; the
#                                        _uring one in the uring job)
# (an explicit WALFS_FS_CRASH_SEEDS, WALFS_FS_FAULT_SEEDS,
# WALFS_HOSTILE_SEEDS or WALFS_HOSTILE_LOG_SEEDS in the environment wins
# in every job).  The asan and
# tsan builds leave out walfs-killtest and walfs-hostile, which no test
# runs there (`ninja -C DIR walfs-hostile` builds them on request); the
# tsan build leaves out every_program_test (option parsing starts no
# thread).
#
# Every job builds with -DWALFS_DEBUG_INFO=lines (line tables only: what
# a sanitizer report, a backtrace and perf need, a third less compile time
# than -g), precompiled headers (WALFS_PCH, on by default; one for all the
# spec binaries), as a unity build (-DCMAKE_UNITY_BUILD=ON: sixteen files
# a translation unit, our default batch size; cmake/WalfsPolicy.cmake) and
# links with lld (WALFS_LINKER, scripts/setup.sh installs it).  In every build the spec binaries' own code
# compiles at -O0 and the libraries under test at -O2 (walfs_spec_code:
# half the specs' compile time, test times unchanged); in the asan and tsan
# builds the programs' own code too (walfs_program_code).
#
# The jobs are pipelined: while one job's tests run, the next job's build
# runs beside them under SCHED_IDLE (chrt --idle; nice 19 where that is
# refused), so it takes only the CPU the tests leave idle (a third of it in
# the gcc job: FUSE round trips, fsync waits) and never slows a test down
# more than a run beside any idle process would.  Its output is printed when
# the job starts.  --quick builds nothing in the background.
#
# Each ctest prints its own summary; the last line of the run is the total
# over all jobs, "N passed, N failed", after each job's build and test times.
#
# Usage: scripts/test.sh [--quick]     --quick runs job (a) only.
# Environment: WALFS_JOBS   parallel build and test jobs (default 2).
set -euo pipefail

usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; }

quick=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "test.sh: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
  esac
done

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
jobs=${WALFS_JOBS:-2}

scripts/setup.sh

total_passed=0
total_failed=0
current_job=""
timings=()
declare -A prebuild_pid=()

# Whatever happens, the run ends with the total over the jobs that ran.
finish() {
  local rc=$?
  echo
  if ((${#timings[@]} > 0)); then
    echo "==== job times ===="
    printf '  %s\n' "${timings[@]}"
  fi
  local pid
  for pid in "${prebuild_pid[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
  if ((rc != 0)) && [[ -n "$current_job" ]]; then
    echo "==== FAILED: job $current_job (exit $rc) ===="
  fi
  echo "${total_passed} passed, ${total_failed} failed"
}
trap finish EXIT

# build_job NAME BUILD_DIR [--target T] -- CMAKE_ARGS...
#   Configures BUILD_DIR with Ninja and builds it (only target T with
#   --target).  Sets build_seconds[NAME].
declare -A build_seconds=()
build_job() {
  local name=$1 dir=$2
  shift 2
  local -a build_args=()
  while (($# > 0)) && [[ "$1" != -- ]]; do
    case "$1" in
      --target) build_args+=(--target "$2"); shift 2 ;;
      *) echo "test.sh: build_job: unknown argument '$1'" >&2; return 2 ;;
    esac
  done
  shift  # the "--"
  local start=$SECONDS
  echo
  echo "================================================================"
  echo "==== build $name: $dir"
  echo "==== cmake $*"
  echo "================================================================"
  cmake -G Ninja -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWALFS_DEBUG_INFO=lines \
    -DCMAKE_UNITY_BUILD=ON "$@"
  cmake --build "$dir" -j "$jobs" "${build_args[@]}"
  build_seconds[$name]=$((SECONDS - start))
}

# prebuild NAME BUILD_DIR ...: build_job in the background at idle
# priority, its output to BUILD_DIR.log; finish_prebuild NAME prints that
# output and fails as the build did.
declare -A prebuild_log=() prebuild_start=()
prebuild() {
  local name=$1 dir=$2
  mkdir -p "$(dirname "$dir")"
  prebuild_log[$name]="$dir.log"
  prebuild_start[$name]=$SECONDS
  set -m  # its own process group, so that an early exit can stop all of it
  (
    chrt --idle -p 0 "$BASHPID" >/dev/null 2>&1 || renice -n 19 -p "$BASHPID" >/dev/null 2>&1 || true
    build_job "$@"
  ) >"${prebuild_log[$name]}" 2>&1 &
  prebuild_pid[$name]=$!
  set +m
}
finish_prebuild() {
  local name=$1 rc=0
  current_job=$name
  wait "${prebuild_pid[$name]}" || rc=$?
  unset "prebuild_pid[$name]"
  cat "${prebuild_log[$name]}"
  # Built beside the previous job's tests: the time until it was waited for.
  build_seconds[$name]=$((SECONDS - prebuild_start[$name]))
  if ((rc != 0)); then
    echo "test.sh: the $name build failed (exit $rc)" >&2
    return "$rc"
  fi
}

# test_job NAME BUILD_DIR [--label L] [--skip-label L] ENV...
#   Runs ctest in BUILD_DIR (only tests labelled L with --label, none
#   labelled L with --skip-label) with the given environment (VAR=value).
test_job() {
  local name=$1 dir=$2
  shift 2
  local -a ctest_args=()
  while (($# > 0)); do
    case "$1" in
      --label) ctest_args+=(-L "$2"); shift 2 ;;
      --skip-label) ctest_args+=(-LE "$2"); shift 2 ;;
      *) break ;;
    esac
  done
  local -a env_vars=("$@")
  local start=$SECONDS
  current_job=$name

  echo
  echo "================================================================"
  echo "==== test $name: $dir"
  if ((${#env_vars[@]} > 0)); then echo "==== env ${env_vars[*]}"; fi
  echo "================================================================"

  # A test that hangs fails after --timeout seconds instead of eating CI.
  local log="$dir/ctest-$name.log" rc=0
  env "${env_vars[@]}" ctest --test-dir "$dir" --output-on-failure -j "$jobs" \
    --timeout 600 "${ctest_args[@]}" 2>&1 | tee "$log" || rc=$?

  local line failed=0 total=0
  line=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
  if [[ -z "$line" ]]; then
    echo "test.sh: job $name ran no test" >&2
    return 1
  fi
  failed=$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$line")
  total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")
  total_passed=$((total_passed + total - failed))
  total_failed=$((total_failed + failed))

  timings+=("$(printf '%-6s build %4ds  test %4ds  %s' "$name" "${build_seconds[$name]:-0}" \
    $((SECONDS - start)) "$line")")
  ((rc == 0 && failed == 0)) || return 1
  current_job=""
}

# The CMake arguments of each job.
gcc_args=(-DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++)
asan_args=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DWALFS_WERROR=ON
  -DWALFS_SANITIZE=address,undefined)
tsan_args=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DWALFS_SANITIZE=thread)
# libFuzzer targets (STYLE.md rule 18), each for 10 s from its seed corpus.
fuzz_args=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DWALFS_FUZZ=ON)

current_job=gcc
build_job gcc build -- "${gcc_args[@]}"
if ((!quick)); then prebuild asan build/variants/asan -- "${asan_args[@]}"; fi
test_job gcc build

# The FUSE suite again, every spec over the io_uring rings (issue 25;
# mount/uring_transport.h).  The kernel offers them only while the fuse
# module's enable_uring is on: as root this job turns it on for its run and
# puts it back, so the other jobs serve through /dev/fuse (the default,
# transport=auto, falls back to it) and both transports are covered.
uring_param=/sys/module/fuse/parameters/enable_uring
uring_was=N
if [[ -w $uring_param ]]; then
  uring_was=$(cat "$uring_param")
  echo Y >"$uring_param"
  uring_rc=0
  test_job uring build --label fuse WALFS_FUSE_TRANSPORT=uring || uring_rc=$?
  echo "$uring_was" >"$uring_param"
  ((uring_rc == 0)) || exit "$uring_rc"
else
  echo "test.sh: $uring_param is not writable (not root, or a kernel without FUSE over io_uring):" \
    "the FUSE suite ran over /dev/fuse only"
fi

if ((quick)); then exit 0; fi

finish_prebuild asan
prebuild tsan build/variants/tsan -- "${tsan_args[@]}"
test_job asan build/variants/asan --skip-label peers \
  ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

finish_prebuild tsan
prebuild fuzz build/variants/fuzz --target fuzzers -- "${fuzz_args[@]}"
# TSan over both transports: the FUSE suites through /dev/fuse
# (WALFS_FUSE_TRANSPORT=dev), and with the rings on for the job the
# transport's own specs (UringTransport.*, which ask for transport=uring)
# through the rings, callers on every CPU at once among them.
tsan_rc=0
if [[ -w $uring_param ]]; then echo Y >"$uring_param"; fi
test_job tsan build/variants/tsan --skip-label peers \
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 WALFS_FUSE_TRANSPORT=dev || tsan_rc=$?
if [[ -w $uring_param ]]; then echo "$uring_was" >"$uring_param"; fi
((tsan_rc == 0)) || exit "$tsan_rc"

finish_prebuild fuzz
test_job fuzz build/variants/fuzz --label fuzz \
  ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
