"""The run's tables and their three renderings.

A Table is a name, an ordered list of columns and rows (dicts keyed by those
columns; a missing key or None prints as "-").  Every benchmark of the
project writes the same shapes (bench/common/report.cc, trace_bench):
  markdown  one pipe table per Table, numbers rounded for reading;
  JSON      one array, one object per row keyed by the column names plus
            "table" (the Table's name), unrounded, None as null;
  CSV       one file, a header with "table" and the union of all columns in
            first-seen order, an empty cell where a row lacks a column.
"""

import csv
import io
import json
import math

RESULT_COLUMNS = [
    "system", "load", "engine", "direct", "users", "metric",
    "median", "min", "max", "spread_pct", "p99_us", "fsync_p99_us", "reps", "note",
]
SYSTEM_COLUMNS = ["system", "status", "image", "mkfs", "mount", "mount_options", "engines", "note"]
ENV_COLUMNS = ["key", "value"]


class Table:
    def __init__(self, name, columns, rows=None):
        self.name = name
        self.columns = list(columns)
        self.rows = list(rows or [])

    def add(self, **row):
        unknown = set(row) - set(self.columns)
        if unknown:
            raise KeyError(f"table {self.name}: unknown columns {sorted(unknown)}")
        self.rows.append(row)
        return row


def format_cell(value):
    """A cell as markdown shows it: '-' for missing, floats rounded by size."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        mag = abs(value)
        if mag >= 1000:
            return f"{value:,.0f}"
        if mag >= 100:
            return f"{value:.0f}"
        if mag >= 10:
            return f"{value:.1f}"
        if mag == 0:
            return "0"
        return f"{value:.3g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def to_markdown(table):
    out = io.StringIO()
    out.write("| " + " | ".join(table.columns) + " |\n")
    out.write("|" + "|".join(" --- " for _ in table.columns) + "|\n")
    for row in table.rows:
        out.write("| " + " | ".join(format_cell(row.get(c)) for c in table.columns) + " |\n")
    return out.getvalue()


def json_rows(tables):
    rows = []
    for t in tables:
        for r in t.rows:
            obj = {"table": t.name}
            for c in t.columns:
                v = r.get(c)
                if isinstance(v, float) and math.isnan(v):
                    v = None
                obj[c] = None if v == "" else v
            rows.append(obj)
    return rows


def to_json(tables):
    return json.dumps(json_rows(tables), indent=2) + "\n"


def to_csv(tables):
    columns = ["table"]
    for t in tables:
        for c in t.columns:
            if c not in columns:
                columns.append(c)
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    for obj in json_rows(tables):
        w.writerow({k: ("" if v is None else v) for k, v in obj.items()})
    return out.getvalue()
