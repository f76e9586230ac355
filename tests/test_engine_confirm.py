"""perfbot.engine.judge.confirm: what is held while confirming, and how two attempts settle it."""

from __future__ import annotations

from perfbot.engine.judge import confirm
from perfbot.engine.judge.compare import Verdict, compare
from perfbot.engine.judge.judgement import EarlierAttempt, judge_report
from perfbot.engine.judge.notices import Settled
from perfbot.engine.read.report import ReadReport
from perfbot.engine.read.sides import SideReport
from tests.builders import side

PLATFORM = "qemu_x86/atom"
STEADY = [100.0, 100.05, 99.95]


def stochastic(values: dict[str, float | list[float]]) -> SideReport:
    return side(values, deterministic=False)


def test_only_stochastic_regressions_beyond_tolerance_are_pending() -> None:
    base = stochastic({"drop": STEADY, "small": STEADY, "gain": STEADY})
    head = stochastic(
        {"drop": [90.0, 90.05, 89.95], "small": [97.0, 97.05, 96.95], "gain": [110.0, 110.1, 109.9]}
    )
    comparison = compare(base, head)
    assert confirm.pending(comparison) == ((PLATFORM, "drop"),)
    # Deterministic numbers are called at once.
    assert confirm.pending(compare(side({"drop": 100.0}), side({"drop": 90.0}))) == ()


def test_a_held_metric_is_not_red_and_says_why() -> None:
    comparison = compare(stochastic({"drop": STEADY}), stochastic({"drop": [90.0, 90.05, 89.95]}))
    held = confirm.hold(comparison, confirm.pending(comparison))
    (metric,) = held.platforms[0].metrics
    assert metric.verdict is Verdict.REGRESSED
    assert not metric.beyond_tolerance
    assert metric.note == confirm.CONFIRMING
    assert held.regressed_beyond_tolerance == 0


def test_a_red_that_appears_only_when_combined_is_not_called() -> None:
    # Attempt 1 flagged nothing; the combination flags "late": one attempt made it red.
    both = compare(stochastic({"late": STEADY * 2}), stochastic({"late": [90.0, 90.05, 89.95] * 2}))
    settled = confirm.settle(both, keys=())
    (metric,) = settled.platforms[0].metrics
    assert not metric.beyond_tolerance
    assert metric.note.endswith(confirm.UNCONFIRMED)


def test_a_confirmed_red_stays_red() -> None:
    both = compare(stochastic({"drop": STEADY * 2}), stochastic({"drop": [90.0, 90.05, 89.95] * 2}))
    settled = confirm.settle(both, keys=((PLATFORM, "drop"),))
    (metric,) = settled.platforms[0].metrics
    assert metric.beyond_tolerance
    assert metric.note.endswith(confirm.CONFIRMED)


def test_a_second_attempt_settles_only_what_the_first_held() -> None:
    base = stochastic({"drop": STEADY, "flat": STEADY})
    head = stochastic({"drop": [90.0, 90.05, 89.95], "flat": STEADY})
    key = (PLATFORM, "drop")
    earlier = EarlierAttempt(
        base=[(key, STEADY), ((PLATFORM, "flat"), STEADY)],
        head=[(key, [90.0, 90.1, 89.9]), ((PLATFORM, "flat"), STEADY)],
    )
    judged = judge_report(ReadReport(base, head), earlier=earlier, attempt=2)
    assert judged.settled == (key,)
    assert [n for n in judged.notices if isinstance(n, Settled)] == [Settled(2, 1, 0)]


def test_a_second_attempt_with_nothing_held_has_no_settled_notice() -> None:
    # Attempt 1 would have called nothing red: attempt 2 settles nothing and says nothing
    # of it (no "Settled" with empty keys).
    base = stochastic({"flat": STEADY})
    head = stochastic({"flat": [100.02, 99.97, 100.01]})
    earlier = EarlierAttempt(
        base=[((PLATFORM, "flat"), STEADY)], head=[((PLATFORM, "flat"), STEADY)]
    )
    judged = judge_report(ReadReport(base, head), earlier=earlier, attempt=2)
    assert judged.settled == ()
    assert not [n for n in judged.notices if isinstance(n, Settled)]
