"""walfs_peers.tree: the tarball and its counts, rates, and the phases on a
plain directory -- including each way a phase fails (a cell fails, the run
goes on, the tree is removed)."""

import io
import os
import shutil
import tarfile
import tempfile
import unittest
import unittest.mock

from walfs_peers import host, main, plots, systems, tree

TOOLS = {t: shutil.which(t) for t in ("tar", "find", "rm")}


def small_tree(top):
    """src/: 2 files, a directory, a symlink and a hard link: 6 entries with src/ itself."""
    src = os.path.join(top, "src")
    os.makedirs(os.path.join(src, "sub"))
    for name in ("a.h", "sub/b.h"):
        with open(os.path.join(src, name), "w") as f:
            f.write("#define X 1\n")
    os.symlink("a.h", os.path.join(src, "l.h"))
    os.link(os.path.join(src, "a.h"), os.path.join(src, "hard.h"))
    return src


class TarballTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_counts_every_kind_of_entry_with_the_root_directory(self):
        tb = tree.make_tarball(host.Host(), TOOLS["tar"], small_tree(self.dir), os.path.join(self.dir, "out"))
        # GNU tar stores the second name of a hard link as a link member.
        self.assertEqual((tb.files, tb.dirs, tb.symlinks, tb.other), (2, 2, 1, 1))
        self.assertEqual(tb.entries, 6)
        self.assertIn("6 entries (2 files, 2 dirs, 1 symlinks, 1 other)", tb.describe())

    def test_missing_tar_names_the_package(self):
        with self.assertRaisesRegex(tree.TreeError, r"tar not found \(Debian package tar\)"):
            tree.make_tarball(host.Host(), None, small_tree(self.dir), self.dir)

    def test_missing_source_says_what_to_pass(self):
        with self.assertRaisesRegex(tree.TreeError, r"/usr/include/nope is not a directory "
                                                    r"\(Debian package libc6-dev\); pass --tree-source"):
            tree.make_tarball(host.Host(), TOOLS["tar"], "/usr/include/nope", self.dir)

    def test_unreadable_archive_is_a_tree_error(self):
        bad = os.path.join(self.dir, "bad.tar")
        with open(bad, "wb") as f:
            f.write(b"not a tar" * 100)
        with self.assertRaisesRegex(tree.TreeError, "cannot read the tarball"):
            tree.count_members(bad)

    def test_a_command_error_is_its_first_line_and_a_count(self):
        e = host.CommandFailed(["/usr/bin/tar"], 2, "tar: include/a.h: Cannot open: Too many open files\n"
                               "tar: include/b.h: Cannot open: Too many open files\n"
                               "tar: Exiting with failure status due to previous errors\n")
        self.assertEqual(tree.command_error(e), "tar: include/a.h: Cannot open: Too many open files "
                                                "(and 1 more error)")
        self.assertEqual(tree.command_error(host.CommandFailed(["/usr/bin/rm"], 1, "")), "rm: exit status 1")

    def test_a_command_error_names_the_most_frequent_reason_when_the_first_differs(self):
        e = host.CommandFailed(["tar"], 2, "tar: a.h: Cannot close: Bad file descriptor\n"
                               + "tar: b.h: Cannot open: Too many open files\n" * 3)
        self.assertEqual(tree.command_error(e), "tar: a.h: Cannot close: Bad file descriptor "
                                                "(and 3 more errors; 3 of them: Too many open files)")

    def test_rate_is_entries_over_seconds(self):
        self.assertEqual(tree.rate(792, 0.5), 1584.0)
        self.assertIsNone(tree.rate(792, 0.0))


class PhasesTest(unittest.TestCase):
    """The phases on a directory standing in for a mount (no drop_caches: not the test's to do)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.tb = tree.make_tarball(host.Host(), TOOLS["tar"], small_tree(self.dir),
                                    os.path.join(self.dir, "tar"))
        self.mnt = os.path.join(self.dir, "mnt")
        os.mkdir(self.mnt)
        self.settled = 0

    def tearDown(self):
        shutil.rmtree(self.dir)

    def settle(self):
        self.settled += 1

    def run_phases(self, tarball=None):
        return tree.Phases(host.Host(), tarball or self.tb, TOOLS, self.settle, cold=False).run(self.mnt)

    def test_every_phase_gives_a_rate_and_the_tree_is_gone(self):
        out = self.run_phases()
        self.assertEqual([p for p, _v, _n in out], ["tree-extract", "tree-stat", "tree-rm"])
        for phase, value, note in out:
            self.assertIsNone(note, phase)
            self.assertGreater(value, 0)
        self.assertEqual(self.settled, 3)
        self.assertEqual(os.listdir(self.mnt), [])

    def test_a_failed_extract_fails_its_cell_and_skips_the_rest(self):
        bad = os.path.join(self.dir, "bad.tar")
        with open(bad, "wb") as f:
            f.write(b"\0garbage" * 1000)
        out = self.run_phases(tree.Tarball(bad, "x", 1, 0, 0, 0, 8000))
        self.assertIsNone(out[0][1])
        self.assertRegex(out[0][2], r"^failed: \S*tar: This does not look like a tar archive")
        self.assertEqual([n for _p, _v, n in out[1:]], ["failed: not run after tree-extract failed"] * 2)
        self.assertEqual(os.listdir(self.mnt), [])      # removed, untimed

    def test_a_walk_that_sees_another_count_fails_the_stat(self):
        wrong = tree.Tarball(self.tb.path, "x", 99, 0, 0, 0, 1)
        out = self.run_phases(wrong)
        self.assertIsNone(out[0][2])
        self.assertEqual(out[1][2], "failed: the walk saw 6 entries, the tarball has 99")
        self.assertEqual(os.listdir(self.mnt), [])

    def test_an_unwritable_mount_fails_the_first_phase(self):
        os.rmdir(self.mnt)
        out = self.run_phases()
        self.assertRegex(out[0][2], r"^failed: cannot create .*/mnt/tree: No such file or directory$")

    def test_cold_walk_runs_between_stat_and_rm(self):
        phases = tree.Phases(host.Host(), self.tb, TOOLS, self.settle, cold=True)
        self.assertEqual(phases.phases(), tree.PHASES)


class LoadsOptionTest(unittest.TestCase):
    def parse(self, *argv):
        return main.parse_args(list(argv), bin_dir="/nonexistent")

    def test_tree_alone_and_with_the_others(self):
        self.assertEqual(self.parse("--loads", "tree").loads, ["tree"])
        self.assertEqual(self.parse("--loads", "aim,fio,tree").loads, ["aim", "fio", "tree"])

    def test_unknown_load_is_a_usage_error(self):
        err = io.StringIO()
        with self.assertRaises(SystemExit) as cm, unittest.mock.patch("sys.stderr", err):
            self.parse("--loads", "fio,trees")
        self.assertEqual(cm.exception.code, main.EXIT_USAGE)
        self.assertIn("unknown load 'trees' (one of aim, fio, tree, churn, dbench)", err.getvalue())

    def test_source_defaults_by_mode(self):
        self.assertEqual(self.parse().tree_source, tree.FULL_SOURCE)
        self.assertEqual(self.parse("--quick").tree_source, tree.QUICK_SOURCE)
        self.assertEqual(self.parse("--tree-source", "/srv/x").tree_source, "/srv/x")


class NoTarballTest(unittest.TestCase):
    """Without a tarball every system's tree cells fail with the reason; nothing raises."""

    def test_missing_tools_fail_the_tree_cells_of_each_system(self):
        args = main.parse_args(["--quick", "--loads", "tree"], bin_dir="/nonexistent")
        logged = []
        run = main.Run(args, "/nonexistent", "/nonexistent", logged.append)
        facts = host.HostFacts(is_root=False, has_loop_control=False, has_fuse=False,
                               filesystems=frozenset(), tools={"find": "/usr/bin/find"})
        env = run.prepare_tree(facts, "/nonexistent")
        self.assertEqual(env, [("tree", "not run: tar, rm, sync not found (Debian packages tar, "
                                        "findutils, coreutils)")])
        self.assertIn("its cells fail, the other loads run", logged[0])

        class System:
            name = "tmpfs"
        run.tree_cells(System(), "/nonexistent", facts)
        rows = run.collector.rows()
        expected = set(tree.PHASES) - (set() if run.tree_cold else {"tree-stat-cold"})
        self.assertEqual({r["load"] for r in rows}, expected)
        for r in rows:
            self.assertIsNone(r["median"])
            self.assertTrue(r["note"].startswith("failed: tree load: tar, rm, sync not found"))
        self.assertTrue(run.collector.failed())


class PassthroughHintTest(unittest.TestCase):
    def test_emfile_names_the_descriptor_limit(self):
        p = systems.Passthrough()
        p.nofile = 20000
        self.assertIn("may open 20000 (the hard RLIMIT_NOFILE",
                      p.failure_hint("failed: tar: x (and 9 more errors; 9 of them: Too many open files)"))
        self.assertEqual(p.failure_hint("failed: tar: x: No space left on device"), "")
        self.assertEqual(systems.Tmpfs().failure_hint("Too many open files"), "")


class TreePlotTest(unittest.TestCase):
    def test_one_cluster_per_phase_one_column_per_system(self):
        rows = [{"system": "xfs", "load": "tree-extract", "median": 18000.0},
                {"system": "walfs-wakeq", "load": "tree-extract", "median": 1575.0},
                {"system": "xfs", "load": "tree-stat", "median": 177876.0},
                {"system": "walfs-wakeq", "load": "tree-stat", "median": None},
                {"system": "xfs", "load": "fio:filecreate", "median": 1.0}]
        with tempfile.TemporaryDirectory() as d:
            png, gp = plots.tree_plot(rows, d)
            with open(os.path.join(d, "tree.dat")) as f:
                lines = f.read().splitlines()
        self.assertTrue(png.endswith("tree.png"))
        self.assertEqual(lines, ["# label xfs walfs-wakeq", "extract 18000 1575", "stat 177876 -"])
        self.assertIn("using 3:xtic(1)", gp)

    def test_no_tree_rows_no_plot(self):
        self.assertIsNone(plots.tree_plot([{"system": "xfs", "load": "fio:x", "median": 1.0}], "/nonexistent"))


if __name__ == "__main__":
    unittest.main()
