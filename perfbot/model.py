"""The data every layer shares: measurements, failed cases, directions."""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

DEFAULT_PLATFORM = "default"
_Args = ParamSpec("_Args")
_Made = TypeVar("_Made")


class Better(enum.StrEnum):
    """Which way a metric should move to be an improvement."""

    HIGHER = "higher"
    LOWER = "lower"


class Scale(enum.StrEnum):
    """How a change of the metric is measured.

    RATIO: relative to the base (throughput, latency, rates). POINTS: a percentage judged
    by its difference in percentage points (UDP loss: 0 → 5.7 % has no ratio). COUNT: a
    counter judged by its difference in counts (retransmits, errors, lost packets).
    """

    RATIO = "ratio"
    POINTS = "points"
    COUNT = "count"


# A run's settings that must match for two measurements to be comparable (iperf3's
# protocol, streams, duration, offered rate…): sorted (name, value) pairs, values as text.
Settings = tuple[tuple[str, str], ...]


def settings_of(**values: object) -> Settings:
    """A fingerprint from keyword values; None values are left out, the rest are text."""
    return tuple(sorted((k, _setting_text(v)) for k, v in values.items() if v is not None))


def _setting_text(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def quick_constructor(cls: Callable[_Args, _Made]) -> Callable[_Args, _Made]:
    """A faster maker of ``cls``, a frozen dataclass with slots, for the engine's hot
    paths: the same arguments, the same instance (of ``cls``: equal, hashable, frozen,
    ``__post_init__`` run), at a fraction of the cost (a third, for a ``MetricResult``).

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``
    (its own ``__setattr__`` refuses), a call per field: 18 for a ``MetricResult``. A
    mutable twin of the same slots stores them as plain attributes, then hands the
    instance to ``cls`` by ``__class__`` assignment, which CPython allows between two
    classes of one layout (the same base and the same slots, checked at assignment).
    """
    if not (
        isinstance(cls, type)
        and dataclasses.is_dataclass(cls)
        and getattr(cls, "__dataclass_params__").frozen  # noqa: B009 (no stub for it)
        and "__slots__" in vars(cls)
        and all(f.init for f in dataclasses.fields(cls))
    ):
        raise TypeError(f"{cls!r} is no frozen dataclass with slots whose fields all init")
    made: type[Any] = cls
    checked = getattr(made, "__post_init__", None)

    def handed_over(self: Any) -> None:
        self.__class__ = made
        if checked is not None:
            checked(self)

    fields = [
        (
            f.name,
            f.type,
            dataclasses.field(
                default=f.default, default_factory=f.default_factory, kw_only=f.kw_only
            ),
        )
        for f in dataclasses.fields(made)
    ]
    return dataclasses.make_dataclass(
        f"_{made.__name__}Twin",
        fields,
        namespace={"__post_init__": handed_over},
        slots=True,
    )


@dataclass(frozen=True, slots=True)
class Measurement:
    """One sample of one metric on one platform, as read from one report file."""

    platform: str
    metric: str
    value: float
    unit: str
    better: Better
    scale: Scale = Scale.RATIO
    settings: Settings = ()

    def __post_init__(self) -> None:
        # Parsers must never hand over a non-finite number: a NaN compares false with
        # everything and would silently turn a broken run into "unchanged".
        if not math.isfinite(self.value):
            raise ValueError(f"measurement {self.metric!r} is not a finite number")


# Made once per sample on the readers' hot paths (20,000 metrics a report).
quick_measurement = quick_constructor(Measurement)


@dataclass(frozen=True, slots=True)
class FailedCase:
    """A case that ran but produced no usable number, with the reason in one line.

    ``case`` names the case; metrics called ``case`` or ``case.<something>`` belong to
    it. ``whole_platform`` says the failure covers every metric of the platform (a
    twister suite that did not pass, a zperf run that never finished).
    """

    platform: str
    case: str
    reason: str
    whole_platform: bool = False

    def covers(self, metric: str) -> bool:
        return self.whole_platform or metric == self.case or metric.startswith(self.case + ".")


@dataclass(frozen=True, slots=True)
class ParseContext:
    """What a parser knows about a file beyond its text."""

    path: str
    platform: str = DEFAULT_PLATFORM
    case: str = "report"


@dataclass(frozen=True, slots=True)
class Parsed:
    """Everything one report file yielded."""

    measurements: tuple[Measurement, ...] = ()
    failures: tuple[FailedCase, ...] = ()
