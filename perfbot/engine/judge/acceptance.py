"""Accepted regressions: a person said a PR's regression is intended (``/perfbot accept``),
at the level its head measured. Judged after ``compare``, from the acknowledgements as
plain values (``Accepted``).

An acceptance holds while the metric stays within its noise of the accepted level: the
PR side is judged as a move *from that level*, as ``compare`` judges a move from base to
head (``compare.move_from``). Holding, the row is still a regression, shown as accepted,
but it counts for nothing: not in the headline's regressions, never red, never confirmed,
never fails the check. A further regression beyond the noise (or runs with other settings)
ends it: the row is judged as it was, red again, and says why.

Every step is undone by ``withdraw``: a row keeps what it was before (``Acceptance``'s
``beyond_tolerance``), so a comparison can be accepted, withdrawn and accepted again
without being judged anew.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase

from perfbot.engine.judge.compare import Comparison, MetricResult, Verdict, move_from
from perfbot.engine.judge.results import Acceptance
from perfbot.model import Better, Settings

Key = tuple[str, str]  # (platform, metric)


@dataclass(frozen=True, slots=True)
class Accepted:
    """One standing acknowledgement of a PR's regression: ``metric`` on ``platform`` run
    with ``settings``, accepted by ``login`` at head ``sha`` where it measured ``value``."""

    platform: str
    metric: str
    settings: Settings
    value: float
    login: str
    reason: str
    sha: str


def judge(comparison: Comparison, accepted: Iterable[Accepted]) -> Comparison:
    """``comparison`` with each regression that has an acknowledgement (the last one of a
    metric wins) accepted, or not, by how far it moved from the accepted level.
    ``accepted`` is every standing acknowledgement: a row without one is judged bare."""
    latest = {(a.platform, a.metric): a for a in accepted}
    policy = comparison.policy

    def decided(platform: str, metric: MetricResult) -> MetricResult:
        said = latest.get((platform, metric.name))
        bare = _bare(metric)
        if said is None or not _acceptable(bare):
            return bare
        if sorted(said.settings) != sorted(bare.settings):
            return _with(bare, said, holds=False, change=None, settings_differ=True)
        verdict, change = move_from(said.value, bare, policy)
        return _with(bare, said, holds=_holds(verdict, change, bare, comparison), change=change)

    return _each(comparison, None, decided)


def accept(
    comparison: Comparison, keys: Collection[Key], *, login: str, reason: str, sha: str
) -> Comparison:
    """``comparison`` with the regressions ``keys`` accepted at their PR side's median now
    (a person just accepted what this report shows: it holds)."""

    def accepted(_platform: str, metric: MetricResult) -> MetricResult:
        if not _acceptable(metric):
            return metric
        assert metric.head is not None  # a regression is measured on both sides
        said = Accepted("", metric.name, metric.settings, metric.head.value, login, reason, sha)
        return _with(_bare(metric), said, holds=True, change=0.0)

    return _each(comparison, set(keys), accepted)


def withdraw(comparison: Comparison, keys: Collection[Key] | None = None) -> Comparison:
    """``comparison`` without the acceptances of ``keys`` (None: of every metric), each row
    as it was judged before."""
    return _each(comparison, None if keys is None else set(keys), lambda _p, m: _bare(m))


def acceptable(comparison: Comparison, globs: Sequence[str]) -> tuple[Key, ...]:
    """The regressions a person may accept now whose names match one of ``globs`` (every
    one with no glob): those that count, and those whose acceptance no longer holds."""
    return tuple(
        (platform.name, metric.name)
        for platform in comparison.platforms
        for metric in platform.metrics
        if _acceptable(metric) and not metric.accepted and matches(metric.name, globs)
    )


def accepted_keys(comparison: Comparison, globs: Sequence[str]) -> tuple[Key, ...]:
    """The metrics with an acceptance (holding or not) whose names match ``globs``."""
    return tuple(
        (platform.name, metric.name)
        for platform in comparison.platforms
        for metric in platform.metrics
        if metric.acceptance is not None and matches(metric.name, globs)
    )


def lapsed(comparison: Comparison) -> tuple[tuple[str, MetricResult], ...]:
    """The metrics whose acceptance no longer holds, with their platform: each is a line."""
    return tuple(
        (platform.name, metric)
        for platform in comparison.platforms
        for metric in platform.metrics
        if metric.acceptance is not None and not metric.acceptance.holds
    )


def matches(metric: str, globs: Sequence[str]) -> bool:
    """Whether ``metric`` matches one of ``globs`` (``*``, ``?``, ``[…]``, case-sensitive,
    as the configuration's ``metrics:`` rules match); every metric matches no glob."""
    return not globs or any(fnmatchcase(metric, glob) for glob in globs)


def _acceptable(metric: MetricResult) -> bool:
    """A regression that would count: measured on both sides, not kept for the record."""
    return (
        metric.verdict is Verdict.REGRESSED
        and not metric.report_only
        and metric.head is not None
        and metric.base is not None
    )


def _holds(verdict: Verdict, change: float | None, metric: MetricResult, c: Comparison) -> bool:
    """Within noise of the accepted level: no regression from it. A move whose noise is not
    known (uncertain) holds only within the tolerance: nothing says it is noise."""
    if verdict is Verdict.UNCERTAIN and change is not None:
        _, _, tolerance, _ = c.policy.resolve(metric.name, metric.scale)
        gain = change > 0 if metric.better is Better.HIGHER else change < 0
        return gain or abs(change) <= tolerance
    return verdict is not Verdict.REGRESSED


def _bare(metric: MetricResult) -> MetricResult:
    """The row as judged before any acceptance."""
    if metric.acceptance is None:
        return metric
    return replace(metric, acceptance=None, beyond_tolerance=metric.acceptance.beyond_tolerance)


def _with(
    metric: MetricResult,
    said: Accepted,
    *,
    holds: bool,
    change: float | None,
    settings_differ: bool = False,
) -> MetricResult:
    acceptance = Acceptance(
        login=said.login,
        reason=said.reason,
        sha=said.sha,
        value=said.value,
        holds=holds,
        change=change,
        beyond_tolerance=metric.beyond_tolerance,
        settings_differ=settings_differ,
    )
    beyond = metric.beyond_tolerance and not holds
    return replace(metric, acceptance=acceptance, beyond_tolerance=beyond)


def _each(
    comparison: Comparison,
    keys: set[Key] | None,
    change: Callable[[str, MetricResult], MetricResult],
) -> Comparison:
    """``change`` applied to the metrics of ``keys`` (None: every metric)."""
    platforms = tuple(
        replace(
            platform,
            metrics=tuple(
                change(platform.name, metric)
                if keys is None or (platform.name, metric.name) in keys
                else metric
                for metric in platform.metrics
            ),
        )
        for platform in comparison.platforms
    )
    platforms = tuple(sorted(platforms, key=lambda p: (p.severity(), p.name)))
    return replace(comparison, platforms=platforms)
