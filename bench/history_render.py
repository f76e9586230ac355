"""What the comment's history costs when the body is laid out (render.prepare).

A report of ``--metrics`` metrics on one platform, every other one halved, prepared for
the App's comment without a history and with one (two earlier pushes, 8 commits of main,
one chart): the budget tries the history first, then the comparison without it, so the
figure to watch is the ratio. Each figure is the best of ``--repeat`` runs.

Run: .venv/bin/python bench/history_render.py [--metrics N] [--repeat N]
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime

from perfbot.engine.judge.compare import Stats, compare
from perfbot.engine.read.sides import SideReport
from perfbot.engine.show.history import History, Push, Trend, chart_series
from perfbot.engine.show.render import Footer, RenderContext, prepare
from perfbot.model import Better, Measurement

PLATFORM = "qemu_x86"


def side(values: dict[str, float]) -> SideReport:
    report = SideReport()
    for name, value in values.items():
        report.add(Measurement(PLATFORM, name, value, "Mbps", Better.HIGHER), deterministic=True)
    return report


def history(comparison_metric: str) -> History:
    key = (PLATFORM, comparison_metric)
    when = datetime(2026, 12, 1, tzinfo=UTC)
    points = [(f"{i:x}" * 40, 100.0 + i / 10) for i in range(1, 9)]
    return History(
        "main",
        (key,),
        (Push("c" * 40, when, "1 regression", current=True), Push("b" * 40, when, "1 regression")),
        (Trend(PLATFORM, comparison_metric, "Mbps", tuple(points), 50.0),),
        (
            chart_series(
                [(sha, Stats.of([v])) for sha, v in points],
                [("b" * 40, Stats.of([60.0])), ("c" * 40, Stats.of([50.0]))],
                metric=comparison_metric,
                unit="Mbps",
                platform=PLATFORM,
                branch="main",
                base=Stats.of([100.0]),
                head=Stats.of([50.0]),
            ),
        ),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--metrics", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.metrics
    comparison = compare(
        side({f"m{i}": 100.0 for i in range(n)}),
        side({f"m{i}": 50.0 if i % 2 else 100.0 for i in range(n)}),
    )
    figures = {}
    for name, hist in (("without history", None), ("with history", history("m1"))):
        context = RenderContext(footer=Footer.APP, history=hist)
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            prepare(comparison, context)
            best = min(best, time.perf_counter() - start)
        figures[name] = best
        print(f"{n} metrics, {name}: {best:.3f} s")
    ratio = figures["with history"] / figures["without history"]
    print(f"ratio: {ratio:.2f}")


if __name__ == "__main__":
    main()
