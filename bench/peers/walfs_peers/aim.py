"""walfs-aim (bench/aim): the AIM7 fserver user ramp, and its --json rows."""

import dataclasses
import json


@dataclasses.dataclass(frozen=True)
class AimParams:
    start: int
    end: int
    incr: int
    jobs: int
    filesize: str
    poolsize: str

    def args(self):
        return ["-s", str(self.start), "-e", str(self.end), "-i", str(self.incr),
                "-j", str(self.jobs), "--filesize", self.filesize, "--poolsize", self.poolsize]


# re-aim's defaults for the files (10K + 1M pool), a 1..16 user ramp.
FULL_PARAMS = AimParams(start=1, end=16, incr=5, jobs=100, filesize="10K", poolsize="1M")
# Two load levels of a short job list with small files: seconds per system.
QUICK_PARAMS = AimParams(start=1, end=4, incr=3, jobs=10, filesize="4K", poolsize="64K")


def parse_users(text):
    """'1:16:5' -> (1, 16, 5); 'N' -> (N, N, 1)."""
    parts = [int(p) for p in text.split(":")]
    if len(parts) == 1:
        parts = [parts[0], parts[0], 1]
    if len(parts) != 3 or parts[0] < 1 or parts[1] < parts[0] or parts[2] < 1:
        raise ValueError(f"bad --users {text!r}: want START:END:INCR")
    return tuple(parts)


def command(aim_bin, directory, params, json_out):
    return [aim_bin, directory] + params.args() + ["--json", json_out]


def parse_json(text):
    """walfs-aim --json -> [(users, jobs_per_min, jti)]."""
    rows = json.loads(text)
    return [(int(r["users"]), float(r["jobs_per_min"]), r.get("jti")) for r in rows]
