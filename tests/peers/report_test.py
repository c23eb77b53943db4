"""walfs_peers.report: the markdown, CSV and JSON shapes every bench shares."""

import csv
import io
import json
import unittest

from walfs_peers import report


def sample_tables():
    env = report.Table("env", report.ENV_COLUMNS, [{"key": "fio", "value": "fio-3.33"}])
    res = report.Table("results", report.RESULT_COLUMNS)
    res.add(system="xfs", load="fio:randread-4k", engine="psync", direct=1, metric="IOPS",
            median=12345.678, min=12000.0, max=13000.5, spread_pct=8.1, p99_us=123.4, reps=3)
    res.add(system="walfs-inline", load="-", note="skipped: no mount | yet")
    return [env, res]


class MarkdownTest(unittest.TestCase):
    def test_header_rule_and_one_line_per_row(self):
        md = report.to_markdown(sample_tables()[1]).splitlines()
        self.assertEqual(md[0], "| " + " | ".join(report.RESULT_COLUMNS) + " |")
        self.assertEqual(md[1].count("---"), len(report.RESULT_COLUMNS))
        self.assertEqual(len(md), 4)

    def test_missing_cells_print_as_dash_and_pipes_are_escaped(self):
        md = report.to_markdown(sample_tables()[1]).splitlines()[3]
        self.assertIn("| walfs-inline | - | - |", md)
        self.assertIn("no mount \\| yet", md)

    def test_numbers_are_rounded_by_magnitude(self):
        self.assertEqual(report.format_cell(12345.678), "12,346")
        self.assertEqual(report.format_cell(123.4), "123")
        self.assertEqual(report.format_cell(12.34), "12.3")
        self.assertEqual(report.format_cell(0.01234), "0.0123")
        self.assertEqual(report.format_cell(None), "-")
        self.assertEqual(report.format_cell(7), "7")

    def test_unknown_column_is_refused(self):
        with self.assertRaises(KeyError):
            report.Table("t", ["a"]).add(b=1)


class JsonTest(unittest.TestCase):
    def test_one_object_per_row_keyed_by_columns_plus_table(self):
        rows = json.loads(report.to_json(sample_tables()))
        self.assertEqual(len(rows), 3)
        self.assertEqual(set(rows[0]), {"table", "key", "value"})
        self.assertEqual(set(rows[1]), {"table"} | set(report.RESULT_COLUMNS))
        self.assertEqual(rows[1]["table"], "results")
        self.assertEqual(rows[1]["median"], 12345.678)   # unrounded
        self.assertIsNone(rows[2]["median"])              # missing -> null


class CsvTest(unittest.TestCase):
    def test_union_of_columns_with_empty_cells(self):
        rows = list(csv.DictReader(io.StringIO(report.to_csv(sample_tables()))))
        self.assertEqual(len(rows), 3)
        header = report.to_csv(sample_tables()).splitlines()[0].split(",")
        self.assertEqual(header[:3], ["table", "key", "value"])
        self.assertEqual(header[3:], report.RESULT_COLUMNS)
        self.assertEqual(rows[0]["system"], "")
        self.assertEqual(rows[1]["engine"], "psync")
        self.assertEqual(float(rows[1]["median"]), 12345.678)


if __name__ == "__main__":
    unittest.main()
