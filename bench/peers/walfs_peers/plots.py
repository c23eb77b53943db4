"""PNG plots of the results table with gnuplot (Debian: gnuplot-nox).

Each plot gets a .dat file beside it (whitespace separated, '-' missing) and
a .gp script, so a plot can be redrawn or restyled by hand.
"""

import os

_HEAD = 'set terminal pngcairo size 1100,650 noenhanced font ",10"\nset datafile missing "-"\nset key outside right top\nset grid ytics\n'
# Systems an order of magnitude apart (tmpfs and fuse2fs beside walfs) make a
# linear axis useless for the ones between: above this ratio of the largest
# to the smallest value, the y axis is logarithmic.
LOG_RATIO = 20


def _head(width=1100, height=650):
    return _HEAD.replace("size 1100,650", f"size {width},{height}")


def _y_axis(values, ylabel):
    """The y axis commands for these values: log scale when they span more than LOG_RATIO."""
    vals = [v for v in values if v is not None and v > 0]
    if vals and max(vals) / min(vals) > LOG_RATIO:
        return f"set logscale y\nset ylabel {_q(ylabel + ' (log scale)')}\n"
    return f"set ylabel {_q(ylabel)}\nset yrange [0:*]\n"


def _q(s):
    return '"' + str(s).replace('"', "'") + '"'


def _fmt(v):
    return "-" if v is None else f"{v:.6g}"


def aim_plot(rows, out_dir):
    """jobs/min vs users, one line per system.  Returns (png, script) or None."""
    data = {}
    for r in rows:
        if r.get("load") == "aim-fserver" and r.get("median") is not None:
            data.setdefault(r["system"], []).append((r["users"], r["median"], r["min"], r["max"]))
    if not data:
        return None
    dat = os.path.join(out_dir, "aim.dat")
    with open(dat, "w") as f:
        for system, pts in data.items():
            f.write(f"# {system}\n")
            for u, med, lo, hi in sorted(pts):
                f.write(f"{u} {_fmt(med)} {_fmt(lo)} {_fmt(hi)}\n")
            f.write("\n\n")
    png = os.path.join(out_dir, "aim.png")
    plots = ", ".join(
        f"{_q(dat)} index {i} using 1:2:3:4 with yerrorlines title {_q(s)}"
        for i, s in enumerate(data))
    gp = (_HEAD + f"set output {_q(png)}\nset title 'walfs-aim fserver: jobs/min vs users (median, min-max bars)'\n"
          "set xlabel 'users'\n" + _y_axis([p[1] for pts in data.values() for p in pts], "jobs/min") +
          f"plot {plots}\n")
    return png, gp


def fio_plot(rows, out_dir, value, name, title, ylabel):
    """Clustered bars: one cluster per fio job (and engine), one bar per system."""
    cells, labels, systems = {}, [], []
    for r in rows:
        if r.get("load", "").startswith("fio:") and r.get(value) is not None:
            label = r["load"][4:] + ("/" + r["engine"] if r.get("engine") not in (None, "-", "psync") else "")
            _put(cells, labels, systems, label, r["system"], r[value])
    return _bars(out_dir, name, title, ylabel, labels, systems, cells)


def tree_plot(rows, out_dir):
    """Clustered bars: one cluster per tree phase, one bar per system (entries/s, log scale)."""
    cells, labels, systems = {}, [], []
    for r in rows:
        if r.get("load", "").startswith("tree-") and r.get("median") is not None:
            _put(cells, labels, systems, r["load"][5:], r["system"], r["median"])
    return _bars(out_dir, "tree", "tree load: entries per second per phase (median)",
                 "entries/s (log scale)", labels, systems, cells)


def _put(cells, labels, systems, label, system, value):
    if label not in labels:
        labels.append(label)
    if system not in systems:
        systems.append(system)
    cells[(label, system)] = value


def _bars(out_dir, name, title, ylabel, labels, systems, cells):
    """NAME.dat (a row per label, a column per system) and its gnuplot script, or None."""
    if not cells:
        return None
    dat = os.path.join(out_dir, name + ".dat")
    with open(dat, "w") as f:
        f.write("# label " + " ".join(systems) + "\n")
        for label in labels:
            f.write(label + " " + " ".join(_fmt(cells.get((label, s))) for s in systems) + "\n")
    png = os.path.join(out_dir, name + ".png")
    cols = ", ".join(
        f"{_q(dat)} using {i + 2}:xtic(1) title {_q(s)}" for i, s in enumerate(systems))
    # Room for every cluster and its label: wider with more clusters, and
    # labels at 45 degrees ending under their cluster, the margin as deep
    # as the longest one needs.
    width = max(1100, 300 + len(labels) * (12 * len(systems) + 24))
    longest = max(len(label) for label in labels)
    gp = (_head(width, 650 + 4 * longest) + f"set output {_q(png)}\nset title {_q(title)}\nset ylabel {_q(ylabel)}\n"
          "set logscale y\nset style data histograms\nset style histogram clustered gap 1\n"
          "set style fill solid 0.8 border -1\nset xtics rotate by 45 right\n"
          f"set bmargin {max(6, int(longest * 0.45) + 3)}\n"
          f"plot {cols}\n")
    return png, gp


# The grant-head counters the wake-mode comparison is about, in reading
# order; the tracer's counters in the same stats file are not plotted.
GRANT_METRICS = [f"{head}_{m}" for head in ("reserve", "write")
                 for m in ("sleeps", "wakes_issued", "duplicate_wakes", "duplicate_wakes_avoided",
                           "wake_syscalls")]


def walfs_stats_plot(rows, out_dir):
    """Grant-head sleeps and wakes per wake mode, from walfs's stats: the
    GRANT_METRICS that are not zero for every system (a head that never
    slept has nothing to show)."""
    pts = [r for r in rows if r.get("load") == "walfs-stats" and r.get("median") is not None
           and r.get("metric") in GRANT_METRICS]
    keys = [k for k in GRANT_METRICS if any(r["metric"] == k and r["median"] for r in pts)]
    if not keys:
        return None
    dat = os.path.join(out_dir, "walfs_grant.dat")
    systems, cells = [], {}
    for r in pts:
        if r["system"] not in systems:
            systems.append(r["system"])
        cells[(r["system"], r["metric"])] = r["median"]
    with open(dat, "w") as f:
        f.write("# system " + " ".join(keys) + "\n")
        for s in systems:
            f.write(s + " " + " ".join(_fmt(cells.get((s, k))) for k in keys) + "\n")
    png = os.path.join(out_dir, "walfs_grant.png")
    cols = ", ".join(f"{_q(dat)} using {i + 2}:xtic(1) title {_q(k)}" for i, k in enumerate(keys))
    gp = (_HEAD + f"set output {_q(png)}\nset title 'walfs grant-head sleeps and wakes per wake mode (aim run, medians)'\n"
          "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
          f"set yrange [0:*]\nplot {cols}\n")
    return png, gp


def render(host, gnuplot, jobs, out_dir):
    """Writes each (png, script) with gnuplot; returns the PNGs made."""
    made = []
    for png, gp in jobs:
        script = os.path.splitext(png)[0] + ".gp"
        with open(script, "w") as f:
            f.write(gp)
        host.run([gnuplot, script], timeout=60)
        made.append(png)
    return made
