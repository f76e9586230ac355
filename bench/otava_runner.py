"""Runs inside Otava's own virtual environment (bench/changes_otava.py), never perfbot's.

Reads ``{"series": [[value, ...], ...], "prefixes": [[series, length], ...]}`` on standard
input and writes ``{"batch": [[index, ...], ...], "prefix": [[index, ...], ...],
"seconds": [...]}``: the change points Otava finds in each series, and in each prefix of
one, with its documented defaults (``AnalysisOptions()``: window 50, p-value 0.001,
magnitude 0, windowed E-divisive with a t test), one value per commit. ``seconds`` is the
time of each whole-series analysis, this process's start excluded.
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
import time
from typing import Any


def change_points(values: list[float]) -> list[int]:
    series_module: Any = importlib.import_module("otava.series")
    series = series_module.Series(
        "bench",
        None,
        list(range(len(values))),
        {"value": series_module.Metric(1, 1.0)},
        {"value": list(values)},
        {},
    )
    analysed = series.analyze(series_module.AnalysisOptions())
    return sorted(int(point.index) for point in analysed.change_points["value"])


def main() -> None:
    logging.disable(logging.CRITICAL)  # Otava logs every series it analyses
    request = json.load(sys.stdin)
    batch, seconds = [], []
    for values in request["series"]:
        started = time.perf_counter()
        batch.append(change_points(values))
        seconds.append(time.perf_counter() - started)
    prefix = [change_points(request["series"][s][:length]) for s, length in request["prefixes"]]
    json.dump({"batch": batch, "prefix": prefix, "seconds": seconds}, sys.stdout)


if __name__ == "__main__":
    main()
