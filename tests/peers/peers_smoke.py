#!/usr/bin/env python3
"""ctest peers_smoke: walfs-peers --quick on what CI can set up, and its outputs.

tmpfs always; ext4, XFS and XFS with the smallest log on loop devices, which
the runner itself skips with a reason when not root or without
/dev/loop-control.  Every load: aim, fio, the tree (--quick:
/usr/include/linux, ~800 entries, a second per system), churn (1 and 8
processes, a second each) and dbench (2 clients, 3 s).  Checks the exit
status, the printed table, that the CSV and JSON hold the same rows with
numbers for every system that ran (every tree phase included), and the tree's
entry count in the env table.
Usage: peers_smoke.py WALFS_PEERS OUT_DIR
"""

import csv
import json
import os
import re
import shutil
import subprocess
import sys

SYSTEMS = ["tmpfs", "ext4", "xfs", "xfs-minlog"]


def fail(msg):
    print(f"peers_smoke: FAIL: {msg}")
    sys.exit(1)


def main():
    peers, out = sys.argv[1], sys.argv[2]
    shutil.rmtree(out, ignore_errors=True)
    cmd = [peers, "--quick", "--loads", "aim,fio,tree,churn,dbench", "--systems", ",".join(SYSTEMS), "--out", out]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    print(p.stdout)
    if p.returncode != 0:
        fail(f"walfs-peers exited {p.returncode}")
    for heading in ("## env", "## systems", "## results", "| system | load | engine |"):
        if heading not in p.stdout:
            fail(f"printed output lacks {heading!r}")
    with open(os.path.join(out, "results.json")) as f:
        rows = json.load(f)
    with open(os.path.join(out, "results.csv")) as f:
        csv_rows = list(csv.DictReader(f))
    if len(rows) != len(csv_rows):
        fail(f"JSON has {len(rows)} rows, CSV {len(csv_rows)}")
    results = [r for r in rows if r["table"] == "results"]
    ran = {r["system"] for r in rows if r["table"] == "systems" and r["status"] == "ran"}
    if "tmpfs" not in ran:
        fail("tmpfs did not run")
    env = {r["key"]: r["value"] for r in rows if r["table"] == "env"}
    if not re.match(r"/usr/include/linux: \d+ entries \(\d+ files, \d+ dirs, \d+ symlinks", env.get("tree") or ""):
        fail(f"env table lacks the tree's entry count: {env.get('tree')!r}")
    tree_phases = ["tree-extract", "tree-stat", "tree-rm"]
    if "tree-stat-cold" in env.get("tree phases", ""):
        tree_phases.insert(2, "tree-stat-cold")
    for system in SYSTEMS:
        mine = [r for r in results if r["system"] == system]
        if system in ran:
            loads = {r["load"] for r in mine if r["median"] is not None}
            if "aim-fserver" not in loads or not any(l.startswith("fio:") for l in loads):
                fail(f"{system} ran but has no aim and fio numbers: {sorted(loads)}")
            tree_rows = [r for r in mine if r["load"].startswith("tree-")]
            if [r["load"] for r in tree_rows] != tree_phases:
                fail(f"{system}: tree rows {[r['load'] for r in tree_rows]}, want {tree_phases}")
            for r in tree_rows:
                if r["metric"] != "entries/s" or not r["median"] or r["median"] <= 0 or r["reps"] != 1:
                    fail(f"{system} {r['load']}: {r}")
            churn = {r["users"]: r for r in mine if r["load"] == "churn"}
            if sorted(churn) != [1, 8] or any(r["metric"] != "cycles/s" or not (r["median"] or 0) > 0
                                               for r in churn.values()):
                fail(f"{system}: churn rows {list(churn.values())}")
            dbench = [r for r in mine if r["load"] == "dbench"]
            if len(dbench) != 1 or dbench[0]["metric"] != "MB/s" or not (dbench[0]["median"] or 0) > 0:
                fail(f"{system}: dbench rows {dbench}")
            if any((r["note"] or "").startswith("failed") for r in mine):
                fail(f"{system} has failed cells")
        elif not (len(mine) == 1 and (mine[0]["note"] or "").startswith("skipped: ")):
            fail(f"{system} neither ran nor was skipped with a reason")
        else:
            print(f"peers_smoke: {system} {mine[0]['note']}")
    print(f"peers_smoke: ok ({', '.join(sorted(ran))} ran)")


if __name__ == "__main__":
    main()
