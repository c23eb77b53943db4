"""walfs_peers.churn and walfs_peers.dbench: their commands, their output
parsed, and the command line's checks of their options."""

import contextlib
import io
import json
import unittest

from walfs_peers import churn, dbench, main

DBENCH_OUT = """dbench version 4.00 - Copyright Andrew Tridgell 1999-2004

Running for 3 seconds with load '/usr/share/dbench/client.txt' and minimum warmup 0 secs
 Operation      Count    AvgLat    MaxLat
 ----------------------------------------
 NTCreateX      32959     0.014     1.436
 Flush           2309     0.002     0.086

Throughput 183.52 MB/sec  8 clients  8 procs  max_latency=12.345 ms
"""


def usage_error(argv):
    """The exit status and stderr of parse_args (None: it returned)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            main.parse_args(argv)
        except SystemExit as e:
            return e.code, err.getvalue()
    return None, err.getvalue()


class ChurnTest(unittest.TestCase):
    def test_process_counts_parse_and_are_checked(self):
        self.assertEqual(churn.parse_procs("1,8"), (1, 8))
        self.assertEqual(churn.parse_procs("4"), (4,))
        for bad in ("", "0", "1,x", "257", "1,,8"):
            with self.assertRaises(ValueError, msg=bad):
                churn.parse_procs(bad)

    def test_command_runs_every_level_in_one_call(self):
        self.assertEqual(churn.command("/b/walfs-churn", "/mnt", (1, 8), 2.5, "/o.json"),
                         ["/b/walfs-churn", "/mnt", "--procs", "1,8", "--seconds", "2.5", "--json", "/o.json"])

    def test_json_rows_give_rate_and_p99_per_level(self):
        text = json.dumps([{"processes": 1, "cycles": 10, "seconds": 1.0, "cycles_per_s": 10.5, "p50_us": 90,
                            "p99_us": 120, "max_us": 400},
                           {"processes": 8, "cycles": 80, "seconds": 1.0, "cycles_per_s": 80.0, "p50_us": 95,
                            "p99_us": 300, "max_us": 900}])
        self.assertEqual(churn.parse_json(text), [(1, 10.5, 120.0), (8, 80.0, 300.0)])

    def test_a_row_without_its_rate_is_an_error(self):
        with self.assertRaises(KeyError):
            churn.parse_json(json.dumps([{"processes": 1}]))


class DbenchTest(unittest.TestCase):
    def test_throughput_line_is_read(self):
        self.assertEqual(dbench.parse_throughput(DBENCH_OUT, 8), 183.52)

    def test_a_missing_line_other_clients_or_zero_is_an_error(self):
        with self.assertRaisesRegex(dbench.DbenchError, "no 'Throughput"):
            dbench.parse_throughput("dbench: cannot open loadfile\n", 8)
        with self.assertRaisesRegex(dbench.DbenchError, "8 clients, not 2"):
            dbench.parse_throughput(DBENCH_OUT, 2)
        with self.assertRaisesRegex(dbench.DbenchError, "warm-up"):
            dbench.parse_throughput("Throughput 0 MB/sec  2 clients  2 procs  max_latency=0.000 ms\n", 2)

    def test_runs_last_long_enough_to_measure(self):
        self.assertEqual(dbench.seconds(1), dbench.MIN_SECONDS)
        self.assertEqual(dbench.seconds(10), 10)
        self.assertEqual(dbench.command("/usr/bin/dbench", "/mnt/d", 8, 10),
                         ["/usr/bin/dbench", "-D", "/mnt/d", "-t", "10", "-c", dbench.LOADFILE, "8"])


class CommandLineTest(unittest.TestCase):
    def test_defaults_and_quick(self):
        a = main.parse_args(["--loads", "churn,dbench"])
        self.assertEqual((a.churn_procs, a.dbench_clients, a.load_seconds), (churn.PROCS, dbench.CLIENTS, 10.0))
        q = main.parse_args(["--quick", "--loads", "churn,dbench"])
        self.assertEqual((q.dbench_clients, q.load_seconds), (2, 1.0))
        r = main.parse_args(["--runtime", "500ms", "--churn-procs", "2,4"])
        self.assertEqual((r.load_seconds, r.churn_procs), (0.5, (2, 4)))

    def test_bad_values_are_usage_errors(self):
        for argv, what in ((["--churn-procs", "0"], "--churn-procs"), (["--dbench-clients", "0"], "--dbench-clients"),
                           (["--runtime", "soon"], "--runtime"), (["--runtime", "0s"], "--runtime"),
                           (["--loads", "churn,bogus"], "unknown load 'bogus'"),
                           (["--walfs-lanes", "0"], "--walfs-lanes"), (["--walfs-lanes", "65"], "--walfs-lanes")):
            code, err = usage_error(argv)
            self.assertEqual(code, main.EXIT_USAGE, argv)
            self.assertIn(what, err)


if __name__ == "__main__":
    unittest.main()
