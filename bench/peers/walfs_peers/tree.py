"""The `tree` load: extract a tar of a source tree, lstat every entry, rm -rf.

The tarball is made once per run, before any system is set up, from
--tree-source (default /usr/include; --quick /usr/include/linux) into the
run's directory on /dev/shm, so no timed phase reads the source tree or
writes the tarball and every system reads the same bytes from memory.

Each repetition on each system runs, in MNT/tree:
  tree-extract    tar -xf TARBALL -C MNT/tree
  tree-stat       find MNT/tree -printf '%s\\n': one lstat per entry
  tree-stat-cold  as root only: sync, drop the kernel's page, dentry and
                  inode caches (vm.drop_caches=3), run find --version
                  (untimed: reloads the walker itself), the same walk
  tree-rm         rm -rf MNT/tree
After every phase, untimed, the system settles (System.settle: syncfs of
the mount, and walfs's .walfs/sync) so that a kernel filesystem's deferred
writeback and journal commits, or walfs's lazy commit, are not charged to
the next phase.
Each phase's rate is the tarball's entry count over the phase's wall time,
including the start of the one process it runs (about a millisecond).  The
stat walks count the entries they saw; a count that differs from the
tarball's fails the cell.  A failed phase fails its own cell and the phases
after it in that repetition (they would measure a different tree); the tree
is then removed untimed and the run goes on.  docs/peers.md says why no
phase includes a sync.
"""

import collections
import dataclasses
import os
import shutil
import tarfile
import time

from . import host as hostlib

FULL_SOURCE = "/usr/include"
QUICK_SOURCE = "/usr/include/linux"
PHASES = ["tree-extract", "tree-stat", "tree-stat-cold", "tree-rm"]
METRIC = "entries/s"
DROP_CACHES = "/proc/sys/vm/drop_caches"


class TreeError(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class Tarball:
    path: str
    source: str
    files: int
    dirs: int
    symlinks: int
    other: int          # hard links, devices, fifos
    size: int           # bytes of the tarball

    @property
    def entries(self):
        return self.files + self.dirs + self.symlinks + self.other

    def describe(self):
        parts = [f"{self.files} files", f"{self.dirs} dirs", f"{self.symlinks} symlinks"]
        if self.other:
            parts.append(f"{self.other} other")
        return (f"{self.source}: {self.entries} entries ({', '.join(parts)}), "
                f"tar {self.size / (1 << 20):.1f} MiB")


def count_members(path):
    """(files, dirs, symlinks, other) of a tar archive."""
    files = dirs = links = other = 0
    try:
        with tarfile.open(path) as tf:
            for m in tf:
                if m.isreg():
                    files += 1
                elif m.isdir():
                    dirs += 1
                elif m.issym():
                    links += 1
                else:
                    other += 1
    except (tarfile.TarError, OSError) as e:
        raise TreeError(f"cannot read the tarball {path}: {e}") from None
    return files, dirs, links, other


def make_tarball(host, tar_bin, source, out_dir):
    """tar -cf OUT_DIR/tree.tar of source (its last component as the archive's root)."""
    if not tar_bin:
        raise TreeError("tar not found (Debian package tar)")
    source = os.path.abspath(source)
    if not os.path.isdir(source):
        hint = " (Debian package libc6-dev)" if source.startswith("/usr/include") else ""
        raise TreeError(f"{source} is not a directory{hint}; pass --tree-source DIR")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "tree.tar")
    parent, name = os.path.split(source.rstrip("/")) if source != "/" else ("/", ".")
    try:
        host.run([tar_bin, "-cf", path, "-C", parent or "/", name], timeout=1800)
    except hostlib.CommandFailed as e:
        raise TreeError(f"cannot make the tarball of {source}: {e.one_line()}") from None
    files, dirs, links, other = count_members(path)
    if files + dirs + links + other == 0:
        raise TreeError(f"the tarball of {source} is empty")
    return Tarball(path, source, files, dirs, links, other, os.path.getsize(path))


def rate(entries, seconds):
    """Entries per second, None for a phase too short to time."""
    return entries / seconds if seconds > 0 else None


def count_lines(text):
    return text.count("\n")


def can_drop_caches():
    """Root with a writable vm.drop_caches (a container may mount /proc/sys read-only)."""
    return os.geteuid() == 0 and os.access(DROP_CACHES, os.W_OK)


def drop_caches():
    """Writes dirty data back and drops the page, dentry and inode caches (root)."""
    os.sync()
    with open(DROP_CACHES, "w") as f:
        f.write("3\n")


class Phases:
    """One repetition of the tree load on one mounted system.

    settle() makes the system's deferred work happen now, untimed, after
    every phase; cold is False where the kernel's caches cannot be dropped."""

    def __init__(self, host, tarball, tools, settle, cold):
        self.host, self.tarball, self.tools = host, tarball, tools
        self.settle, self.cold = settle, cold

    def phases(self):
        return [p for p in PHASES if p != "tree-stat-cold" or self.cold]

    def run(self, mnt):
        """[(phase, entries/s or None, failure note or None)] in PHASES order.

        The first failed phase carries its reason; the phases after it are
        not run (they would measure another tree) and say so."""
        root = os.path.join(mnt, "tree")
        out, failed = [], None
        try:
            os.mkdir(root)
        except OSError as e:
            failed = (self.phases()[0], f"failed: cannot create {root}: {e.strerror}")
        for phase in self.phases():
            if failed:
                out.append((phase, None, failed[1] if phase == failed[0]
                            else f"failed: not run after {failed[0]} failed"))
                continue
            try:
                out.append((phase, self._timed(phase, root), None))
            except (hostlib.CommandFailed, TreeError, OSError) as e:
                failed = (phase, f"failed: {_short(e)}")
                out.append((phase, None, failed[1]))
        if failed:
            self._cleanup(root)
        return out

    def _timed(self, phase, root):
        n = self.tarball.entries
        if phase == "tree-extract":
            t = self._time([self.tools["tar"], "-xf", self.tarball.path, "-C", root])
        elif phase in ("tree-stat", "tree-stat-cold"):
            if phase == "tree-stat-cold":
                drop_caches()
                # The walker's binary and libraries were dropped too: load them
                # again, untimed, so the walk times the tree, not the root disk.
                self.host.run([self.tools["find"], "--version"], timeout=600)
            t, seen = self._time([self.tools["find"], root, "-mindepth", "1", "-printf", "%s\n"],
                                 lines=True)
            if seen != n:
                raise TreeError(f"the walk saw {seen} entries, the tarball has {n}")
        elif phase == "tree-rm":
            t = self._time([self.tools["rm"], "-rf", root])
            if os.path.lexists(root):
                raise TreeError(f"rm -rf left {root}")
        else:
            raise ValueError(phase)
        self.settle()
        return rate(n, t)

    def _time(self, cmd, lines=False):
        t0 = time.perf_counter()
        res = self.host.run(cmd, timeout=3600)
        t = time.perf_counter() - t0
        return (t, count_lines(res.stdout)) if lines else t

    def _cleanup(self, root):
        self.host.run([self.tools["rm"], "-rf", root], check=False, timeout=3600)
        shutil.rmtree(root, ignore_errors=True)


def command_error(e):
    """The first error of tar, find or rm, how many more there were, and the
    most frequent reason when that is another one.

    Their last stderr line is a summary ("Exiting with failure status due to
    previous errors"); the first names an entry and an errno, but when a
    daemon runs out of descriptors the first may be EBADF and the next
    thousands EMFILE."""
    lines = [l.strip() for l in e.stderr.splitlines()
             if l.strip() and "Exiting with failure status" not in l]
    if not lines:
        return e.one_line()
    if len(lines) == 1:
        return lines[0]
    reasons = collections.Counter(l.rsplit(": ", 1)[-1] for l in lines)
    top, n = reasons.most_common(1)[0]
    most = f"; {n} of them: {top}" if top != lines[0].rsplit(": ", 1)[-1] else ""
    return f"{lines[0]} (and {len(lines) - 1} more error{'s' if len(lines) > 2 else ''}{most})"


def _short(e):
    if isinstance(e, hostlib.CommandFailed):
        return command_error(e)
    if isinstance(e, OSError) and e.strerror:
        return f"{e.filename}: {e.strerror}" if e.filename else e.strerror
    return str(e).splitlines()[0] if str(e) else type(e).__name__
