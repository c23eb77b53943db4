"""walfs_peers.stats: medians and min-max spread over repetitions."""

import unittest

from walfs_peers import stats


class SummarizeTest(unittest.TestCase):
    def test_odd_count_takes_the_middle_value(self):
        s = stats.summarize([30.0, 10.0, 20.0])
        self.assertEqual((s["median"], s["min"], s["max"], s["n"]), (20.0, 10.0, 30.0, 3))
        self.assertAlmostEqual(s["spread_pct"], 100.0)

    def test_even_count_averages_the_middle_pair(self):
        self.assertEqual(stats.summarize([1, 2, 3, 10])["median"], 2.5)

    def test_failed_repetitions_are_ignored(self):
        s = stats.summarize([None, 5.0, None])
        self.assertEqual((s["median"], s["spread_pct"], s["n"]), (5.0, 0.0, 1))

    def test_no_number_gives_no_statistic(self):
        s = stats.summarize([None])
        self.assertEqual(s, {"median": None, "min": None, "max": None, "spread_pct": None, "n": 0})

    def test_zero_median_has_no_relative_spread(self):
        self.assertIsNone(stats.summarize([0, 0, 1])["spread_pct"])

    def test_median_or_none(self):
        self.assertIsNone(stats.median_or_none([None, None]))
        self.assertEqual(stats.median_or_none([4, None, 2]), 3.0)


if __name__ == "__main__":
    unittest.main()
