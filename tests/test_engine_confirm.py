"""perfbot.engine.judge.confirm: what is held while confirming, and how two attempts settle it."""

from __future__ import annotations

from perfbot.engine.judge import confirm
from perfbot.engine.judge.compare import Verdict, compare
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
