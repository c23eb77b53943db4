"""Aggregation of repeated measurements: median and min-max spread."""

import statistics


def summarize(values):
    """Returns {median, min, max, spread_pct, n} of the numbers in values.

    None entries (a repetition that produced no number) are ignored; with no
    number left every field is None and n is 0.  spread_pct is
    (max - min) / median * 100, None when the median is 0.
    """
    nums = [float(v) for v in values if v is not None]
    if not nums:
        return {"median": None, "min": None, "max": None, "spread_pct": None, "n": 0}
    med = statistics.median(nums)
    lo, hi = min(nums), max(nums)
    spread = (hi - lo) / med * 100.0 if med else None
    return {"median": med, "min": lo, "max": hi, "spread_pct": spread, "n": len(nums)}


def median_or_none(values):
    nums = [float(v) for v in values if v is not None]
    return statistics.median(nums) if nums else None
