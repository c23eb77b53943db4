"""The `churn` load: walfs-churn (bench/churn), the create, write 4 KiB, fsync,
close, rename, unlink loop of a safe file save, at 1 and 8 processes (each
in a directory of its own), for --runtime seconds a level; cycles per second
summed over the processes, and the p99 of one cycle.  Issue 25's table calls
it the "create+write+fsync+rename+unlink loop".
"""

import json

METRIC = "cycles/s"
PROCS = (1, 8)


def parse_procs(text):
    """'1,8' -> (1, 8); every count 1..256."""
    try:
        procs = tuple(int(p) for p in text.split(","))
    except ValueError:
        raise ValueError(f"bad --churn-procs {text!r}: want comma-separated process counts") from None
    if not procs or any(not 1 <= p <= 256 for p in procs):
        raise ValueError(f"bad --churn-procs {text!r}: every count must be 1..256")
    return procs


def command(churn_bin, directory, procs, seconds, json_out):
    return [churn_bin, directory, "--procs", ",".join(str(p) for p in procs),
            "--seconds", str(seconds), "--json", json_out]


def parse_json(text):
    """walfs-churn --json -> [(processes, cycles_per_s, p99_us)]."""
    return [(int(r["processes"]), float(r["cycles_per_s"]), float(r["p99_us"])) for r in json.loads(text)]
