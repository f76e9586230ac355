"""A single run without a base, as markdown: the values it measured, per platform.

``perfbot compare RUN`` with no ``base/`` and ``head/`` reports the run's own values, as
the seed's ``zperf_regression.py`` does without a baseline. Every name is escaped as in
the PR comment, since the text may go to a job summary.
"""

from __future__ import annotations

from collections.abc import Iterator

from perfbot.engine.judge.compare import Stats
from perfbot.engine.read.sides import SideReport
from perfbot.engine.show import wording
from perfbot.engine.show.escape import code, text
from perfbot.engine.show.render import format_number


def run_markdown(side: SideReport) -> str:
    return "\n".join(_lines(side)) + "\n"


def _lines(side: SideReport) -> Iterator[str]:
    platforms = sorted(side.platforms)
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
    if side.failures:
        yield ""
        yield "**Failed cases**"
        yield ""
        for failure in side.failures:
            yield f"- {code(failure.platform)} {code(failure.case)}: {text(failure.reason)}"
    if side.left_out:
        yield ""
        yield "**Runs left out**"
        yield ""
        for runs in side.left_out:
            said = wording.runs_left_out(runs, lambda name: code(name, 60), lambda v: text(v, 40))
            yield f"- {code(runs.platform)} {code(runs.case)}: {said}"


def _stats(stats: Stats) -> str:
    if stats.n == 1:
        return format_number(stats.value)
    low, high = format_number(stats.low), format_number(stats.high)
    return f"{format_number(stats.value)} ({low}–{high}, n={stats.n})"


def _s(n: int) -> str:
    return "" if n == 1 else "s"
