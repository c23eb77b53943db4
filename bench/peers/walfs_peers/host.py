"""The machine: running commands, mounts, loop devices, and what is available.

Every command the runner starts goes through Host, which starts it in its
own session and remembers it, so that ^C, SIGTERM or an exception can end
it (and its children: fio's jobs, walfs-aim's users) before the mounts under
it are torn down.  Run directories are named walfs-peers.<pid>; a mount, a
loop device or a directory of that name whose pid no longer runs walfs-peers
is a leftover of a crashed run and is removed by clean_leftovers().
"""

import dataclasses
import glob
import os
import re
import resource
import shutil
import signal
import subprocess
import time

RUN_PREFIX = "walfs-peers."
_RUN_RE = re.compile(r"/walfs-peers\.(\d+)(/|$)")


class CommandFailed(Exception):
    def __init__(self, cmd, rc, stderr):
        self.cmd, self.rc, self.stderr = cmd, rc, stderr or ""
        super().__init__(self.one_line())

    def one_line(self):
        lines = [l.strip() for l in self.stderr.splitlines() if l.strip()]
        why = lines[-1] if lines else f"exit status {self.rc}"
        return f"{os.path.basename(self.cmd[0])}: {why}"


class Host:
    def __init__(self, log=None):
        self.children = set()
        self.log = log or (lambda msg: None)

    def run(self, cmd, env=None, timeout=None, check=True, cwd=None):
        """Runs cmd to completion; returns CompletedProcess with text stdout/stderr."""
        full_env = dict(os.environ, **env) if env else None
        self.log("$ " + " ".join(cmd))
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=full_env, cwd=cwd, start_new_session=True)
        self.children.add(p)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop(p)
            out, err = p.communicate()
            raise CommandFailed(cmd, -1, (err or "") + f"\ntimed out after {timeout} s") from None
        except BaseException:
            self.stop(p)
            raise
        finally:
            if p.poll() is not None:
                self.children.discard(p)
        if check and p.returncode != 0:
            raise CommandFailed(cmd, p.returncode, err)
        return subprocess.CompletedProcess(cmd, p.returncode, out, err)

    def spawn(self, cmd, stderr_path, nofile=None):
        """Starts a long-running daemon (a FUSE server in the foreground),
        with RLIMIT_NOFILE set to nofile when given."""
        self.log("$ " + " ".join(cmd) + " &" + (f"  (RLIMIT_NOFILE {nofile})" if nofile else ""))
        limit = (lambda: _set_nofile(nofile)) if nofile else None
        with open(stderr_path, "w") as errf:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=errf, stderr=errf,
                                 start_new_session=True, preexec_fn=limit)
        self.children.add(p)
        return p

    def stop(self, p, grace=5.0):
        """Ends p's process group: SIGINT (walfs-aim and fio clean up), then SIGKILL."""
        if p.poll() is None:
            for sig, wait in ((signal.SIGINT, grace), (signal.SIGKILL, grace)):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    p.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self.children.discard(p)

    def stop_all(self):
        for p in list(self.children):
            self.stop(p)


def max_nofile():
    """The most open files a child may get: this process's hard limit, first
    raised to fs.nr_open where that is allowed (root with CAP_SYS_RESOURCE).
    The soft limit, which the other commands inherit, stays as it was."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        with open("/proc/sys/fs/nr_open") as f:
            nr_open = int(f.read())
        if nr_open > hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, nr_open))
    except (OSError, ValueError):
        pass
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


def _set_nofile(n):
    """In the child before exec: nothing may raise here (Popen would fail)."""
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    except (OSError, ValueError):
        pass


# ---- facts -------------------------------------------------------------------

@dataclasses.dataclass
class HostFacts:
    """What decides which systems can run; gather() fills it, tests fake it."""
    is_root: bool
    has_loop_control: bool
    has_fuse: bool
    filesystems: frozenset          # from /proc/filesystems (modules may add more)
    tools: dict                     # name -> path or None
    io_uring_disabled: bool = False
    # The fuse module's enable_uring: True or False, None where the kernel
    # has no FUSE over io_uring (no such parameter).
    fuse_uring: object = None

    def tool(self, name):
        return self.tools.get(name)


def gather_facts(bin_dir, tool_names):
    tools = {}
    for name in tool_names:
        local = os.path.join(bin_dir, name)
        tools[name] = local if os.access(local, os.X_OK) else shutil.which(name)
    fs = set()
    try:
        with open("/proc/filesystems") as f:
            fs = {line.split()[-1] for line in f if line.strip()}
    except OSError:
        pass
    uring_off = False
    try:
        with open("/proc/sys/kernel/io_uring_disabled") as f:
            uring_off = f.read().strip() == "2"
    except OSError:
        pass
    return HostFacts(
        fuse_uring=read_fuse_uring(),
        is_root=os.geteuid() == 0,
        has_loop_control=os.path.exists("/dev/loop-control"),
        has_fuse=os.access("/dev/fuse", os.R_OK | os.W_OK),
        filesystems=frozenset(fs),
        tools=tools,
        io_uring_disabled=uring_off,
    )


FUSE_URING_PARAM = "/sys/module/fuse/parameters/enable_uring"


def read_fuse_uring(path=FUSE_URING_PARAM):
    """The fuse module's enable_uring: True, False, or None where it does not exist."""
    try:
        with open(path) as f:
            return f.read().strip() in ("Y", "1")
    except OSError:
        return None


def set_fuse_uring(on, path=FUSE_URING_PARAM):
    """Sets enable_uring (root only); returns the value it had."""
    was = read_fuse_uring(path)
    with open(path, "w") as f:
        f.write("Y\n" if on else "N\n")
    return was


# ---- mounts and loop devices ---------------------------------------------------

def _unescape(field):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def read_mounts(path="/proc/self/mounts"):
    """[(source, target, fstype, options)] in mount order."""
    out = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4:
                out.append((_unescape(parts[0]), _unescape(parts[1]), parts[2], parts[3]))
    return out


def mount_entry(target):
    target = os.path.realpath(target)
    for entry in reversed(read_mounts()):
        if entry[1] == target:
            return entry
    return None


def wait_for_mount(target, proc=None, timeout=15.0):
    """Waits until target is a mount point; fails early if the daemon died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if mount_entry(target):
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"exited with status {proc.returncode} before mounting")
        time.sleep(0.05)
    raise RuntimeError(f"{target} not mounted after {timeout:.0f} s")


def unmount(host, target, fuse=False):
    """Unmounts target, retrying while busy; lazily as the last resort."""
    if not mount_entry(target):
        return
    cmds = [["umount", target]]
    if fuse and os.geteuid() != 0:
        cmds = [["fusermount3", "-u", target]]
    for attempt in range(10):
        for cmd in cmds:
            try:
                host.run(cmd, timeout=30)
            except Exception:
                pass
        if not mount_entry(target):
            return
        time.sleep(0.2 * (attempt + 1))
    lazy = ["fusermount3", "-uz", target] if fuse and os.geteuid() != 0 else ["umount", "-l", target]
    host.run(lazy, check=False, timeout=30)


def loop_devices():
    """[(device, backing file)] of every attached loop device."""
    out = []
    for bf in glob.glob("/sys/block/loop*/loop/backing_file"):
        dev = "/dev/" + bf.split("/")[3]
        try:
            with open(bf) as f:
                out.append((dev, f.read().strip()))
        except OSError:
            pass
    return out


def attach_loop(host, image):
    return host.run(["losetup", "--find", "--show", image], timeout=30).stdout.strip()


def detach_loop(host, device):
    for attempt in range(10):
        if all(d != device for d, _ in loop_devices()):
            return
        host.run(["losetup", "-d", device], check=False, timeout=30)
        time.sleep(0.1 * attempt)


# ---- leftovers -----------------------------------------------------------------

def run_pid(path):
    m = _RUN_RE.search(path)
    return int(m.group(1)) if m else None


def pid_is_live_run(pid):
    if pid == os.getpid():
        return True
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read().replace(b"\0", b" ")
    except OSError:
        return False
    return b"walfs-peers" in cmdline or b"walfs_peers" in cmdline


def clean_leftovers(host, bases, log):
    """Removes mounts, loop devices and run directories of dead walfs-peers runs."""
    cleaned = []
    stale = lambda p: (lambda pid: pid is not None and not pid_is_live_run(pid))(run_pid(p))
    for _src, target, fstype, _opts in sorted(read_mounts(), key=lambda m: -len(m[1])):
        if stale(target):
            unmount(host, target, fuse=fstype.startswith("fuse"))
            cleaned.append(f"unmounted {target}")
    for dev, backing in loop_devices():
        if stale(backing):
            detach_loop(host, dev)
            cleaned.append(f"detached {dev} ({backing})")
    for base in bases:
        for d in glob.glob(os.path.join(base, RUN_PREFIX + "*")):
            if stale(d + "/"):
                shutil.rmtree(d, ignore_errors=True)
                cleaned.append(f"removed {d}")
    for c in cleaned:
        log(f"walfs-peers: leftover of an earlier run: {c}")
    return cleaned


def o_direct_works(directory):
    """True if a file in directory can be opened and written with O_DIRECT."""
    import mmap
    path = os.path.join(directory, ".walfs-peers-odirect")
    try:
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | getattr(os, "O_DIRECT", 0), 0o644)
    except OSError:
        return False
    try:
        buf = mmap.mmap(-1, 4096)   # page aligned
        os.write(fd, buf)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass


def clean_leftovers_of(host, run_dir, log):
    """Last line of defence at exit: nothing of this run stays mounted or attached."""
    prefix = os.path.realpath(run_dir) + "/"
    for _src, target, fstype, _opts in sorted(read_mounts(), key=lambda m: -len(m[1])):
        if (target + "/").startswith(prefix):
            log(f"walfs-peers: unmounting {target} left by a failed teardown")
            unmount(host, target, fuse=fstype.startswith("fuse"))
    for dev, backing in loop_devices():
        if backing.startswith(prefix):
            log(f"walfs-peers: detaching {dev} left by a failed teardown")
            detach_loop(host, dev)
