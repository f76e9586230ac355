"""A single run without a base, as markdown: the values it measured, per platform.

``perfbot compare RUN`` with no ``base/`` and ``head/`` reports the run's own values, as
the seed's ``zperf_regression.py`` does without a baseline. Every name is escaped as in
the PR comment, since the text may go to a job summary.

Its platforms come in the order a comparison lists them (``listing``), in the terminal
table too: someone reading ``perfbot compare RUN`` beside ``perfbot compare BASE RUN``
finds each platform where the other put it, failed ones first.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from perfbot.engine.judge.compare import Stats, compare
from perfbot.engine.read.runs import RunsLeftOut
from perfbot.engine.read.sides import SideReport
from perfbot.engine.show import wording
from perfbot.engine.show.escape import code, text
from perfbot.engine.show.render import format_number
from perfbot.model import FailedCase


@dataclass(frozen=True, slots=True)
class Listing:
    """A single run's platforms with values, its failed cases and its runs left out, in
    the order of a comparison."""

    platforms: tuple[str, ...]
    failures: tuple[FailedCase, ...]
    left_out: tuple[RunsLeftOut, ...]


def listing(side: SideReport) -> Listing:
    """``side`` in the order a comparison lists it: worst platform first, then by name.

    The order is taken from a comparison of the run against no base (as its ``--plot``
    chart is drawn), so it cannot drift from the comparison's own rule. Failed cases and
    runs left out follow their platform, as they do in a comparison.
    """
    order = [platform.name for platform in compare(SideReport(), side).platforms]
    rank = {name: index for index, name in enumerate(order)}

    def place(platform: str) -> int:
        return rank.get(platform, len(rank))

    measured = side.platforms
    return Listing(
        platforms=tuple(name for name in order if name in measured),
        # sorted() is stable: within a platform, the order they were read in.
        failures=tuple(sorted(side.failures, key=lambda failure: place(failure.platform))),
        left_out=tuple(sorted(side.left_out, key=lambda runs: place(runs.platform))),
    )


def run_markdown(side: SideReport) -> str:
    return "\n".join(_lines(side)) + "\n"


def _lines(side: SideReport) -> Iterator[str]:
    listed = listing(side)
    platforms = listed.platforms
    metrics = len(side.series)
    failed = f", {len(side.failures)} failed case{_s(len(side.failures))}" if side.failures else ""
    yield (
        f"### Measurements: {metrics} metric{_s(metrics)} on {len(platforms)} "
        f"platform{_s(len(platforms))}{failed}"
    )
    for platform in platforms:
        yield ""
        yield f"#### {code(platform)}"
        yield ""
        yield "| metric | value |"
        yield "|---|--:|"
        for (where, name), series in sorted(side.series.items()):
            if where != platform:
                continue
            unit = f" ({text(series.unit, 20)})" if series.unit else ""
            yield f"| {code(name)}{unit} | {_stats(Stats.of(series.samples))} |"
    if listed.failures:
        yield ""
        yield "**Failed cases**"
        yield ""
        for failure in listed.failures:
            yield f"- {code(failure.platform)} {code(failure.case)}: {text(failure.reason)}"
    if listed.left_out:
        yield ""
        yield "**Runs left out**"
        yield ""
        for runs in listed.left_out:
            said = wording.runs_left_out(runs, lambda name: code(name, 60), lambda v: text(v, 40))
            yield f"- {code(runs.platform)} {code(runs.case)}: {said}"


def _stats(stats: Stats) -> str:
    if stats.n == 1:
        return format_number(stats.value)
    low, high = format_number(stats.low), format_number(stats.high)
    return f"{format_number(stats.value)} ({low}–{high}, n={stats.n})"


def _s(n: int) -> str:
    return "" if n == 1 else "s"
