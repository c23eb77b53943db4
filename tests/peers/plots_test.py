"""walfs_peers.plots: what each plot's data file holds (gnuplot itself runs in
the peers_smoke test)."""

import os
import tempfile
import unittest

from walfs_peers import plots


def stat(system, metric, median):
    return {"system": system, "load": "walfs-stats", "metric": metric, "median": median}


class GrantPlotTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def dat(self):
        with open(os.path.join(self.dir.name, "walfs_grant.dat")) as f:
            return f.read().splitlines()

    def test_only_grant_counters_that_moved_are_plotted(self):
        rows = [stat("walfs-inline-minlog", "reserve_sleeps", 5291),
                stat("walfs-inline-minlog", "reserve_duplicate_wakes", 54419),
                stat("walfs-inline-minlog", "write_sleeps", 0),
                stat("walfs-inline-minlog", "reader_wakeups", 12),       # the tracer's
                stat("walfs-wakeq", "reserve_sleeps", 0),
                stat("walfs-wakeq", "reserve_duplicate_wakes", 0)]
        png, gp = plots.walfs_stats_plot(rows, self.dir.name)
        self.assertTrue(png.endswith("walfs_grant.png"))
        lines = self.dat()
        self.assertEqual(lines[0], "# system reserve_sleeps reserve_duplicate_wakes")
        self.assertEqual(lines[1:], ["walfs-inline-minlog 5291 54419", "walfs-wakeq 0 0"])
        self.assertIn("using 3:xtic(1)", gp)
        self.assertNotIn("using 4:", gp)

    def test_no_plot_when_no_head_ever_slept(self):
        rows = [stat("walfs-wakeq", "reserve_sleeps", 0), stat("walfs-wakeq", "reader_sleeps", 3)]
        self.assertIsNone(plots.walfs_stats_plot(rows, self.dir.name))


class AimPlotTest(unittest.TestCase):
    def test_one_data_block_per_system_sorted_by_users(self):
        with tempfile.TemporaryDirectory() as d:
            rows = [{"load": "aim-fserver", "system": "xfs", "users": 6, "median": 80000, "min": 79000, "max": 81000},
                    {"load": "aim-fserver", "system": "xfs", "users": 1, "median": 9000, "min": 8000, "max": 9500},
                    {"load": "aim-fserver", "system": "walfs-wakeq", "users": 1, "median": 1100, "min": None, "max": None}]
            png, gp = plots.aim_plot(rows, d)
            with open(os.path.join(d, "aim.dat")) as f:
                text = f.read()
        self.assertEqual(text, "# xfs\n1 9000 8000 9500\n6 80000 79000 81000\n\n\n# walfs-wakeq\n1 1100 - -\n\n\n")
        self.assertIn("index 1", gp)
        # 80,000 against 1,100: a linear axis would squash walfs flat.
        self.assertIn("set logscale y", gp)
        self.assertIn("jobs/min (log scale)", gp)

    def test_a_linear_axis_from_zero_when_the_systems_are_close(self):
        with tempfile.TemporaryDirectory() as d:
            rows = [{"load": "aim-fserver", "system": "a", "users": 1, "median": 1000, "min": 900, "max": 1100},
                    {"load": "aim-fserver", "system": "b", "users": 1, "median": 3000, "min": 2900, "max": 3100}]
            _, gp = plots.aim_plot(rows, d)
        self.assertNotIn("logscale", gp)
        self.assertIn("set yrange [0:*]", gp)


class BarsPlotTest(unittest.TestCase):
    def rows(self, jobs):
        return [{"load": "fio:" + j, "system": s, "engine": "psync", "median": 100.0}
                for j in jobs for s in ("a", "b", "c")]

    def test_many_clusters_widen_the_plot_and_long_labels_deepen_its_margin(self):
        with tempfile.TemporaryDirectory() as d:
            _, few = plots.fio_plot(self.rows(["x", "y"]), d, "median", "f", "t", "IOPS")
            many_jobs = [f"randwrite-4k-fsync-4j-{i}" for i in range(24)]
            _, many = plots.fio_plot(self.rows(many_jobs), d, "median", "f", "t", "IOPS")
        self.assertIn("size 1100,", few)
        width = int(many.split("size ")[1].split(",")[0])
        self.assertGreater(width, 1100)
        self.assertIn("rotate by 45 right", many)
        self.assertGreater(int(many.split("set bmargin ")[1].split("\n")[0]),
                           int(few.split("set bmargin ")[1].split("\n")[0]))


if __name__ == "__main__":
    unittest.main()
