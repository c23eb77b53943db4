#!/usr/bin/env bash
# The long reliability campaigns (docs/reliability.md), one after another,
# with a summary of what each checked.  CI runs bounded versions of each as
# ctests; this is the separate command for the long runs.
#
#   crash    walfs-crashtest --workload all (random and short seeds)  crash states of the
#            recording device: recovery, fsck, fsynced data, renames, stale data
#   fault    fs_fault_test's campaign, WALFS_FS_FAULT_SEEDS=N  one injected I/O
#            fault per seed: shutdown, recovery, fsynced files, fsck
#   hostile  walfs-hostile --seeds N                       damaged images: fsck,
#            mount, walk, change, unmount -- never a crash or hang
#   space    fs_space_stress_test, repeated                ENOSPC under many
#            threads, the smallest log
#   kill     walfs-killtest --rounds N                     kill -9 of the mounted
#            daemon under load (root and /dev/fuse only)
#
# Usage: scripts/reliability.sh [--quick] [--out DIR] [--only a,b,...]
#   --quick   minutes, not an hour: the sizes CI uses
#   --out     where the JSON files, logs and summary.md go (default
#             reliability-results/)
#   --only    a comma-separated subset of crash,fault,hostile,space,kill
# Builds build/ first if a program is missing.  Exit status 1 if any
# campaign failed; the summary says which.
set -euo pipefail

usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; }

quick=0
out=reliability-results
only=crash,fault,hostile,space,kill
while (($# > 0)); do
  case "$1" in
    --quick) quick=1; shift ;;
    --out) out=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "reliability.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=build/bin
for p in walfs-crashtest walfs-hostile walfs-killtest tests/fs_fault_test tests/fs_space_stress_test; do
  if [[ ! -x $bin/$p ]]; then
    cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build -j "${WALFS_JOBS:-2}"
    break
  fi
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

if ((quick)); then
  crash_args=(--quick); fault_seeds=40; hostile_args=(--quick); space_repeat=1; kill_args=(--quick)
else
  crash_args=(--workload all --random-seeds 100 --short-seeds 2000); fault_seeds=1000; hostile_args=(--seeds 1000)
  space_repeat=20; kill_args=(--rounds 50)
fi

failed=()
wanted() { [[ ",$only," == *",$1,"* ]]; }
# run NAME COMMAND...: runs it with its output in $out/NAME.log and a line of
# timing; remembers a failure.
run() {
  local name=$1 start=$SECONDS rc=0
  shift
  echo "==== $name: $*"
  "$@" >"$out/$name.log" 2>&1 || rc=$?
  echo "$((SECONDS - start))" >"$out/$name.seconds"
  if ((rc == 0)); then
    echo "     ok in $((SECONDS - start)) s"
  elif ((rc == 77)); then
    echo "     skipped: $(tail -n 1 "$out/$name.log")"
    echo skipped >"$out/$name.skipped"
  else
    echo "     FAILED (exit $rc) in $((SECONDS - start)) s; tail of $out/$name.log:"
    tail -n 20 "$out/$name.log" | sed 's/^/       /'
    failed+=("$name")
  fi
}

if wanted crash; then
  run crash "$bin/walfs-crashtest" "${crash_args[@]}" --json "$out/crash.json"
fi
if wanted fault; then
  run fault env WALFS_FS_FAULT_SEEDS=$fault_seeds "$bin/tests/fs_fault_test" --gtest_filter='FsFaultCampaign.*'
fi
if wanted hostile; then
  run hostile "$bin/walfs-hostile" "${hostile_args[@]}" --json "$out/hostile.json"
fi
if wanted space; then
  run space "$bin/tests/fs_space_stress_test" --gtest_repeat=$space_repeat
fi
if wanted kill; then
  if [[ $(id -u) != 0 || ! -w /dev/fuse ]]; then
    echo "==== kill: skipped (needs root and /dev/fuse)"
    echo skipped >"$out/kill.skipped"
  else
    run kill "$bin/walfs-killtest" "${kill_args[@]}" --json "$out/kill.json"
  fi
fi

python3 - "$out" "$quick" "${failed[@]}" <<'PY'
import json, os, re, subprocess, sys
out, quick, failed = sys.argv[1], sys.argv[2] == "1", set(sys.argv[3:])

def rows(name):
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path):
        return []
    text = open(path).read().strip()
    if not text:
        return []
    if text.startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]

def seconds(name):
    p = os.path.join(out, name + ".seconds")
    return open(p).read().strip() if os.path.exists(p) else "-"

def log(name):
    p = os.path.join(out, name + ".log")
    return open(p).read() if os.path.exists(p) else ""

def status(name):
    if name in failed:
        return "FAILED"
    if os.path.exists(os.path.join(out, name + ".skipped")):
        return "skipped"
    if not os.path.exists(os.path.join(out, name + ".seconds")):
        return "not run"
    return "ok"

lines = []
r = rows("crash")
if r:
    states = sum(int(x.get("crash_states", 0)) for x in r)
    fails = sum(int(x.get("failures", 0)) for x in r)
    lines.append(("crash", f"{len(r)} runs, {states:,} crash states checked, {fails} failing"))
m = re.search(r"fault campaign: (.*)", log("fault"))
if m:
    lines.append(("fault", m.group(1)))
r = rows("hostile")
if r:
    tot = [x for x in r if x.get("kind") == "all"] or r
    tried = sum(int(x.get("tried", 0)) for x in tot)
    refused = sum(int(x.get("refused", 0)) for x in tot)
    mounted = sum(int(x.get("mounted", 0)) for x in tot)
    flagged = sum(int(x.get("fsck_flagged", 0)) for x in tot)
    bad = sum(int(x.get("crashes", 0)) + int(x.get("hangs", 0)) + int(x.get("violations", 0)) for x in tot)
    lines.append(("hostile", f"{tried:,} damaged images: {refused:,} refused at mount, {mounted:,} mounted, "
                              f"{flagged:,} flagged by fsck; {bad} crashes/hangs/violations"))
m = re.findall(r"\[  PASSED  \] (\d+) test", log("space"))
if status("space") != "not run":
    lines.append(("space", f"{sum(int(x) for x in m)} stress runs passed"))
r = rows("kill")
if r:
    ok = sum(1 for x in r if str(x.get("result", "")).lower() in ("ok", "pass", "passed", "survived"))
    acked = sum(int(x.get("ops_acked", 0)) for x in r)
    lines.append(("kill", f"{ok}/{len(r)} rounds survived, {acked:,} acknowledged fsyncs checked"))

rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
md = [f"# walfs reliability campaigns ({'quick' if quick else 'full'}), revision {rev}", "",
      "| campaign | status | seconds | what was checked |", "| --- | --- | ---: | --- |"]
names = ["crash", "fault", "hostile", "space", "kill"]
summary = dict(lines)
for n in names:
    if status(n) == "not run" and n not in summary:
        continue
    md.append(f"| {n} | {status(n)} | {seconds(n)} | {summary.get(n, '')} |")
text = "\n".join(md) + "\n"
open(os.path.join(out, "summary.md"), "w").write(text)
print()
print(text)
PY

if ((${#failed[@]} > 0)); then
  echo "reliability.sh: failed: ${failed[*]} (logs in $out)" >&2
  exit 1
fi
