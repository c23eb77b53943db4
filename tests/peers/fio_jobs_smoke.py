#!/usr/bin/env python3
"""ctest fio_jobs_smoke: every bench/fio job file, briefly, on tmpfs.

Each job runs once per engine it takes (psync, libaio, io_uring), with
O_DIRECT where this kernel's tmpfs accepts it (Linux >= 6.6) and buffered
where it does not; the verify jobs must read their data back intact.
Usage: fio_jobs_smoke.py SOURCE_DIR
"""

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(sys.argv[1], "bench", "peers"))
from walfs_peers import fio, host  # noqa: E402


def main():
    fio_dir = os.path.join(sys.argv[1], "bench", "fio")
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    top = tempfile.mkdtemp(prefix="walfs-fio-smoke.", dir=base)
    passed = failed = 0
    try:
        direct = 1 if host.o_direct_works(top) else 0
        print(f"fio_jobs_smoke: {top}: O_DIRECT {'accepted' if direct else 'refused: psync, buffered'}")
        engines = fio.ENGINES if direct else ["psync"]
        for job in fio.JOBS:
            for engine in (engines if job.engine_var else ["psync"]):
                work = tempfile.mkdtemp(dir=top)
                out = os.path.join(top, "out.json")
                env = dict(os.environ, **fio.job_env(work, fio.SMOKE_PARAMS, engine, direct))
                p = subprocess.run(fio.command("fio", fio.job_path(fio_dir, job), out), env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
                try:
                    if p.returncode != 0:
                        raise fio.FioError(f"exit {p.returncode}: {p.stderr.strip()[-300:]}")
                    with open(out) as f:
                        r = fio.parse_json(f.read(), job.direction)
                    fio.check_verify(job, r)
                    if r["ios"] == 0:
                        raise fio.FioError("no I/O done")
                    passed += 1
                    print(f"  ok   {job.name:24} {engine:8} {r['iops']:>12.0f} IOPS")
                except (fio.FioError, OSError) as e:
                    failed += 1
                    print(f"  FAIL {job.name:24} {engine:8} {e}")
                shutil.rmtree(work, ignore_errors=True)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print(f"fio_jobs_smoke: {passed} ok, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
