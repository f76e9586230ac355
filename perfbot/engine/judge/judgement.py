"""The one place a report is judged: ``perfbot compare``, ``perfbot comment`` and the App
all call ``judge_report``.

Given both sides as read (``perfbot.engine.read.report``), the policy, what is known of
each metric's noise, when this attempt is perfbot's confirmation of the one before that
attempt's samples, and the regressions people accepted on the PR (``acceptance.Accepted``,
judged after ``compare``), it returns the comparison, what a second attempt should
confirm, what this attempt settled, and the typed notices the renderer words. Asking
GitHub for the second attempt is the App's (it is I/O); ``hold`` and ``not_confirmed``
then say how that went.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from perfbot.engine.judge import acceptance, confirm
from perfbot.engine.judge.acceptance import Accepted
from perfbot.engine.judge.compare import Comparison, NoiseKnowledge, Policy, compare
from perfbot.engine.judge.confirm import Key
from perfbot.engine.judge.notices import (
    Confirming,
    NoConfirmation,
    NotConfirmed,
    Notice,
    RepeatedAttempt,
    Settled,
)
from perfbot.engine.read.report import ReadReport, read_report
from perfbot.engine.read.sides import ReportFile, SideReport


@dataclass(frozen=True, slots=True)
class EarlierAttempt:
    """The samples an earlier attempt of the run recorded, per side: (platform, metric)
    and its samples, in the order recorded (a later entry of one key wins)."""

    base: Sequence[tuple[Key, Sequence[float]]] = ()
    head: Sequence[tuple[Key, Sequence[float]]] = ()


@dataclass(frozen=True, slots=True)
class Judgement:
    """A judged report.

    ``pending``: the stochastic regressions beyond tolerance a second attempt should
    confirm before they are called. ``settled``: what this attempt confirmed or not (it
    was judged with the earlier attempt's samples). ``repeated``: this attempt's report is
    the earlier attempt's own again, so its runs are no new measurement.
    """

    comparison: Comparison
    report: ReadReport
    pending: tuple[Key, ...] = ()
    settled: tuple[Key, ...] = ()
    notices: tuple[Notice, ...] = ()
    repeated: bool = False

    @property
    def sides(self) -> tuple[SideReport, SideReport]:
        return self.report.base, self.report.head


def judge_report(
    report: ReadReport | Iterable[ReportFile],
    policy: Policy | None = None,
    noise: NoiseKnowledge | None = None,
    earlier: EarlierAttempt | None = None,
    *,
    attempt: int = 1,
    accepted: Sequence[Accepted] = (),
) -> Judgement:
    """Judge ``report`` (both sides read, or a report's files with ``base/`` and ``head/``).

    ``earlier``: the samples of the attempt before ``attempt`` when this one is its
    confirmation; then both attempts' runs are compared together, and of what the
    earlier one would have called red, each metric says whether it held. ``accepted``:
    the PR's standing acceptances; a regression whose acceptance holds is not pending.
    """
    if not isinstance(report, ReadReport):
        report = read_report(report)
    policy = policy or Policy()
    lined_up: tuple[Notice, ...] = report.lined_up
    if earlier is None:
        comparison = acceptance.judge(compare(report.base, report.head, policy, noise), accepted)
        return Judgement(comparison, report, confirm.pending(comparison), notices=lined_up)
    first_base = confirm.earlier_side(earlier.base, report.base)
    first_head = confirm.earlier_side(earlier.head, report.head)
    if _same_runs(first_base, report.base) and _same_runs(first_head, report.head):
        # The confirming attempt uploaded no report of its own (GitHub lists the run's
        # artifacts across attempts): the first attempt's runs, read twice, would
        # "confirm" themselves. Called on the one attempt instead.
        comparison = acceptance.judge(compare(report.base, report.head, policy, noise), accepted)
        notices = (*lined_up, RepeatedAttempt(attempt))
        return Judgement(comparison, report, notices=notices, repeated=True)
    # What the first attempt would have called red, judged again with both attempts' runs.
    keys = confirm.pending(compare(first_base, first_head, policy, noise))
    both = compare(
        confirm.combine(dict(earlier.base), report.base),
        confirm.combine(dict(earlier.head), report.head),
        policy,
        noise,
    )
    comparison = acceptance.judge(confirm.settle(both, keys), accepted)
    if not keys:
        # Nothing of the first attempt's was waiting for this one: nothing to settle, and
        # no notice saying so.
        return Judgement(comparison, report, notices=lined_up)
    held = min(len(confirm.pending(both)), len(keys))
    settled = Settled(attempt, held, len(keys) - held)
    return Judgement(comparison, report, settled=keys, notices=(*lined_up, settled))


def hold(judgement: Judgement, *, run_id: int, attempt: int) -> Judgement:
    """The judgement while attempt ``attempt`` of run ``run_id`` confirms what is pending:
    those metrics are not red yet."""
    comparison = confirm.hold(judgement.comparison, judgement.pending)
    notice = Confirming(len(judgement.pending), attempt, run_id)
    return replace(judgement, comparison=comparison, notices=(*judgement.notices, notice))


def not_confirmed(judgement: Judgement, reason: NoConfirmation, detail: str = "") -> Judgement:
    """The judgement when no second attempt could be started: called at once, and said."""
    notice = NotConfirmed(reason, detail)
    return replace(judgement, notices=(*judgement.notices, notice))


def _same_runs(earlier: SideReport, now: SideReport) -> bool:
    return earlier.series.keys() == now.series.keys() and all(
        earlier.series[key].samples == series.samples for key, series in now.series.items()
    )
