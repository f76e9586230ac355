"""The history around a PR's report, read from the measurement store for the comment:
the PR's earlier measured pushes, the target branch's recent values of each metric that
moved, and the series of their charts (``perfbot.engine.show.history`` lays them out).

Every query is of this repository (the store is keyed by its id), so nothing of another
repository, private or not, can appear; the branch's trend never holds a fork PR's rows.
Reading never stands in the way of the comment: a failure is logged and the comment goes
without its history.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

from perfbot.app.context import JobContext
from perfbot.app.measurements import MeasuredRun
from perfbot.engine.judge import acceptance
from perfbot.engine.judge import confirm as engine_confirm
from perfbot.engine.judge.acceptance import Accepted
from perfbot.engine.judge.compare import (
    MOVED,
    Comparison,
    MetricResult,
    NoiseKnowledge,
    Policy,
    Stats,
    compare,
)
from perfbot.engine.read.sides import SideReport
from perfbot.engine.show.history import (
    MAX_METRICS,
    MAX_PUSHES,
    MAX_TREND,
    History,
    MetricKey,
    Push,
    Trend,
    chart_series,
)
from perfbot.engine.show.sections import headline
from perfbot.github.types import PullInfo
from perfbot.store.measurements import CommitSamples, PullRun, RunSeries, SeriesKey

# Rows of the branch read per metric at most: enough for MAX_TREND commits measured a few
# times each by pushes and by PRs' base sides.
TREND_ROWS: Final = 200
# Up to this many series across the earlier pushes, they are compared on the event loop.
INLINE_SERIES: Final = 500


async def report_history(
    ctx: JobContext,
    run: MeasuredRun,
    pull: PullInfo,
    sides: tuple[SideReport, SideReport],
    *,
    comparison: Comparison,
    policy: Policy,
    knowledge: NoiseKnowledge,
    accepted: Sequence[Accepted] = (),
) -> History | None:
    """The history of this report, or None when it could not be read (logged). Earlier
    pushes are judged with the PR's standing acceptances (``accepted``) too."""
    try:
        earlier = await _earlier_pushes(ctx, run, pull)
        judging = (earlier, sides, policy, knowledge, accepted)
        if sum(len(series) for _, series in earlier) <= INLINE_SERIES:
            judged = _judge_pushes(*judging)
        else:
            judged = await asyncio.to_thread(_judge_pushes, *judging)
        metrics = _moved([comparison, *(c for _, c in judged)])
        trends = await _branch_values(ctx, run.repo_id, pull.base_ref, sides, metrics)
    except Exception as exc:
        ctx.log.warning("history of run %s not read: %s", run.id, type(exc).__name__, exc_info=True)
        return None
    now = datetime.fromtimestamp(ctx.now(), UTC)
    current = Push(run.head_sha, now, headline(comparison), _changes(comparison, metrics), True)
    pushes = [current] + [
        Push(push.sha, _time(push.recorded_at), headline(c), _changes(c, metrics))
        for push, c in judged
    ]
    shown = metrics[:MAX_METRICS]
    results = _results(comparison)
    trend_list, charts = [], []
    for key in shown:
        platform, metric = key
        result = results[key]
        commits = [c for c in trends.get(key, []) if any(c.runs)]
        points = [(c.sha, _stats(c)) for c in reversed(commits)]
        trend_list.append(
            Trend(
                platform,
                metric,
                result.unit,
                tuple((sha, stats.value) for sha, stats in points),
                None if result.head is None else result.head.value,
            )
        )
        heads = [
            (p.sha, head)
            for p in reversed(pushes)
            if (head := _head_of(dict(p.changes).get(key))) is not None
        ]
        charts.append(
            chart_series(
                points,
                heads,
                metric=metric,
                unit=result.unit,
                platform=platform,
                branch=pull.base_ref,
                base=result.base,
                head=result.head,
            )
        )
    return History(pull.base_ref, metrics, tuple(pushes), tuple(trend_list), tuple(charts))


async def _earlier_pushes(
    ctx: JobContext, run: MeasuredRun, pull: PullInfo
) -> list[tuple[PullRun, list[RunSeries]]]:
    """The PR's earlier pushes, newest first, each as its newest attempt's rows: a re-run
    of a commit is an attempt of its push, and this report's commit is the current push."""
    return await ctx.store.pull_pushes(
        run.repo_id, pull.number, sha=run.head_sha, run_id=run.id, max_pushes=MAX_PUSHES - 1
    )


def _judge_pushes(
    earlier: Sequence[tuple[PullRun, list[RunSeries]]],
    sides: tuple[SideReport, SideReport],
    policy: Policy,
    knowledge: NoiseKnowledge,
    accepted: Sequence[Accepted],
) -> list[tuple[PullRun, Comparison]]:
    """Each earlier push judged again from its stored sides, by today's policy, noise and
    acceptances, its series described as this report's are (only the series both
    measured)."""
    judged = []
    for push, series in earlier:
        base = engine_confirm.earlier_side(_side(series, "base"), sides[0])
        head = engine_confirm.earlier_side(_side(series, "head"), sides[1])
        comparison = compare(base, head, policy, knowledge)
        judged.append((push, acceptance.judge(comparison, accepted)))
    return judged


def _side(series: Sequence[RunSeries], side: str) -> list[tuple[MetricKey, tuple[float, ...]]]:
    return [((s.platform, s.metric), s.samples) for s in series if s.side == side]


def _moved(comparisons: Sequence[Comparison]) -> tuple[MetricKey, ...]:
    """The metrics that moved in any of ``comparisons`` (this report's first, its biggest
    moves first), once each, only those this report measured."""
    current = _results(comparisons[0])
    moved: dict[MetricKey, None] = {}
    for comparison in comparisons:
        keyed = sorted(
            (
                (abs(m.change_pct or 0.0), key)
                for key, m in _results(comparison).items()
                if m.verdict in MOVED and key in current
            ),
            key=lambda item: (-item[0], item[1]),
        )
        for _, key in keyed:
            moved.setdefault(key)
    return tuple(moved)


async def _branch_values(
    ctx: JobContext,
    repo_id: int,
    branch: str,
    sides: tuple[SideReport, SideReport],
    metrics: Sequence[MetricKey],
) -> dict[MetricKey, list[CommitSamples]]:
    keys = {}
    for key in metrics[:MAX_METRICS]:
        series = sides[1].series.get(key) or sides[0].series.get(key)
        if series is not None:
            keys[SeriesKey(key[0], key[1], series.settings)] = key
    if not keys:
        return {}
    history = await ctx.store.branch_history(
        repo_id, branch, list(keys), max_commits=MAX_TREND, max_rows=TREND_ROWS
    )
    return {keys[series]: commits for series, commits in history.items()}


def _results(comparison: Comparison) -> dict[MetricKey, MetricResult]:
    return {(p.name, m.name): m for p in comparison.platforms for m in p.metrics}


def _changes(
    comparison: Comparison, metrics: Sequence[MetricKey]
) -> tuple[tuple[MetricKey, MetricResult], ...]:
    results = _results(comparison)
    return tuple((key, results[key]) for key in metrics if key in results)


def _head_of(result: MetricResult | None) -> Stats | None:
    return None if result is None else result.head


def _stats(commit: CommitSamples) -> Stats:
    """One value per commit: the median of all its samples, whichever run measured them."""
    return Stats.of(x for samples in commit.runs for x in samples)


def _time(recorded_at: float) -> datetime:
    return datetime.fromtimestamp(recorded_at, UTC)
