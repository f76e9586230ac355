"""The comment's history sections: this PR's measured pushes, the target branch's recent
values of each metric that moved, and the charts of them (``mermaid``).

Pure: the App reads the measurement store (``perfbot.app.report_history``) and hands the result
here as a ``History``; ``render.prepare`` places these sections after the comparison and
drops them first when the body is too long (the charts before the tables of history).
Every name in them comes from an artifact and is escaped here like the rest of the
comment (``escape.code``); SHAs are GitHub's and shown through ``escape.short_sha``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from perfbot.engine.judge.compare import Comparison, MetricResult, Stats, Verdict
from perfbot.engine.show.escape import code, short_sha, text
from perfbot.engine.show.explain import change_text
from perfbot.engine.show.mermaid import MetricSeries
from perfbot.engine.show.numbers import format_number
from perfbot.engine.show.plot import HistoryPoint
from perfbot.engine.show.rows import ACCEPTED_MARK
from perfbot.engine.show.sections import headline

__all__ = [
    "MAX_METRICS",
    "MAX_PUSHES",
    "MAX_TREND",
    "History",
    "MetricKey",
    "Push",
    "Trend",
    "as_judged_now",
    "chart_series",
    "pushes_section",
    "standing",
    "trend_section",
]

# Bounds of what the sections show: a wide table of pushes is unreadable, and the budget
# is the comment's, shared with the comparison.
MAX_METRICS = 4  # metric columns of the pushes' table; the rest are counted
MAX_PUSHES = 10  # rows of the pushes' table, the newest
MAX_TREND = 8  # recent commits of the target branch per metric

MetricKey = tuple[str, str]  # (platform, metric)


@dataclass(frozen=True, slots=True)
class Push:
    """One measured push of the PR: its head commit, when its newest attempt was recorded,
    that attempt's headline and the change of each metric shown (absent: not measured)."""

    sha: str
    measured_at: datetime
    headline: str
    changes: tuple[tuple[MetricKey, MetricResult], ...] = ()
    current: bool = False  # the push this comment reports


@dataclass(frozen=True, slots=True)
class Trend:
    """A metric's recent values on the target branch, oldest first (one per commit: the
    median of its samples), and this PR's head value (the median) to place among them."""

    platform: str
    metric: str
    unit: str
    points: tuple[tuple[str, float], ...]  # (commit SHA, value)
    head: float | None


@dataclass(frozen=True, slots=True)
class History:
    """What the store knows around this report (all of one repository)."""

    branch: str
    metrics: tuple[MetricKey, ...] = ()  # the metrics that moved, in the order shown
    pushes: tuple[Push, ...] = ()  # newest first; the current push among them
    trends: tuple[Trend, ...] = ()
    charts: tuple[MetricSeries, ...] = ()


def pushes_section(history: History) -> list[str]:
    """A collapsed table of the PR's measured pushes, newest first; empty unless there is an
    earlier one to show beside the current push."""
    pushes = history.pushes[:MAX_PUSHES]
    if not any(not push.current for push in pushes):
        return []
    shown = history.metrics[:MAX_METRICS]
    earlier = sum(1 for push in history.pushes if not push.current)
    lines = [
        f"<details><summary>This PR's pushes: {earlier} earlier measured "
        f"push{'' if earlier == 1 else 'es'}</summary>",
        "",
        "| push | measured | headline |" + "".join(f" {_metric_head(k)} |" for k in shown),
        "|---|---|---|" + "--:|" * len(shown),
    ]
    for push in pushes:
        changes = dict(push.changes)
        label = f"{short_sha(push.sha)}{' (this report)' if push.current else ''}"
        cells = "".join(f" {_change_cell(changes.get(key))} |" for key in shown)
        lines.append(
            f"| {label} | {push.measured_at:%Y-%m-%d %H:%M} UTC | {text(push.headline, 120)} |"
            f"{cells}"
        )
    notes = []
    if len(history.pushes) > len(pushes):
        notes.append(f"{len(history.pushes) - len(pushes)} older pushes not shown.")
    if len(history.metrics) > len(shown):
        rest = len(history.metrics) - len(shown)
        notes.append(f"{rest} more moved metric{'' if rest == 1 else 's'} not shown.")
    notes.append("Re-runs of a commit are attempts of its push: the newest one is shown.")
    lines += ["", " ".join(notes), "", "</details>"]
    return lines


def trend_section(history: History) -> list[str]:
    """A collapsed table of the target branch's recent values of each moved metric, and
    where this PR's head stands among them; empty when the branch has no history."""
    trends = [t for t in history.trends if t.points]
    if not trends:
        return []
    branch = code(history.branch, 60)
    lines = [
        f"<details><summary>Recent values on {branch}</summary>",
        "",
        f"| metric | {branch}, oldest to newest | this PR | where it stands |",
        "|---|---|--:|---|",
    ]
    for trend in trends:
        points = trend.points[-MAX_TREND:]
        values = " · ".join(f"{short_sha(sha)} {format_number(v)}" for sha, v in points)
        head = "—" if trend.head is None else format_number(trend.head)
        lines.append(
            f"| {_metric_head((trend.platform, trend.metric))}{_unit(trend.unit)} | {values} "
            f"| {head} | {standing(trend.head, [v for _, v in points], branch)} |"
        )
    lines += ["", "</details>"]
    return lines


def standing(head: float | None, values: Sequence[float], branch: str) -> str:
    """Where ``head`` stands among the branch's recent ``values`` (``branch`` is markdown)."""
    n = len(values)
    if head is None or not n:
        return "—"
    recent = f"{n} recent {branch} commit{'' if n == 1 else 's'}"
    lower = sum(1 for v in values if v < head)
    higher = sum(1 for v in values if v > head)
    if higher == n:
        return f"below all {recent}"
    if lower == n:
        return f"above all {recent}"
    if lower == 0 and higher == 0:
        return f"equal to all {recent}"
    return f"{lower} of {recent} lower, {higher} higher"


def chart_series(
    history_points: Sequence[tuple[str, Stats]],
    pushes: Sequence[tuple[str, Stats]],
    *,
    metric: str,
    unit: str,
    platform: str,
    branch: str,
    base: Stats | None,
    head: Stats | None,
) -> MetricSeries:
    """One chart: the branch's commits (oldest first), then this PR's pushes (oldest first)."""
    points = [HistoryPoint(sha[:7], stats) for sha, stats in history_points[-MAX_TREND:]]
    points += [HistoryPoint(sha[:7], stats, highlight=True) for sha, stats in pushes]
    return MetricSeries(
        metric=metric,
        unit=unit,
        platform=platform,
        branch=branch,
        history=tuple(points),
        base=base,
        head=head,
    )


def _metric_head(key: MetricKey) -> str:
    platform, metric = key
    return f"{code(metric, 60)} on {code(platform, 40)}"


def _unit(unit: str) -> str:
    return f" ({text(unit, 20)})" if unit else ""


# As the comparison's change column marks them: red beyond tolerance, orange within it.
_MARKS = {Verdict.REGRESSED: "🟠 ", Verdict.IMPROVED: "🟢 ", Verdict.UNCERTAIN: "❔ "}


def _change_cell(metric: MetricResult | None) -> str:
    if metric is None or metric.base is None or metric.head is None:
        return "—"
    beyond = metric.verdict is Verdict.REGRESSED and metric.beyond_tolerance
    mark = "📝 " if not metric.counts else _MARKS.get(metric.verdict, "")
    if metric.accepted:
        mark = f"{ACCEPTED_MARK} "
    return f"{'🔴 ' if beyond else mark}{change_text(metric)}"


def as_judged_now(history: History, comparison: Comparison) -> History:
    """``history`` with the push this comment reports said as ``comparison`` says it now: its
    headline and its changes, after a person accepted (or unaccepted) a regression."""
    results = {(p.name, m.name): m for p in comparison.platforms for m in p.metrics}
    pushes = tuple(
        replace(
            push,
            headline=headline(comparison),
            changes=tuple((key, results.get(key, result)) for key, result in push.changes),
        )
        if push.current
        else push
        for push in history.pushes
    )
    return replace(history, pushes=pushes)
