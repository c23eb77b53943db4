"""walfs-peers: the command line and the run (see docs/peers.md).

One run: gather facts, clean leftovers of crashed runs, make the tree load's
tarball, then for each repetition and each system (the order rotates every
repetition so no system always runs first): set it up, run every load, tear
it down.  Then medians and min-max spreads, a markdown table on stdout, CSV,
JSON and PNG plots.
"""

import argparse
import atexit
import os
import platform
import shutil
import signal
import sys
import time

from . import aim as aimlib
from . import churn as churnlib
from . import dbench as dbenchlib
from . import fio as fiolib
from . import host as hostlib
from . import plots as plotlib
from . import report
from . import stats
from . import systems as syslib
from . import tree as treelib

EXIT_OK, EXIT_FAILED_CELL, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
LOADS = ["aim", "fio", "tree", "churn", "dbench"]


class _Parser(argparse.ArgumentParser):
    """A usage error is one line and exit 2, as in every walfs program."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: {message}; see {self.prog} --help\n")


def version_text(prog, bin_dir):
    """The walfs version line: mkfs.walfs's (base/version.h), under this program's name."""
    import subprocess
    try:
        out = subprocess.run([os.path.join(bin_dir, "mkfs.walfs"), "--version"], capture_output=True,
                             text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as e:
        return f"{prog}: cannot ask mkfs.walfs in {bin_dir} for the version ({e})"
    return out.replace("mkfs.walfs", prog, 1)


class _VersionAction(argparse.Action):
    """--version, asking mkfs.walfs only when it is given."""

    def __init__(self, bin_dir, **kwargs):
        super().__init__(**kwargs)
        self.bin_dir = bin_dir

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text(parser.prog, self.bin_dir))
        parser.exit(EXIT_OK)


def parse_args(argv, bin_dir=None):
    p = _Parser(
        prog="walfs-peers",
        description="Run the same loads (walfs-aim fserver, the fio jobs in bench/fio, a small-file "
                    "tree, the create-fsync-rename loop, dbench) on walfs and on peer filesystems, side by side, and report medians and "
                    "spreads.")
    p.add_argument("--quick", action="store_true",
                   help="short cells: psync only, 6 fio jobs of 1 s, a 2-level aim ramp, the tree of "
                        f"{treelib.QUICK_SOURCE}, 1 rep")
    p.add_argument("--reps", type=int, help="repetitions of every cell (default 3; 1 with --quick)")
    p.add_argument("--systems", help="comma-separated systems to run (default: all; see --list)")
    p.add_argument("--loads", default="aim,fio",
                   help="comma-separated loads: aim (walfs-aim fserver), fio (the bench/fio jobs), "
                        "tree (tar -x of --tree-source, lstat of every entry, warm and after "
                        "dropping the kernel's caches, rm -rf; entries/s), churn (walfs-churn: create, "
                        "write, fsync, rename, unlink; cycles/s), dbench (dbench's client loadfile; MB/s) "
                        "(default aim,fio)")
    p.add_argument("--churn-procs", default=",".join(str(n) for n in churnlib.PROCS), metavar="N,N",
                   help="the churn load's process counts, one level each (default "
                        f"{','.join(str(n) for n in churnlib.PROCS)}); --runtime seconds a level")
    p.add_argument("--dbench-clients", type=int, metavar="N",
                   help=f"the dbench load's clients (default {dbenchlib.CLIENTS}; --quick 2); --runtime seconds, "
                        f"at least {dbenchlib.MIN_SECONDS}")
    p.add_argument("--tree-source", metavar="DIR",
                   help=f"the tree load's source, tarred once per run outside any timing (default "
                        f"{treelib.FULL_SOURCE}; --quick {treelib.QUICK_SOURCE})")
    p.add_argument("--fio-jobs", help="comma-separated job names from bench/fio (default: all; "
                                      "--quick: " + ",".join(fiolib.QUICK_JOB_NAMES) + ")")
    p.add_argument("--engines", help="fio engines where O_DIRECT works (default psync,libaio,io_uring; "
                                     "--quick: psync)")
    p.add_argument("--size", help="fio SIZE (default 256m; --quick 16m)")
    p.add_argument("--runtime", help="fio RUNTIME of time-based jobs, and the seconds of a churn level "
                                     "and of dbench (default 10s; --quick 1s)")
    p.add_argument("--nrfiles", type=int, help="fio NRFILES of the metadata jobs (default 10000; --quick 1000)")
    p.add_argument("--users", help="walfs-aim ramp START:END:INCR (default 1:16:5; --quick 1:4:3)")
    p.add_argument("--aim-jobs", type=int, help="walfs-aim -j (default 100; --quick 10)")
    p.add_argument("--walfs-threads", type=int, metavar="N",
                   help="FUSE worker threads of the walfs mounts (-o max_threads=N,threads=N; default "
                        "libfuse's 10): more concurrent transactions, so log space can run out")
    p.add_argument("--walfs-lanes", type=int, metavar="N",
                   help="lanes of each CPU's ring queue in the walfs-*-uring mounts (-o uring_lanes=N, "
                        "1..64; default walfs's 4): the requests a queue serves at once, as "
                        "--walfs-threads is for /dev/fuse")
    p.add_argument("--image-size", help="image and tmpfs size (default 2g; --quick 1g)")
    p.add_argument("--disk", metavar="DIR",
                   help="put images (and the passthrough's source directory) on DIR instead of tmpfs")
    p.add_argument("--out", default="walfs-peers-results", metavar="DIR",
                   help="results directory: results.md/.csv/.json, plots, raw tool output")
    p.add_argument("--json", metavar="PATH", help="the tables as JSON (default OUT/results.json)")
    p.add_argument("--csv", metavar="PATH", help="the tables as CSV (default OUT/results.csv)")
    p.add_argument("--no-plots", action="store_true", help="do not run gnuplot")
    p.add_argument("--enable-uring", action="store_true",
                   help="as root, turn the fuse module's enable_uring on for the run (and back "
                        "after), so that the walfs-*-uring systems can run")
    p.add_argument("--list", action="store_true", help="list the systems and why any would be skipped")
    p.add_argument("-v", "--verbose", action="store_true", help="print every command")
    p.add_argument("-V", "--version", action=_VersionAction, nargs=0,
                   bin_dir=bin_dir or os.path.dirname(os.path.abspath(sys.argv[0])),
                   help="print the walfs and on-disk format versions")
    a = p.parse_args(argv)
    q = a.quick
    a.reps = a.reps or (1 if q else 3)
    a.engines = (a.engines or ("psync" if q else ",".join(fiolib.ENGINES))).split(",")
    a.fio_jobs = (a.fio_jobs or ",".join(fiolib.QUICK_JOB_NAMES if q else [j.name for j in fiolib.JOBS])).split(",")
    base = fiolib.QUICK_PARAMS if q else fiolib.FULL_PARAMS
    a.fio_params = fiolib.FioParams(size=a.size or base.size, runtime=a.runtime or base.runtime,
                                    nrfiles=a.nrfiles or base.nrfiles, iodepth=base.iodepth)
    ab = aimlib.QUICK_PARAMS if q else aimlib.FULL_PARAMS
    s, e, i = aimlib.parse_users(a.users) if a.users else (ab.start, ab.end, ab.incr)
    a.aim_params = aimlib.AimParams(s, e, i, a.aim_jobs or ab.jobs, ab.filesize, ab.poolsize)
    a.image_bytes = syslib.parse_size(a.image_size or ("1g" if q else "2g"))
    a.loads = [l.strip() for l in a.loads.split(",")]
    a.tree_source = a.tree_source or (treelib.QUICK_SOURCE if q else treelib.FULL_SOURCE)
    try:
        a.churn_procs = churnlib.parse_procs(a.churn_procs)
        a.load_seconds = runtime_seconds(a.fio_params.runtime)
    except ValueError as e:
        p.error(str(e))
    if a.dbench_clients is None:
        a.dbench_clients = 2 if q else dbenchlib.CLIENTS
    if not 1 <= a.dbench_clients <= 1000:
        p.error("--dbench-clients must be 1..1000")
    for e_ in a.engines:
        if e_ not in fiolib.ENGINES:
            p.error(f"unknown engine {e_!r} (one of {', '.join(fiolib.ENGINES)})")
    for j in a.fio_jobs:
        if j not in fiolib.JOBS_BY_NAME:
            p.error(f"unknown fio job {j!r} (one of {', '.join(fiolib.JOBS_BY_NAME)})")
    for l in a.loads:
        if l not in LOADS:
            p.error(f"unknown load {l!r} (one of {', '.join(LOADS)})")
    if a.reps < 1:
        p.error("--reps must be at least 1")
    if a.walfs_threads is not None and not 1 <= a.walfs_threads <= 100000:
        p.error("--walfs-threads must be 1..100000")
    if a.walfs_lanes is not None and not 1 <= a.walfs_lanes <= 64:
        p.error("--walfs-lanes must be 1..64")
    return a


def select_systems(all_systems, names):
    if not names:
        return all_systems
    by_name = {s.name: s for s in all_systems}
    chosen = []
    for n in names.split(","):
        n = n.strip()
        if n == "walfs":
            chosen += [s for s in all_systems if s.name.startswith("walfs-")]
        elif n in ("walfs-dev", "walfs-uring"):   # every walfs system over that transport
            chosen += [s for s in all_systems
                       if s.name.startswith("walfs-") and getattr(s, "transport", None) == n[6:]]
        elif n in by_name:
            chosen.append(by_name[n])
        else:
            raise ValueError(f"unknown system {n!r} (one of {', '.join(by_name)}, "
                             "walfs, walfs-dev, walfs-uring)")
    return chosen


def choose_engines(requested, direct_ok, uring_disabled):
    """[(engine, direct)] a system runs, and a note on what was left out."""
    notes = []
    engines = list(requested)
    if uring_disabled and "io_uring" in engines:
        engines.remove("io_uring")
        notes.append("io_uring disabled (kernel.io_uring_disabled=2)")
    if not direct_ok:
        notes.append("O_DIRECT refused: psync, buffered (DIRECT=0)")
        return [("psync", 0)], "; ".join(notes)
    return [(e, 1) for e in engines or ["psync"]], "; ".join(notes)


class Collector:
    """Every measurement of every repetition, keyed by the cell it belongs to."""

    def __init__(self):
        self.cells = {}     # key -> {"values", "p99", "fsync", "notes"}

    def _cell(self, key):
        return self.cells.setdefault(key, {"values": [], "p99": [], "fsync": [], "notes": []})

    def add(self, key, value, p99=None, fsync_p99=None):
        c = self._cell(key)
        c["values"].append(value)
        c["p99"].append(p99)
        c["fsync"].append(fsync_p99)

    def fail(self, key, note):
        c = self._cell(key)
        c["values"].append(None)
        if note not in c["notes"]:
            c["notes"].append(note)

    def failed(self):
        return any(c["notes"] and any(n.startswith("failed") for n in c["notes"])
                   for c in self.cells.values())

    def rows(self):
        out = []
        for (system, load, engine, direct, users, metric), c in self.cells.items():
            s = stats.summarize(c["values"])
            out.append({
                "system": system, "load": load, "engine": engine, "direct": direct, "users": users,
                "metric": metric, "median": s["median"], "min": s["min"], "max": s["max"],
                "spread_pct": s["spread_pct"], "p99_us": stats.median_or_none(c["p99"]),
                "fsync_p99_us": stats.median_or_none(c["fsync"]), "reps": s["n"],
                "note": "; ".join(c["notes"]) or None,
            })
        return out


def first_line(text):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def versions(host, facts, source_dir, args):
    def out(cmd):
        try:
            r = host.run(cmd, check=False, timeout=20)
            return first_line(r.stdout) or first_line(r.stderr) or None
        except Exception:
            return None
    env = [("kernel", f"{platform.system()} {os.uname().release} {os.uname().version}"),
           ("machine", f"{os.cpu_count()} CPUs, {_cpu_model()}, {_mem_gib():.0f} GiB"),
           ("python", platform.python_version())]
    for key, cmd in (("fio", ["fio", "--version"]), ("mkfs.xfs", ["mkfs.xfs", "-V"]),
                     ("e2fsprogs", ["mke2fs", "-V"]), ("libfuse3", ["pkg-config", "--modversion", "fuse3"]),
                     ("gnuplot", ["gnuplot", "--version"])):
        env.append((key, out(cmd) if shutil.which(cmd[0]) else "not installed"))
    env.append(("fuse2fs", _fuse2fs_version(host, facts)))
    env.append(("fuse over io_uring", {None: "not in this kernel", False: "off (enable_uring N)",
                                       True: "on (enable_uring Y)"}[facts.fuse_uring]
                + (" for this run (--enable-uring)" if args.enable_uring else "")))
    rev = out(["git", "-C", source_dir, "rev-parse", "--short", "HEAD"]) or "unknown"
    dirty = host.run(["git", "-C", source_dir, "status", "--porcelain", "--untracked-files=no"],
                     check=False, timeout=20).stdout.strip() if rev != "unknown" else ""
    env.append(("walfs", rev + ("-dirty" if dirty else "")))
    env += [("mode", "quick" if args.quick else "full"), ("reps", str(args.reps)),
            ("images", args.disk or "/dev/shm (tmpfs)"),
            ("fio env", " ".join(f"{k}={v}" for k, v in fiolib.job_env("MNT", args.fio_params).items()
                                 if k not in ("DIR", "IOENGINE", "DIRECT"))),
            ("aim args", " ".join(args.aim_params.args())),
            ("date", time.strftime("%Y-%m-%d %H:%M:%S %Z"))]
    return env


def _fuse2fs_version(host, facts):
    """fuse2fs -V mixes fusermount's line in; keep its own and its FUSE library's."""
    if not facts.tool("fuse2fs"):
        return "not installed"
    r = host.run([facts.tool("fuse2fs"), "-V"], check=False, timeout=20)
    lines = [l.strip() for l in (r.stdout + r.stderr).splitlines()
             if l.startswith("fuse2fs") or l.startswith("FUSE library")]
    return ", ".join(lines) or None


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _mem_gib():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    except (ValueError, OSError):
        return 0.0


class Run:
    def __init__(self, args, bin_dir, source_dir, log):
        self.args, self.bin_dir, self.source_dir, self.log = args, bin_dir, source_dir, log
        self.fio_dir = os.path.join(source_dir, "bench", "fio")
        self.host = hostlib.Host(log=log if args.verbose else None)
        self.collector = Collector()
        self.engines = {}   # system -> (engine list, note)
        self.raw_dir = os.path.join(args.out, "raw")
        self.tarball = None         # the tree load's treelib.Tarball
        self.tree_problem = None    # why the tree load cannot run on any system
        self.tree_cold = False      # whether tree-stat-cold runs (the kernel's caches can be dropped)

    def prepare_tree(self, facts, tar_dir):
        """Makes the tree load's tarball; returns its rows for the env table."""
        a = self.args
        self.tree_cold = treelib.can_drop_caches()
        missing = [t for t in ("tar", "find", "rm", "sync") if not facts.tool(t)]
        try:
            if missing:
                raise treelib.TreeError(f"{', '.join(missing)} not found (Debian packages tar, "
                                        "findutils, coreutils)")
            self.log(f"tree: tar of {a.tree_source} into {tar_dir}")
            self.tarball = treelib.make_tarball(self.host, facts.tool("tar"), a.tree_source, tar_dir)
        except treelib.TreeError as e:
            self.tree_problem = f"tree load: {e}"
            self.log(f"walfs-peers: {self.tree_problem}; its cells fail, the other loads run")
            return [("tree", f"not run: {e}")]
        walk = "find -printf %s (one lstat per entry)"
        cold = ("tree-stat-cold after sync and vm.drop_caches=3" if self.tree_cold
                else "no tree-stat-cold: dropping the kernel's caches needs root and a writable "
                     + treelib.DROP_CACHES)
        return [("tree", self.tarball.describe()), ("tree phases", f"tar -xf, {walk}, {cold}, rm -rf")]

    def loads_on(self, system, mnt, rep, ctx):
        a = self.args
        raw = os.path.join(self.raw_dir, f"rep{rep + 1}", system.name)
        os.makedirs(raw, exist_ok=True)
        if "aim" in a.loads:
            self.log(f"  {system.name}: walfs-aim {' '.join(a.aim_params.args())}")
            out = os.path.join(raw, "aim.json")
            levels = range(a.aim_params.start, a.aim_params.end + 1, a.aim_params.incr)
            try:
                self.host.run(aimlib.command(ctx.facts.tool("walfs-aim"), mnt, a.aim_params, out),
                              timeout=3600)
                with open(out) as f:
                    for users, jpm, _jti in aimlib.parse_json(f.read()):
                        self.collector.add((system.name, "aim-fserver", "-", "-", users, "jobs/min"), jpm)
            except (hostlib.CommandFailed, OSError, ValueError, KeyError) as e:
                for users in levels:
                    self.collector.fail((system.name, "aim-fserver", "-", "-", users, "jobs/min"),
                                        f"failed: {_short(e)}")
            st = system.walfs_stats()
            if st:
                for k, v in st.items():
                    if "sleep" in k or "wake" in k:
                        self.collector.add((system.name, "walfs-stats", "-", "-", None, k), v)
        if "fio" in a.loads:
            if system.name not in self.engines:
                self.engines[system.name] = choose_engines(
                    a.engines, hostlib.o_direct_works(mnt), ctx.facts.io_uring_disabled)
            engines, _note = self.engines[system.name]
            for name in a.fio_jobs:
                job = fiolib.JOBS_BY_NAME[name]
                variants = ([(e, d if job.direct_var else 0) for e, d in engines] if job.engine_var
                            else [("-", "-")])
                for engine, direct in variants:
                    self.fio_cell(system, mnt, job, engine, direct, raw)
        if "tree" in a.loads:
            self.tree_cells(system, mnt, ctx.facts)
        if "churn" in a.loads:
            self.churn_cells(system, mnt, ctx.facts, raw)
        if "dbench" in a.loads:
            self.dbench_cell(system, mnt, ctx.facts, raw)

    def churn_cells(self, system, mnt, facts, raw):
        a = self.args
        key = lambda procs: (system.name, "churn", "-", "-", procs, churnlib.METRIC)
        tool = facts.tool("walfs-churn")
        out = os.path.join(raw, "churn.json")
        self.log(f"  {system.name}: walfs-churn, {','.join(map(str, a.churn_procs))} processes")
        try:
            if not tool:
                raise OSError(f"walfs-churn not found in {self.bin_dir}")
            self.host.run(churnlib.command(tool, mnt, a.churn_procs, a.load_seconds, out),
                          timeout=600 + len(a.churn_procs) * a.load_seconds)
            with open(out) as f:
                for procs, rate, p99 in churnlib.parse_json(f.read()):
                    self.collector.add(key(procs), rate, p99)
        except (hostlib.CommandFailed, OSError, ValueError, KeyError) as e:
            for procs in a.churn_procs:
                self.collector.fail(key(procs), f"failed: {_short(e)}")
        self.settle(system)

    def dbench_cell(self, system, mnt, facts, raw):
        a = self.args
        key = (system.name, "dbench", "-", "-", a.dbench_clients, dbenchlib.METRIC)
        tool = facts.tool("dbench")
        work = os.path.join(mnt, "dbench")
        self.log(f"  {system.name}: dbench, {a.dbench_clients} clients")
        try:
            if not tool:
                raise OSError("dbench not found (Debian package dbench)")
            if not os.path.exists(dbenchlib.LOADFILE):
                raise OSError(f"{dbenchlib.LOADFILE} not found (Debian package dbench)")
            os.makedirs(work, exist_ok=True)
            seconds = dbenchlib.seconds(a.load_seconds)
            res = self.host.run(dbenchlib.command(tool, work, a.dbench_clients, seconds), timeout=600 + 2 * seconds)
            with open(os.path.join(raw, "dbench.txt"), "w") as f:
                f.write(res.stdout)
            self.collector.add(key, dbenchlib.parse_throughput(res.stdout, a.dbench_clients))
        except (hostlib.CommandFailed, OSError, dbenchlib.DbenchError) as e:
            self.collector.fail(key, f"failed: {_short(e)}")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        self.settle(system)

    def settle(self, system):
        """The system's deferred work, untimed, so the next load is not charged with it."""
        try:
            system.settle(self.host)
        except (hostlib.CommandFailed, OSError) as e:
            self.log(f"  {system.name}: settling after the load: {_short(e)}")

    def tree_cells(self, system, mnt, facts):
        key = lambda phase: (system.name, phase, "-", "-", None, treelib.METRIC)
        if self.tree_problem:
            for phase in treelib.PHASES:
                if phase != "tree-stat-cold" or self.tree_cold:
                    self.collector.fail(key(phase), f"failed: {self.tree_problem}")
            return
        self.log(f"  {system.name}: tree ({self.tarball.entries} entries)")
        tools = {t: facts.tool(t) for t in ("tar", "find", "rm")}
        phases = treelib.Phases(self.host, self.tarball, tools, lambda: system.settle(self.host),
                                self.tree_cold)
        for phase, value, note in phases.run(mnt):
            if note:
                self.collector.fail(key(phase), note + system.failure_hint(note))
            else:
                self.collector.add(key(phase), value)

    def fio_cell(self, system, mnt, job, engine, direct, raw):
        a = self.args
        key = (system.name, "fio:" + job.name, engine, direct, None, "IOPS")
        self.log(f"  {system.name}: fio {job.name} {engine if engine != '-' else ''}")
        out = os.path.join(raw, f"fio-{job.name}-{engine if engine != '-' else 'na'}.json")
        env = fiolib.job_env(mnt, a.fio_params, engine if engine != "-" else "psync",
                             direct if direct != "-" else 0)
        work = os.path.join(mnt, f"fio.{job.name}")
        os.makedirs(work, exist_ok=True)
        env["DIR"] = work
        try:
            res = self.host.run(fiolib.command("fio", fiolib.job_path(self.fio_dir, job), out), env=env,
                                timeout=_fio_timeout(a.fio_params), check=False)
            try:
                with open(out) as f:
                    parsed = fiolib.parse_json(f.read(), job.direction)
            except OSError:
                parsed = None
            if res.returncode != 0 or parsed is None:
                raise hostlib.CommandFailed(res.args, res.returncode, res.stderr)
            fiolib.check_verify(job, parsed)
            self.collector.add(key, parsed["iops"], parsed["p99_us"], parsed["fsync_p99_us"])
        except (hostlib.CommandFailed, fiolib.FioError, OSError) as e:
            self.collector.fail(key, f"failed: {_short(e)}")
        finally:
            shutil.rmtree(work, ignore_errors=True)


def runtime_seconds(rt):
    """fio's RUNTIME ('10s', '500ms', '2') in seconds; ValueError for anything else."""
    try:
        secs = float(rt[:-2]) / 1000 if rt.endswith("ms") else float(rt[:-1] if rt.endswith("s") else rt)
    except ValueError:
        raise ValueError(f"bad --runtime {rt!r}: want seconds, like 10s or 500ms") from None
    if not secs > 0:
        raise ValueError(f"bad --runtime {rt!r}: must be above 0")
    return secs


def _fio_timeout(params):
    return 600 + 3 * runtime_seconds(params.runtime)


def _short(e):
    if isinstance(e, hostlib.CommandFailed):
        return e.one_line()
    return first_line(str(e)) or type(e).__name__


def _raise_interrupt(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None, bin_dir=None, source_dir=None):
    bin_dir = bin_dir or os.path.dirname(os.path.abspath(sys.argv[0]))
    source_dir = source_dir or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    args = parse_args(sys.argv[1:] if argv is None else argv, bin_dir)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)
    try:
        chosen = select_systems(syslib.all_systems(), args.systems)
    except ValueError as e:
        log(f"walfs-peers: {e}")
        return EXIT_USAGE
    uring_was = None
    if args.enable_uring and not args.list:
        try:
            uring_was = hostlib.set_fuse_uring(True)
        except OSError as e:
            log(f"walfs-peers: --enable-uring: cannot set {hostlib.FUSE_URING_PARAM}: "
                f"{e.strerror} (needs root and a kernel with FUSE over io_uring)")
            return EXIT_USAGE
        if uring_was is False:
            # Put it back however the run ends.
            atexit.register(hostlib.set_fuse_uring, False)
    facts = hostlib.gather_facts(bin_dir, syslib.TOOLS)
    reasons = {s.name: s.skip_reason(facts) for s in chosen}
    if "aim" in args.loads and not facts.tool("walfs-aim"):
        for s in chosen:
            reasons[s.name] = reasons[s.name] or f"walfs-aim not found in {bin_dir}"
    if "fio" in args.loads and not facts.tool("fio"):
        for s in chosen:
            reasons[s.name] = reasons[s.name] or "fio not found (Debian package fio)"
    if args.list:
        for s in chosen:
            print(f"{s.name:22} {s.summary}" + (f"  [skipped: {reasons[s.name]}]" if reasons[s.name] else ""))
        return EXIT_OK

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupt)
    base = args.disk or "/dev/shm"
    run = Run(args, bin_dir, source_dir, log)
    os.makedirs(args.out, exist_ok=True)
    hostlib.clean_leftovers(run.host, sorted({base, "/dev/shm"}), log)
    run_dir = os.path.join(base, f"{hostlib.RUN_PREFIX}{os.getpid()}")
    os.makedirs(run_dir, exist_ok=True)
    env_rows = versions(run.host, facts, source_dir, args)
    ctx = syslib.Ctx(run.host, facts, run_dir, args.image_bytes, log, args.walfs_threads,
                      args.walfs_lanes)
    info = {s.name: {} for s in chosen}
    interrupted = False
    start = time.monotonic()
    try:
        if "tree" in args.loads:
            # Off the mounts and off --disk: every system reads the tarball from memory.
            tar_dir = os.path.join("/dev/shm", f"{hostlib.RUN_PREFIX}{os.getpid()}", "tree")
            env_rows += run.prepare_tree(facts, tar_dir)
        for rep in range(args.reps):
            live = [s for s in chosen if not reasons[s.name]]
            order = live[rep % len(live):] + live[:rep % len(live)] if live else []
            for system in order:
                if reasons[system.name]:
                    continue
                log(f"[rep {rep + 1}/{args.reps}] {system.name}: setup")
                try:
                    mnt = system.setup(ctx)
                except (syslib.SetupError, hostlib.CommandFailed, RuntimeError, OSError) as e:
                    if rep == 0:
                        reasons[system.name] = f"setup failed: {_short(e)}"
                    else:
                        run.collector.fail((system.name, "setup", "-", "-", None, "-"),
                                           f"failed: setup in rep {rep + 1}: {_short(e)}")
                    log(f"  {system.name}: {reasons[system.name] or _short(e)}")
                    continue
                try:
                    info[system.name] = dict(system.info)
                    run.loads_on(system, mnt, rep, ctx)
                finally:
                    run.host.stop_all()
                    system.teardown()
    except KeyboardInterrupt:
        interrupted = True
        log("walfs-peers: interrupted; tearing down")
    finally:
        run.host.stop_all()
        for s in chosen:
            try:
                s.teardown()
            except Exception as e:   # keep tearing down the others
                log(f"walfs-peers: teardown of {s.name}: {_short(e)}")
        hostlib.clean_leftovers_of(run.host, run_dir, log)
        shutil.rmtree(run_dir, ignore_errors=True)
        shutil.rmtree(os.path.join("/dev/shm", f"{hostlib.RUN_PREFIX}{os.getpid()}"), ignore_errors=True)
    if interrupted:
        return EXIT_INTERRUPTED

    tables = build_tables(chosen, reasons, info, run, env_rows)
    elapsed = time.monotonic() - start
    notes = write_outputs(tables, args, run.host, facts, log)
    print(f"# walfs-peers ({'quick' if args.quick else 'full'} run, {args.reps} rep(s), {elapsed:.0f} s)\n")
    for t in tables:
        print(f"## {t.name}\n")
        print(report.to_markdown(t))
    for n in notes:
        print(n)
    failed = run.collector.failed()
    if failed:
        log("walfs-peers: some cells failed (see the note column)")
    return EXIT_FAILED_CELL if failed else EXIT_OK


def build_tables(chosen, reasons, info, run, env_rows):
    env = report.Table("env", report.ENV_COLUMNS, [{"key": k, "value": v} for k, v in env_rows])
    systems = report.Table("systems", report.SYSTEM_COLUMNS)
    results = report.Table("results", report.RESULT_COLUMNS)
    rows = run.collector.rows()
    for s in chosen:
        i = info.get(s.name) or {}
        eng, note = run.engines.get(s.name, (None, None))
        systems.add(system=s.name, status="skipped" if reasons[s.name] else "ran",
                    image=i.get("image"), mkfs=i.get("mkfs"), mount=i.get("mount"),
                    mount_options=i.get("mount_options"),
                    engines=",".join(f"{e}{'' if d else '(buffered)'}" for e, d in eng) if eng else None,
                    note=(f"skipped: {reasons[s.name]}" if reasons[s.name] else (note or s.summary)))
        if reasons[s.name]:
            results.add(system=s.name, load="-", note=f"skipped: {reasons[s.name]}")
        for r in rows:
            if r["system"] == s.name:
                results.add(**r)
    return [env, systems, results]


def write_outputs(tables, args, host, facts, log):
    notes = []
    out = args.out
    paths = {"md": os.path.join(out, "results.md"),
             "json": args.json or os.path.join(out, "results.json"),
             "csv": args.csv or os.path.join(out, "results.csv")}
    with open(paths["md"], "w") as f:
        for t in tables:
            f.write(f"## {t.name}\n\n{report.to_markdown(t)}\n")
    with open(paths["json"], "w") as f:
        f.write(report.to_json(tables))
    with open(paths["csv"], "w") as f:
        f.write(report.to_csv(tables))
    notes.append(f"Wrote {paths['md']}, {paths['csv']}, {paths['json']}.")
    results = tables[-1].rows
    if not any(r["system"].startswith("walfs-") and r.get("median") is not None for r in results):
        notes.append("Grant-head sleeps/wakes per wake mode: no plot yet -- no walfs row ran "
                     "(build/bin/walfs, the FUSE mount, does not exist yet).")
    if args.no_plots:
        return notes
    gnuplot = facts.tool("gnuplot")
    if not gnuplot:
        notes.append("Plots skipped: gnuplot not found (Debian package gnuplot-nox).")
        return notes
    jobs = [p for p in (
        plotlib.aim_plot(results, out),
        plotlib.fio_plot(results, out, "median", "fio_iops", "fio IOPS per job (median)", "IOPS (log scale)"),
        plotlib.fio_plot(results, out, "p99_us", "fio_p99", "fio p99 completion latency per job (median of reps)",
                         "p99 latency, us (log scale)"),
        plotlib.tree_plot(results, out),
        plotlib.walfs_stats_plot(results, out)) if p]
    try:
        made = plotlib.render(host, gnuplot, jobs, out)
        notes.append("Plots: " + ", ".join(made) + ".")
    except hostlib.CommandFailed as e:
        notes.append(f"Plots failed: {e.one_line()}")
    return notes
