"""The filesystems under test: how each is made, mounted and torn down.

A System answers skip_reason(facts) without touching the machine (so the
reasons are unit-tested), then setup(ctx) makes its image or directory,
mounts it and returns the mount point, recording the exact commands and the
mount options the kernel reports; teardown() undoes every step that was done,
in reverse, and is safe to call twice.  Images and mount points live in the
run directory (ctx.run_dir), on tmpfs unless --disk moved it.
"""

import contextlib
import os
import re

from . import host as hostlib

TOOLS = ["mkfs.xfs", "mkfs.ext4", "fuse2fs", "fusermount3", "losetup", "mount", "umount",
         "fio", "gnuplot", "walfs-aim", "mkfs.walfs", "walfs", "walfs-bench-passthrough-ll",
         "tar", "find", "rm", "sync", "walfs-churn", "dbench", "walfs-bench-passthrough-hp"]
WAKE_MODES = ["inline", "waking", "wakeq"]
PASSTHROUGH_BIN = "walfs-bench-passthrough-ll"
PASSTHROUGH_HP_BIN = "walfs-bench-passthrough-hp"

# mkfs.xfs (xfsprogs >= 5.19) refuses logs under 64 MiB on the command line;
# the format and the kernel accept down to the geometry's minimum, which
# mkfs allows when fstests' three variables are set (xfs_mkfs.c).
XFS_TINY_LOG_ENV = {"TEST_DIR": "1", "TEST_DEV": "1", "QA_CHECK_FS": "1"}


def parse_size(text):
    m = re.fullmatch(r"(\d+)([kmgt]?)", text.strip().lower())
    if not m:
        raise ValueError(f"bad size {text!r} (use 512m, 2g, ...)")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}[m.group(2)]


class Ctx:
    def __init__(self, host, facts, run_dir, image_size, log, walfs_threads=None, walfs_lanes=None):
        self.host, self.facts, self.run_dir = host, facts, run_dir
        self.image_size, self.log = image_size, log
        self.walfs_threads = walfs_threads   # FUSE worker threads of the walfs mounts (None: libfuse's)
        self.walfs_lanes = walfs_lanes       # lanes per ring queue of the walfs-*-uring mounts (None: walfs's)


class SetupError(Exception):
    pass


class System:
    name = "?"
    summary = ""
    fuse = False

    def __init__(self):
        self._stack = contextlib.ExitStack()
        self.info = {}
        self.mnt = None

    def skip_reason(self, facts):
        return None

    def setup(self, ctx):
        self.info = {"image": None, "mkfs": None, "mount": None, "mount_options": None}
        self._stack = contextlib.ExitStack()
        try:
            self.mnt = self._mkdir(ctx, "mnt", self.name)
            self._setup(ctx)
            entry = hostlib.mount_entry(self.mnt)
            if entry:
                self.info["mount_options"] = f"{entry[2]} {entry[3]}"
            return self.mnt
        except BaseException:
            self.teardown()
            raise

    def teardown(self):
        stack, self._stack = self._stack, contextlib.ExitStack()
        stack.close()

    def walfs_stats(self):
        return None

    def failure_hint(self, note):
        """What this system adds to a failed cell's note ('' for nothing)."""
        return ""

    def settle(self, host):
        """Makes the deferred work of what was just done happen now (untimed).

        syncfs (`sync -f`) writes back a kernel filesystem's dirty pages and
        commits its journal; on a FUSE mount it writes back the kernel's dirty
        pages but never reaches the daemon (libfuse 3.14 has no FUSE_SYNCFS)."""
        host.run(["sync", "-f", self.mnt], timeout=600)

    # helpers for subclasses ---------------------------------------------------
    def _setup(self, ctx):
        raise NotImplementedError

    def _mkdir(self, ctx, *parts):
        path = os.path.join(ctx.run_dir, *parts)
        os.makedirs(path, exist_ok=True)
        return path

    def _image(self, ctx):
        d = self._mkdir(ctx, "img")
        path = os.path.join(d, self.name + ".img")
        with open(path, "wb") as f:
            f.truncate(ctx.image_size)      # sparse
        self._stack.callback(_unlink, path)
        self.info["image"] = f"{path} ({ctx.image_size >> 20} MiB sparse)"
        return path

    def _run(self, ctx, cmd, env=None, record=None):
        try:
            res = ctx.host.run(cmd, env=env, timeout=120)
        except hostlib.CommandFailed as e:
            raise SetupError(e.one_line()) from None
        if record:
            prefix = " ".join(f"{k}={v}" for k, v in (env or {}).items())
            self.info[record] = (prefix + " " if prefix else "") + " ".join(cmd)
        return res

    def _mount_kernel(self, ctx, fstype, source, options=None):
        cmd = ["mount", "-t", fstype] + (["-o", options] if options else []) + [source, self.mnt]
        self._run(ctx, cmd, record="mount")
        self._stack.callback(hostlib.unmount, ctx.host, self.mnt)

    def _spawn_fuse(self, ctx, cmd, nofile=None):
        errlog = os.path.join(ctx.run_dir, self.name + ".daemon.log")
        proc = ctx.host.spawn(cmd, errlog, nofile=nofile)
        self.info["mount"] = " ".join(cmd) + (f" (RLIMIT_NOFILE {nofile})" if nofile else "")

        def stop():
            hostlib.unmount(ctx.host, self.mnt, fuse=True)
            try:
                proc.wait(timeout=10)
            except Exception:
                pass
            ctx.host.stop(proc)
        self._stack.callback(stop)
        try:
            hostlib.wait_for_mount(self.mnt, proc)
        except RuntimeError as e:
            with open(errlog) as f:
                lines = [l.strip() for l in f if l.strip()]
            raise SetupError(f"{os.path.basename(cmd[0])} {e}" + (f": {lines[-1]}" if lines else "")) from None
        return proc


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _loop_reason(facts):
    if not facts.is_root:
        return "needs root (loop device and mount)"
    if not facts.has_loop_control:
        return "no /dev/loop-control (no loop device support)"
    if not facts.tool("losetup"):
        return "losetup not found (Debian package mount)"
    return None


def _fuse_reason(facts):
    if not facts.has_fuse:
        return "no usable /dev/fuse"
    if not facts.is_root and not facts.tool("fusermount3"):
        return "fusermount3 not found (Debian package fuse3)"
    return None


class Tmpfs(System):
    name = "tmpfs"
    summary = "tmpfs (memory only: the floor of software cost)"

    def _setup(self, ctx):
        if ctx.facts.is_root:
            self._mount_kernel(ctx, "tmpfs", "walfs-peers", f"size={ctx.image_size},mode=0755")
        else:
            # Without root a fresh tmpfs cannot be mounted: use a directory on /dev/shm.
            d = os.path.join("/dev/shm", f"{hostlib.RUN_PREFIX}{os.getpid()}", "tmpfs")
            os.makedirs(d, exist_ok=True)
            self.mnt = d
            self.info["mount"] = f"(not root) directory {d} on /dev/shm"
            self.info["mount_options"] = "see /dev/shm"
            entry = hostlib.mount_entry("/dev/shm")
            if entry:
                self.info["mount_options"] = f"{entry[2]} {entry[3]} (/dev/shm)"


class KernelLoop(System):
    """A kernel filesystem on a loop device over an image file."""

    def __init__(self, name, fstype, mkfs, summary, mkfs_args=(), tiny_xfs_log=False):
        super().__init__()
        self.name, self.fstype, self.mkfs = name, fstype, mkfs
        self.summary, self.mkfs_args, self.tiny_xfs_log = summary, list(mkfs_args), tiny_xfs_log

    def skip_reason(self, facts):
        r = _loop_reason(facts)
        if r:
            return r
        if not facts.tool(self.mkfs):
            pkg = "xfsprogs" if "xfs" in self.mkfs else "e2fsprogs"
            return f"{self.mkfs} not found (Debian package {pkg})"
        return None

    def _setup(self, ctx):
        img = self._image(ctx)
        args, env = list(self.mkfs_args), None
        if self.tiny_xfs_log:
            env = XFS_TINY_LOG_ENV
            args += ["-l", f"size={xfs_min_log_blocks(ctx, img)}b"]
        self._run(ctx, [self.mkfs] + args + [img], env=env, record="mkfs")
        try:
            dev = hostlib.attach_loop(ctx.host, img)
        except hostlib.CommandFailed as e:
            raise SetupError(e.one_line()) from None
        self._stack.callback(hostlib.detach_loop, ctx.host, dev)
        self.info["image"] += f" on {dev}"
        self._mount_kernel(ctx, self.fstype, dev)


def parse_xfs_min_log(text):
    m = re.search(r"minimum size is (\d+) blocks", text)
    return int(m.group(1)) if m else None


def xfs_min_log_blocks(ctx, img):
    """The smallest internal log mkfs.xfs makes for this geometry, in blocks."""
    res = ctx.host.run(["mkfs.xfs", "-N", "-f", "-l", "size=512b", img],
                       env=XFS_TINY_LOG_ENV, check=False, timeout=60)
    blocks = parse_xfs_min_log(res.stdout + res.stderr)
    if blocks is None:
        raise SetupError("mkfs.xfs did not report its minimum log size")
    return blocks


class Fuse2fs(System):
    name = "fuse2fs"
    summary = "ext4 image served by fuse2fs (e2fsprogs' FUSE driver; no journalling)"
    fuse = True

    def skip_reason(self, facts):
        r = _fuse_reason(facts)
        if r:
            return r
        if not facts.tool("fuse2fs"):
            return "fuse2fs not found (Debian package fuse2fs)"
        if not facts.tool("mkfs.ext4"):
            return "mkfs.ext4 not found (Debian package e2fsprogs)"
        return None

    def _setup(self, ctx):
        img = self._image(ctx)
        self._run(ctx, ["mkfs.ext4", "-q", "-F", img], record="mkfs")
        self._spawn_fuse(ctx, [ctx.facts.tool("fuse2fs"), img, self.mnt, "-f"])


class Passthrough(System):
    name = "passthrough"
    summary = "libfuse's example/passthrough_ll.c (3.14) over a directory on the image filesystem"
    fuse = True
    nofile = None   # its RLIMIT_NOFILE, set at setup

    def skip_reason(self, facts):
        r = _fuse_reason(facts)
        if r:
            return r
        if not facts.tool(PASSTHROUGH_BIN):
            return (f"{PASSTHROUGH_BIN} not built: CMake found no passthrough_ll.c "
                    "(libfuse3-dev's examples) and fuse3 when it ran")
        return None

    def _setup(self, ctx):
        src = self._mkdir(ctx, "passthrough.src")
        self._stack.callback(_rmtree, src)
        self.info["image"] = f"directory {src}"
        # passthrough_ll keeps an O_PATH descriptor open for every inode the
        # kernel holds a lookup on, and does not raise its own limit: under
        # the usual 1024 (or this run's limit) a tree of /usr/include fails
        # with EMFILE, so it gets the most the kernel allows.
        self.nofile = hostlib.max_nofile()
        self._spawn_fuse(ctx, [ctx.facts.tool(PASSTHROUGH_BIN), "-f", "-o", f"source={src}", self.mnt],
                         nofile=self.nofile)

    def failure_hint(self, note):
        if "Too many open files" not in note:
            return ""
        return (f"; passthrough_ll holds a descriptor per inode the kernel caches and may open "
                f"{self.nofile} (the hard RLIMIT_NOFILE; above it needs CAP_SYS_RESOURCE)")


class PassthroughHp(System):
    """libfuse 3.18's example/passthrough_hp (scripts/build-passthrough-hp.sh
    builds it from Debian's fuse3 source package): over /dev/fuse, or over
    the kernel's FUSE-over-io_uring rings with libfuse's own ring code (`-o
    io_uring`: a queue and a pinned thread per CPU).  Its defaults, as the
    issue measured it: kernel passthrough of reads and writes to the source
    files (FUSE_PASSTHROUGH), a day's attribute and entry timeouts, no
    writeback cache."""
    fuse = True

    def __init__(self, transport="dev"):
        super().__init__()
        self.transport = transport
        self.name = "passthrough-hp" + ("-uring" if transport == "uring" else "")
        self.summary = ("libfuse 3.18's example/passthrough_hp over a directory on the image filesystem, "
                        + ("over the io_uring rings (-o io_uring)" if transport == "uring" else "over /dev/fuse"))

    def skip_reason(self, facts):
        r = _fuse_reason(facts)
        if r:
            return r
        if not facts.tool(PASSTHROUGH_HP_BIN):
            return (f"{PASSTHROUGH_HP_BIN} not built: scripts/build-passthrough-hp.sh builds it "
                    "(libfuse 3.18 from Debian's fuse3 source package)")
        if not facts.is_root:
            return "needs root (passthrough_hp's kernel passthrough of reads and writes needs CAP_SYS_ADMIN)"
        if self.transport == "uring":
            return fuse_uring_reason(facts)
        return None

    def _setup(self, ctx):
        src = self._mkdir(ctx, self.name + ".src")
        self._stack.callback(_rmtree, src)
        self.info["image"] = f"directory {src}"
        cmd = [ctx.facts.tool(PASSTHROUGH_HP_BIN), "--foreground"]
        if self.transport == "uring":
            cmd += ["-o", "io_uring"]
        proc = self._spawn_fuse(ctx, cmd + [src, self.mnt], nofile=hostlib.max_nofile())
        # libfuse 3.18 serves /dev/fuse, silently, when the kernel's INIT
        # does not offer the rings: that row would measure the wrong thing.
        # A stat returns once INIT is answered, and libfuse makes its rings before it answers.
        os.stat(self.mnt)
        rings = count_io_uring_fds(proc.pid)
        if self.transport == "uring" and not rings:
            raise SetupError("asked for -o io_uring, the daemon holds no io_uring: libfuse served /dev/fuse "
                             f"(see {self.name}.daemon.log)")
        if self.transport == "uring":
            self.info["mount"] += f" ({rings} io_uring rings)"


def count_io_uring_fds(pid):
    """How many io_uring instances process pid holds open (0 when it cannot be read)."""
    n = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[io_uring]":
                    n += 1
            except OSError:
                pass
    except OSError:
        pass
    return n


def _rmtree(path):
    import shutil
    shutil.rmtree(path, ignore_errors=True)


TRANSPORTS = ["dev", "uring"]


def fuse_uring_reason(facts):
    """Why walfs cannot be served through the FUSE-over-io_uring rings here (None: it can)."""
    if facts.fuse_uring is None:
        return "this kernel has no FUSE over io_uring (Linux 6.14 or later, CONFIG_FUSE_IO_URING)"
    if not facts.fuse_uring:
        return ("the fuse module's enable_uring is off (--enable-uring, as root, turns it on "
                "for the run; or echo Y > /sys/module/fuse/parameters/enable_uring)")
    return None


class Walfs(System):
    """walfs through its FUSE mount: one wake mode, a small or the default
    log, requests carried over /dev/fuse (`dev`) or the io_uring rings."""
    fuse = True

    def __init__(self, mode, small_log, transport="dev"):
        super().__init__()
        self.mode, self.small_log, self.transport = mode, small_log, transport
        self.name = (f"walfs-{mode}" + ("-minlog" if small_log else "")
                     + ("-uring" if transport == "uring" else ""))
        self.summary = (f"walfs, wake mode {mode}, "
                        + ("the smallest log mkfs.walfs accepts" if small_log else "the default log")
                        + (", over the io_uring rings" if transport == "uring" else ", over /dev/fuse"))

    def skip_reason(self, facts):
        if not facts.tool("walfs"):
            return "build/bin/walfs does not exist yet (the FUSE mount is an open issue)"
        if not facts.tool("mkfs.walfs"):
            return "mkfs.walfs not built"
        if self.transport == "uring":
            return _fuse_reason(facts) or fuse_uring_reason(facts)
        return _fuse_reason(facts)

    def _setup(self, ctx):
        img = self._image(ctx)
        mkfs = ctx.facts.tool("mkfs.walfs")
        args = []
        if self.small_log:
            res = ctx.host.run([mkfs, "-f", img, "-l", "size=4096"], check=False, timeout=60)
            least = parse_walfs_min_log(res.stdout + res.stderr)
            if least is None:
                raise SetupError("mkfs.walfs did not report its minimum log size")
            args = ["-l", f"size={least}"]
        self._run(ctx, [mkfs, "-q", "-f"] + args + [img], record="mkfs")
        options = walfs_mount_options(self.mode, ctx.walfs_threads, self.transport, ctx.walfs_lanes)
        self._spawn_fuse(ctx, [ctx.facts.tool("walfs"), img, self.mnt, "-f", "-o", options])
        # transport=uring falls back to /dev/fuse (with a warning) when the
        # kernel takes no ring entry: that row would measure the wrong thing.
        used = read_walfs_transport(os.path.join(self.mnt, ".walfs", "stats"))
        if used != self.transport:
            raise SetupError(f"asked for transport={self.transport}, the mount serves through "
                             f"{used or 'an unknown transport'} (see {self.name}.daemon.log)")

    def walfs_stats(self):
        return read_walfs_stats(os.path.join(self.mnt, ".walfs", "stats"))

    def settle(self, host):
        """syncfs, then .walfs/sync: the write returns once every change is committed."""
        super().settle(host)
        with open(os.path.join(self.mnt, ".walfs", "sync"), "w") as f:
            f.write("\n")


def walfs_mount_options(mode, threads=None, transport="dev", lanes=None):
    """walfs's -o string: the wake mode, the transport, and the FUSE worker
    threads and ring lanes when set.

    libfuse's default of at most 10 workers caps how many requests -- and so
    transactions -- are in the daemon at once; a load meant to run out of log
    space needs more (max_threads), and as many kept idle (threads).  Over
    the rings, requests are served by each CPU's lanes, not by those workers:
    there the cap is CPUs x uring_lanes."""
    options = [f"wake={mode}", f"transport={transport}"]
    if threads:
        options += [f"max_threads={threads}", f"threads={threads}"]
    if lanes and transport == "uring":
        options.append(f"uring_lanes={lanes}")
    return ",".join(options)


def read_walfs_transport(path):
    """The `fuse_transport` word of walfs's stats file (None if absent)."""
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and parts[0].rstrip(":") == "fuse_transport":
                    return parts[1]
    except OSError:
        pass
    return None


def parse_walfs_min_log(text, block=4096):
    m = re.search(r"at least (\d+) bytes", text)
    if not m:
        return None
    return -(-int(m.group(1)) // block) * block


def read_walfs_stats(path):
    """'name value' or 'name: value' lines of walfs's stats file -> {name: number}."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    stats = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\w./-]+)\s*[:=]?\s+(-?\d+(?:\.\d+)?)\s*$", line)
        if m:
            stats[m.group(1)] = float(m.group(2))
    return stats


def all_systems():
    systems = [
        Tmpfs(),
        KernelLoop("ext4", "ext4", "mkfs.ext4", "kernel ext4 on a loop device (default journal)",
                   mkfs_args=["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"]),
        KernelLoop("xfs", "xfs", "mkfs.xfs", "kernel XFS on a loop device, default log",
                   mkfs_args=["-q", "-f"]),
        KernelLoop("xfs-minlog", "xfs", "mkfs.xfs",
                   "kernel XFS on a loop device, the smallest log mkfs.xfs makes",
                   mkfs_args=["-q", "-f"], tiny_xfs_log=True),
        Fuse2fs(),
        Passthrough(),
    ]
    systems += [PassthroughHp(transport) for transport in TRANSPORTS]
    for transport in TRANSPORTS:
        for small in (True, False):
            for mode in WAKE_MODES:
                systems.append(Walfs(mode, small, transport))
    return systems
