#!/usr/bin/env python3
"""SIGKILL the walfs daemon under an SQLite writer; count acknowledged commits lost.

Each round: a fresh image, a mount, one process committing single-row
transactions into a database on the mount in a loop, writing the id of
each commit to a ledger outside the mount as soon as commit() returns;
SIGKILL of the daemon at a random moment; the writer killed; a remount
(log recovery); SQLite opens the database (rolling back a hot journal) and
the highest id in it is compared with the ledger.  A commit is lost when
its id was acknowledged and is not in the database.

    bench/killtest/sqlite_kill.py --rounds 20 --journal delete --sync full
    bench/killtest/sqlite_kill.py --rounds 20 --journal wal --sync normal --json out.json

Columns: round, kill_ms (after the writer started), acked (commits
acknowledged), in_db (the highest id after recovery), lost (acknowledged
ids not there), lost_age_ms (how long before the kill the oldest lost one
was acknowledged), result.  Exit 0 when no round lost a commit older than
--margin-ms, 1 otherwise, 2 bad usage, 77 skipped (not root).

Needs root (it mounts and kills), mkfs.walfs and walfs in --bin-dir.
"""
import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time


def writer(db_path, ledger_path, journal, sync):
    """The child: commits forever, one id per transaction."""
    con = sqlite3.connect(db_path, isolation_level=None)
    con.execute(f"PRAGMA journal_mode={journal}")
    con.execute(f"PRAGMA synchronous={sync}")
    con.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, pad BLOB)")
    ledger = os.open(ledger_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    pad = os.urandom(200)
    i = 0
    while True:
        i += 1
        try:
            con.execute("BEGIN")
            con.execute("INSERT INTO t VALUES (?, ?)", (i, pad))
            con.execute("COMMIT")
        except sqlite3.Error:
            os._exit(0)  # the mount died under us
        os.write(ledger, f"{i} {time.monotonic_ns()}\n".encode())


def daemon_pid(mnt):
    out = subprocess.run(["pgrep", "-f", f"walfs .* {mnt}"], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


def wait_exit(pids, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not any(os.path.exists(f"/proc/{p}") for p in pids):
            return
        time.sleep(0.05)


def one_round(args, rnd, work):
    image, mnt = os.path.join(work, "image"), os.path.join(work, "mnt")
    ledger = os.path.join(work, f"ledger-{rnd}")
    subprocess.run([f"{args.bin_dir}/mkfs.walfs", "-q", "-f", image, "1g"], check=True)
    opts = ["-o", args.mount_options] if args.mount_options else []
    subprocess.run([f"{args.bin_dir}/walfs", image, mnt] + opts, check=True)
    daemons = daemon_pid(mnt)
    db = os.path.join(mnt, "test.db")
    child = os.fork()
    if child == 0:
        os.setsid()
        writer(db, ledger, args.journal, args.sync)
        os._exit(0)
    start = time.monotonic()
    delay = random.uniform(args.min_delay_ms, args.max_delay_ms) / 1000
    time.sleep(delay)
    kill_ns = time.monotonic_ns()
    for p in daemons:
        os.kill(p, signal.SIGKILL)
    time.sleep(0.05)
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    wait_exit(daemons)
    acked = []
    with open(ledger) as f:
        for line in f:
            i, ns = line.split()
            acked.append((int(i), int(ns)))
    subprocess.run([f"{args.bin_dir}/walfs", image, mnt] + opts, check=True, capture_output=True)
    con = sqlite3.connect(db)
    in_db = con.execute("SELECT coalesce(max(id), 0) FROM t").fetchone()[0]
    con.close()
    daemons = daemon_pid(mnt)
    subprocess.run(["umount", mnt], check=True)
    wait_exit(daemons)
    lost = [(i, ns) for i, ns in acked if i > in_db]
    lost_age_ms = (kill_ns - lost[0][1]) / 1e6 if lost else 0.0
    return {
        "round": rnd,
        "kill_ms": round((kill_ns / 1e9 - start) * 1000, 1),
        "acked": len(acked),
        "in_db": in_db,
        "lost": len(lost),
        "lost_age_ms": round(lost_age_ms, 1),
        "result": "ok" if lost_age_ms <= args.margin_ms else "LOST",
    }


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="3 rounds")
    ap.add_argument("--journal", default="delete", choices=["delete", "truncate", "persist", "wal"])
    ap.add_argument("--sync", default="full", choices=["off", "normal", "full", "extra"])
    ap.add_argument("--margin-ms", type=float, default=0.0,
                    help="a lost commit acknowledged at most this long before the kill is allowed (default 0)")
    ap.add_argument("--min-delay-ms", type=int, default=300)
    ap.add_argument("--max-delay-ms", type=int, default=2000)
    ap.add_argument("--mount-options", default="")
    ap.add_argument("--bin-dir", default=os.environ.get("WALFS_BIN_DIR",
                                                        os.path.join(here, "..", "..", "build", "bin")))
    ap.add_argument("--dir", default="/dev/shm")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.quick:
        args.rounds = 3
    if args.rounds < 1 or args.min_delay_ms < 0 or args.max_delay_ms < args.min_delay_ms:
        print("sqlite_kill.py: --rounds >= 1 and 0 <= --min-delay-ms <= --max-delay-ms", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("sqlite_kill.py: skipped: needs root")
        return 77
    seed = args.seed if args.seed is not None else random.randrange(100000)
    random.seed(seed)
    print(f"sqlite_kill: seed {seed}, {args.rounds} rounds, journal_mode={args.journal}, "
          f"synchronous={args.sync}, margin {args.margin_ms} ms, mount options '{args.mount_options}'")
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="walfs-sqlite-kill-") as work:
        os.mkdir(os.path.join(work, "mnt"))
        for rnd in range(args.rounds):
            r = one_round(args, rnd, work)
            rows.append(r)
            print(" ".join(f"{k}={v}" for k, v in r.items()), flush=True)
    cols = list(rows[0].keys())
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) for c in cols]
    print("  ".join(c.rjust(w) for c, w in zip(cols, widths)))
    for r in rows:
        print("  ".join(str(r[c]).rjust(w) for c, w in zip(cols, widths)))
    bad = sum(r["result"] != "ok" for r in rows)
    print(f"sqlite_kill: {len(rows) - bad}/{len(rows)} rounds lost no commit older than {args.margin_ms} ms; "
          f"{sum(r['lost'] for r in rows)} commits lost in all, of {sum(r['acked'] for r in rows)} acknowledged")
    if args.json:
        with open(args.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
