"""Confirm before red: a stochastic metric that would become a regression beyond tolerance
is measured once more before the comment calls it, and the samples of both attempts decide.

A stochastic tool (iperf3, netperf, pktgen, dperf) can have a bad run; one bad run must not
turn a PR red. The App re-runs the measurement once per head commit (``perfbot.app.confirm``);
meanwhile the metric shows "confirming…". When the second attempt is in, its samples and
the first's are compared together: the row turns red only if the regression holds, and
otherwise says it was not reproduced. Deterministic metrics (zperf, twister under QEMU
icount, or any metric whose same-commit measurements never differed) need no second
look: they are called at once.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace

from perfbot.engine.judge.compare import Comparison, MetricResult, Verdict
from perfbot.engine.judge.noise import Source
from perfbot.engine.read.sides import Series, SideReport

Key = tuple[str, str]  # (platform, metric)
_Change = Callable[[MetricResult], MetricResult]

CONFIRMING = "confirming… measured again before it is called"
CONFIRMED = "confirmed by a second attempt"
NOT_REPRODUCED = "not reproduced by a second attempt"
UNCONFIRMED = "beyond tolerance in one attempt only, not called"


def pending(comparison: Comparison) -> tuple[Key, ...]:
    """The stochastic metrics this comparison would call regressions beyond tolerance."""
    return tuple(
        (platform.name, metric.name)
        for platform in comparison.platforms
        for metric in platform.metrics
        if _would_be_red(metric)
    )


def _would_be_red(metric: MetricResult) -> bool:
    """A stochastic regression beyond tolerance. A deterministic metric (the format's prior,
    or a learned spread of zero) is called at once, whatever the store holds: a second
    attempt would only repeat its numbers."""
    return (
        metric.verdict is Verdict.REGRESSED
        and metric.beyond_tolerance
        and not metric.deterministic
        and metric.noise is not None
        and metric.noise.source is not Source.DETERMINISTIC
    )


def hold(comparison: Comparison, keys: Collection[Key]) -> Comparison:
    """The comparison while a confirmation runs: those metrics are not red yet."""
    return _each(comparison, keys, lambda m: replace(m, beyond_tolerance=False, note=CONFIRMING))


def settle(comparison: Comparison, keys: Collection[Key]) -> Comparison:
    """The comparison of both attempts' samples, saying of each metric that was being
    confirmed whether the regression held.

    A stochastic metric that turns red only once both attempts are combined was not red
    in the first: one attempt alone made it so, which is what confirming guards against.
    It is not called either (``UNCONFIRMED``).
    """

    def said(metric: MetricResult) -> MetricResult:
        held = metric.verdict is Verdict.REGRESSED and metric.beyond_tolerance
        return _noted(metric, CONFIRMED if held else NOT_REPRODUCED)

    confirmed = _each(comparison, keys, said)
    late = set(pending(confirmed)) - set(keys)
    return _each(confirmed, late, lambda m: _noted(replace(m, beyond_tolerance=False), UNCONFIRMED))


def _noted(metric: MetricResult, note: str) -> MetricResult:
    return replace(metric, note=f"{metric.note}; {note}" if metric.note else note)


def combine(earlier: Mapping[Key, Sequence[float]], side: SideReport) -> SideReport:
    """``side`` with the earlier attempt's samples of each series before its own."""
    combined = SideReport(
        failures=list(side.failures),
        files_read=side.files_read,
        unreadable=list(side.unreadable),
        formats_seen=dict(side.formats_seen),
        left_out=list(side.left_out),
    )
    for key, series in side.series.items():
        samples = [*earlier.get(key, ()), *series.samples]
        combined.series[key] = replace(series, samples=samples)
    return combined


def earlier_side(series: Iterable[tuple[Key, Sequence[float]]], like: SideReport) -> SideReport:
    """The earlier attempt's side, its series described as the current attempt's are
    (unit, direction, scale, settings, prior): only series both attempts measured."""
    earlier = SideReport()
    for key, samples in series:
        current = like.series.get(key)
        if current is not None and samples:
            earlier.series[key] = Series(
                current.unit,
                current.better,
                list(samples),
                scale=current.scale,
                settings=current.settings,
                deterministic=current.deterministic,
            )
    return earlier


def _each(comparison: Comparison, keys: Collection[Key], change: _Change) -> Comparison:
    wanted = set(keys)
    platforms = tuple(
        replace(
            platform,
            metrics=tuple(
                change(metric) if (platform.name, metric.name) in wanted else metric
                for metric in platform.metrics
            ),
        )
        for platform in comparison.platforms
    )
    return replace(comparison, platforms=platforms)
