"""What a comparison is: a verdict per platform and metric, with its statistics, and what
each side could not measure. Made by ``compare.py``; worded by ``show/``."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from perfbot.engine.judge.noise import Noise
from perfbot.engine.judge.policy import Policy
from perfbot.engine.judge.stats import median
from perfbot.engine.read.runs import RunsLeftOut
from perfbot.model import Better, Scale, Settings, quick_constructor

Side = Literal["base", "head"]


class Verdict(enum.StrEnum):
    REGRESSED = "regressed"
    IMPROVED = "improved"
    UNCHANGED = "unchanged"
    NEW = "new"
    MISSING = "missing"
    FAILED = "failed"
    NOT_COMPARABLE = "not comparable"
    # Moved beyond the floor, but its noise is unknown (one run of a stochastic tool,
    # never measured before): shown with its change, never called a regression.
    UNCERTAIN = "uncertain"


MOVED = frozenset({Verdict.REGRESSED, Verdict.IMPROVED})


class Incomparable(enum.StrEnum):
    """Why a metric measured on both sides (or on a platform only one side measured) was
    not compared."""

    SETTINGS = "settings"  # the runs were asked to do different things (-P 1 vs -P 4)
    UNIT = "unit"  # the two sides report it in different units
    PLATFORM = "platform"  # its platform has no measurement on the other side


@dataclass(frozen=True, slots=True)
class Stats:
    """Median and spread of one side's samples."""

    value: float
    low: float
    high: float
    samples: tuple[float, ...]

    @classmethod
    def of(cls, samples: Iterable[float]) -> Stats:
        values = tuple(samples)
        if len(values) == 1:  # one run: its value is every statistic
            (value,) = values
            return quick_stats(value, value, value, values)
        return quick_stats(median(values), min(values), max(values), values)

    @property
    def n(self) -> int:
        return len(self.samples)


# Made twice per compared metric (20,000 a big report), as a MetricResult is once.
quick_stats = quick_constructor(Stats)


@dataclass(frozen=True, slots=True)
class Acceptance:
    """A person accepted this metric's regression on the PR (``/perfbot accept``): ``login``
    with ``reason``, at head ``sha``, where it measured ``value`` (the head's median).

    ``holds``: the metric is still where it was accepted (within its noise of ``value``,
    judged as a move from it is; ``change`` is that move in the change's units, None from
    zero); the row is then no regression that counts, never red. ``settings_differ``: this
    head ran with other settings than the accepted one, so nothing holds. ``beyond_tolerance``
    is the row's own, kept so that withdrawing the acceptance gives the row back as judged.
    Made by ``acceptance.py``; worded by ``show/``.
    """

    login: str
    reason: str
    sha: str
    value: float
    holds: bool
    change: float | None = 0.0
    beyond_tolerance: bool = False
    settings_differ: bool = False


@dataclass(frozen=True, slots=True)
class MetricResult:
    name: str
    unit: str
    better: Better
    base: Stats | None
    head: Stats | None
    change_pct: float | None
    verdict: Verdict
    beyond_tolerance: bool = False
    note: str = ""
    scale: Scale = Scale.RATIO
    # The noise the move was judged against (None: unknown, or not judged), and the
    # half-width of the band a move had to leave, in the change's units (percent,
    # points or counts).
    noise: Noise | None = None
    band: float | None = None
    # The same band's half-width in the metric's own unit (ms, Mbps), for a ratio metric
    # whose band in percent is too wide to read; None where the noise does not say.
    unit_band: float | None = None
    # A metric the configuration keeps for the record (``report_only``): judged and shown,
    # never beyond tolerance, and its move counts for nothing (``PlatformResult.count``).
    report_only: bool = False
    # Why a NOT_COMPARABLE metric was not compared (the note says it in words).
    incomparable: Incomparable | None = None
    # The same code gives the same numbers: the format's prior says so, or measurements
    # of the same commit never differed (a learned spread of zero). Never re-run to
    # confirm (``confirm.pending``), whatever the store holds.
    deterministic: bool = False
    # The run settings the PR side measured with (an acceptance is of these runs).
    settings: Settings = ()
    # A person's acceptance of this regression (``acceptance.py``), holding or not.
    acceptance: Acceptance | None = None

    @property
    def accepted(self) -> bool:
        """A regression a person accepted, still where it was accepted."""
        return (
            self.acceptance is not None
            and self.acceptance.holds
            and self.verdict is Verdict.REGRESSED
            and not self.report_only
        )

    @property
    def counts(self) -> bool:
        """Whether the verdict counts: a report-only metric's move is counted apart, and
        so is a regression a person accepted (``accepted``)."""
        return not ((self.report_only and self.verdict in MOVED) or self.accepted)


quick_metric_result = quick_constructor(MetricResult)


@dataclass(frozen=True, slots=True)
class SideFailure:
    side: Side
    platform: str
    case: str
    reason: str


@dataclass(frozen=True, slots=True)
class SideRunsLeftOut:
    """Runs of one case on one side left out for their settings (see ``RunsLeftOut``)."""

    side: Side
    runs: RunsLeftOut


@dataclass(frozen=True, slots=True)
class PlatformResult:
    name: str
    metrics: tuple[MetricResult, ...]
    failures: tuple[SideFailure, ...]
    unavailable: str | None = None
    left_out: tuple[SideRunsLeftOut, ...] = ()

    def count(self, verdict: Verdict) -> int:
        """The metrics with ``verdict`` that count: a report-only metric that moved is
        counted apart (``report_only_moved``), never as a regression or an improvement."""
        return sum(1 for metric in self.metrics if metric.verdict is verdict and metric.counts)

    @property
    def report_only_moved(self) -> int:
        return sum(1 for metric in self.metrics if metric.report_only and not metric.counts)

    @property
    def accepted(self) -> int:
        """The regressions a person accepted that hold (``MetricResult.accepted``)."""
        return sum(1 for metric in self.metrics if metric.accepted)

    @property
    def beyond_tolerance(self) -> int:
        return sum(1 for metric in self.metrics if metric.beyond_tolerance)

    @property
    def moved(self) -> bool:
        return any(metric.verdict in MOVED and metric.counts for metric in self.metrics)

    def severity(self) -> tuple[int, ...]:
        """Sort key, worst platform first."""
        return (
            -self.beyond_tolerance,
            -self.count(Verdict.REGRESSED),
            -len(self.failures) - self.count(Verdict.FAILED),
            -self.count(Verdict.MISSING),
            -self.count(Verdict.IMPROVED),
            0 if self.unavailable else 1,
        )


@dataclass(frozen=True, slots=True)
class Comparison:
    platforms: tuple[PlatformResult, ...]
    policy: Policy = field(default_factory=Policy)

    @property
    def failures(self) -> tuple[SideFailure, ...]:
        return tuple(f for platform in self.platforms for f in platform.failures)

    @property
    def left_out(self) -> tuple[SideRunsLeftOut, ...]:
        return tuple(runs for platform in self.platforms for runs in platform.left_out)

    def summary(self) -> dict[Verdict, int]:
        """How many metrics have each verdict; a report-only metric's move is not among
        them (``report_only_moved``)."""
        counts = dict.fromkeys(Verdict, 0)
        for platform in self.platforms:
            for metric in platform.metrics:
                if metric.counts:
                    counts[metric.verdict] += 1
        return counts

    @property
    def report_only_moved(self) -> int:
        return sum(platform.report_only_moved for platform in self.platforms)

    @property
    def accepted(self) -> int:
        return sum(platform.accepted for platform in self.platforms)

    @property
    def regressed_beyond_tolerance(self) -> int:
        return sum(platform.beyond_tolerance for platform in self.platforms)
