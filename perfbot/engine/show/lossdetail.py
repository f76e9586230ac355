"""Each UDP run's loss, with its packets and lost packets, in a collapsed detail.

The table's loss row shows a median and a range; a lab that measures UDP (the OpenNIC
method) reads every run: which run lost, and how many of how many datagrams. This detail
lists them per side, in the order the runs were read.
"""

from __future__ import annotations

from collections.abc import Iterator

from perfbot.engine.judge.compare import MetricResult, PlatformResult, Stats
from perfbot.engine.show.escape import code
from perfbot.engine.show.numbers import format_number

LOSS_SUFFIX = "lost_percent"
# A report with hundreds of UDP runs keeps the detail readable and the comment bounded.
MAX_RUNS = 20


def loss_runs(platform: PlatformResult) -> Iterator[str]:
    """The collapsed detail of every UDP case of ``platform`` that reports loss (nothing
    when none does)."""
    by_name = {metric.name: metric for metric in platform.metrics}
    cases = [m for m in platform.metrics if m.name.endswith(LOSS_SUFFIX)]
    if not cases:
        return
    yield ""
    yield f"<details><summary>UDP loss per run ({len(cases)} {_s(len(cases), 'case')})</summary>"
    yield ""
    yield "| case | side | run | loss | lost / packets |"
    yield "|---|---|--:|--:|--:|"
    for loss in cases:
        prefix = loss.name[: -len(LOSS_SUFFIX)]
        lost, packets = by_name.get(prefix + "lost_packets"), by_name.get(prefix + "packets")
        for side, stats in (("base", loss.base), ("PR", loss.head)):
            if stats is None:
                continue
            for index, value in enumerate(stats.samples[:MAX_RUNS]):
                counted = _of(_sample(lost, side, index), _sample(packets, side, index))
                yield (
                    f"| {code(prefix.rstrip('.') or loss.name)} | {side} | {index + 1} "
                    f"| {format_number(value)} % | {counted} |"
                )
            if stats.n > MAX_RUNS:
                yield f"| | {side} | | {stats.n - MAX_RUNS} more runs | |"
    yield ""
    yield "</details>"


def _sample(metric: MetricResult | None, side: str, index: int) -> float | None:
    if metric is None:
        return None
    stats: Stats | None = metric.base if side == "base" else metric.head
    if stats is None or index >= stats.n:
        return None
    return stats.samples[index]


def _of(lost: float | None, packets: float | None) -> str:
    if lost is None or packets is None:
        return "–"
    return f"{format_number(lost)} / {format_number(packets)}"


def _s(n: int, noun: str) -> str:
    return noun if n == 1 else noun + "s"
