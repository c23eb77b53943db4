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


if __name__ == "__main__":
    unittest.main()
