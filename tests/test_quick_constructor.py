"""``quick_constructor``: the engine's faster makers give exactly what the classes' own
constructors give (same class, equal, same hash, still frozen, still checked)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from perfbot.engine.judge import compare
from perfbot.engine.judge.noise import DETERMINISTIC
from perfbot.engine.judge.results import (
    MetricResult,
    Stats,
    Verdict,
    quick_metric_result,
    quick_stats,
)
from perfbot.model import (
    Better,
    FailedCase,
    Measurement,
    Scale,
    quick_constructor,
    quick_measurement,
)

STATS = Stats(1.0, 0.5, 2.0, (0.5, 1.0, 2.0))
CASES: list[tuple[Any, Any, tuple[Any, ...], dict[str, Any]]] = [
    (Measurement, quick_measurement, ("lab", "tcp_mbps", 9.5, "Mbps", Better.HIGHER), {}),
    (
        Measurement,
        quick_measurement,
        ("lab", "lost", 3.0, "", Better.LOWER),
        {"scale": Scale.COUNT, "settings": (("duration", "10"),)},
    ),
    (Stats, quick_stats, (1.0, 0.5, 2.0, (0.5, 1.0, 2.0)), {}),
    (
        MetricResult,
        quick_metric_result,
        ("tcp_mbps", "Mbps", Better.HIGHER, STATS, STATS, -6.5, Verdict.REGRESSED),
        {"beyond_tolerance": True, "note": "n", "noise": DETERMINISTIC, "band": 0.0},
    ),
    (
        MetricResult,
        quick_metric_result,
        ("m", "", Better.LOWER, None, STATS, None, Verdict.NEW),
        {},
    ),
    (
        compare._Move,
        compare._quick_move,
        (Verdict.IMPROVED, 2.5, "", False, DETERMINISTIC, 0.0),
        {},
    ),
]


@pytest.mark.parametrize(("cls", "quick", "args", "kwargs"), CASES)
def test_quick_instances_are_the_class_own(
    cls: Any, quick: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    made, expected = quick(*args, **kwargs), cls(*args, **kwargs)
    assert type(made) is cls
    assert made == expected
    assert hash(made) == hash(expected)
    assert repr(made) == repr(expected)
    assert dataclasses.astuple(made) == dataclasses.astuple(expected)
    name = dataclasses.fields(cls)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, name, getattr(made, name))
    assert dataclasses.replace(made) == expected


def test_quick_measurement_still_refuses_a_non_finite_value() -> None:
    with pytest.raises(ValueError, match="not a finite number"):
        quick_measurement("lab", "tcp_mbps", float("nan"), "Mbps", Better.HIGHER)


def test_quick_maker_refuses_what_it_cannot_make_alike() -> None:
    @dataclasses.dataclass(slots=True)
    class Mutable:
        value: int

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        value: int

    for cls in (Mutable, NoSlots, int):
        with pytest.raises(TypeError, match="no frozen dataclass with slots"):
            quick_constructor(cls)
    # A frozen class with slots is accepted: FailedCase has a default, kept as it is.
    assert quick_constructor(FailedCase)("lab", "case", "why") == FailedCase("lab", "case", "why")


def test_quick_maker_keeps_keyword_only_fields_keyword_only() -> None:
    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class Named:
        value: int
        label: str = "x"

    quick = quick_constructor(Named)
    assert quick(value=3) == Named(value=3)
    with pytest.raises(TypeError):
        quick(3)  # type: ignore[call-arg]
