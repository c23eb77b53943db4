"""The fio job catalogue (bench/fio/*.fio), its environment, and fio's JSON.

Every job file reads its directory, sizes and engine from the environment
(fio substitutes ${VAR}; an unset one becomes empty), so one file serves
every system and engine.  The variables and their full-run defaults are in
bench/fio/run-job.sh and docs/peers.md.
"""

import dataclasses
import errno
import json
import os


@dataclasses.dataclass(frozen=True)
class FioJob:
    name: str           # bench/fio/<name>.fio
    direction: str      # the fio direction whose IOPS and latency are reported
    engine_var: bool    # takes IOENGINE (psync / libaio / io_uring)
    direct_var: bool    # takes DIRECT (O_DIRECT where the system allows it)
    verify: bool = False


JOBS = [
    FioJob("randwrite-4k-fsync-1j", "write", True, True),
    FioJob("randwrite-4k-fsync-4j", "write", True, True),
    FioJob("seqwrite-1m", "write", True, True),
    FioJob("randread-4k", "read", True, True),
    FioJob("seqread-1m", "read", True, True),
    FioJob("randwrite-4k-buffered", "write", True, False),
    FioJob("filecreate", "read", False, False),
    FioJob("filestat", "read", False, False),
    FioJob("filedelete", "read", False, False),
    FioJob("randwrite-4k-verify", "write", True, True, verify=True),
    FioJob("seqwrite-1m-verify", "write", True, True, verify=True),
]
JOBS_BY_NAME = {j.name: j for j in JOBS}
QUICK_JOB_NAMES = ["randwrite-4k-fsync-1j", "randwrite-4k-fsync-4j", "seqwrite-1m",
                   "randread-4k", "filecreate", "randwrite-4k-verify"]
ENGINES = ["psync", "libaio", "io_uring"]


@dataclasses.dataclass(frozen=True)
class FioParams:
    size: str        # SIZE: file size per job
    runtime: str     # RUNTIME: seconds of a time-based job (fio syntax: 10s, 500ms)
    nrfiles: int     # NRFILES: files of the metadata jobs
    iodepth: int     # IODEPTH: queue depth of libaio / io_uring


FULL_PARAMS = FioParams(size="256m", runtime="10s", nrfiles=10000, iodepth=16)
QUICK_PARAMS = FioParams(size="16m", runtime="1s", nrfiles=1000, iodepth=16)
SMOKE_PARAMS = FioParams(size="4m", runtime="300ms", nrfiles=200, iodepth=4)


class FioError(Exception):
    pass


def job_path(fio_dir, job):
    return os.path.join(fio_dir, job.name + ".fio")


def job_env(directory, params, engine="psync", direct=1):
    """The variables every job file reads (all set: fio would substitute '')."""
    return {
        "DIR": directory,
        "SIZE": params.size,
        "RUNTIME": params.runtime,
        "IOENGINE": engine,
        "DIRECT": str(int(direct)),
        "IODEPTH": str(params.iodepth),
        "NRFILES": str(params.nrfiles),
    }


def command(fio_bin, jobfile, json_out):
    # --output keeps fio's notes ("queue depth will be capped at 1") out of the JSON.
    return [fio_bin, "--output-format=json", f"--output={json_out}", jobfile]


def _pct(block, key, pct="99.000000"):
    lat = block.get(key) or {}
    return (lat.get("percentile") or {}).get(pct)


def parse_json(text, direction):
    """fio's --output-format=json for one job file -> the numbers we report.

    Returns {iops, bw_mib_s, p99_us, fsync_p99_us, ios, verify_read_ios}.
    Several job entries (no group_reporting) are summed (IOPS, bandwidth) and
    the worst p99 kept.  Raises FioError for unparsable output, no job, or a
    job whose "error" is non-zero (a failed verify among them).
    """
    start = text.find("{")
    if start < 0:
        raise FioError("fio wrote no JSON")
    try:
        doc = json.loads(text[start:])
    except json.JSONDecodeError as e:
        raise FioError(f"fio JSON unreadable: {e}") from None
    jobs = doc.get("jobs") or []
    if not jobs:
        raise FioError("fio JSON has no job")
    iops = bw = 0.0
    ios = verify_ios = 0
    p99 = fsync_p99 = None
    for j in jobs:
        err = j.get("error")
        if err:
            why = "data verification failed" if err == errno.EILSEQ else os.strerror(err)
            raise FioError(f"job {j.get('jobname')}: error {err} ({why})")
        d = j.get(direction) or {}
        iops += float(d.get("iops", 0.0))
        bw += float(d.get("bw_bytes", 0.0))
        ios += int(d.get("total_ios", 0))
        if direction == "write":
            verify_ios += int((j.get("read") or {}).get("total_ios", 0))
        p = _pct(d, "clat_ns")
        if p is not None:
            p99 = p if p99 is None else max(p99, p)
        s = _pct(j.get("sync") or {}, "lat_ns")
        if s is not None and (j.get("sync") or {}).get("total_ios"):
            fsync_p99 = s if fsync_p99 is None else max(fsync_p99, s)
    return {
        "iops": iops,
        "bw_mib_s": bw / (1 << 20),
        "p99_us": p99 / 1000.0 if p99 is not None else None,
        "fsync_p99_us": fsync_p99 / 1000.0 if fsync_p99 is not None else None,
        "ios": ios,
        "verify_read_ios": verify_ios,
    }


def check_verify(job, result):
    """A verify job must have read its data back; fio's own check failing is an error."""
    if job.verify and result["verify_read_ios"] == 0:
        raise FioError(f"{job.name}: the verify phase read nothing back")
