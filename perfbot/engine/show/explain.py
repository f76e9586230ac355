"""A verdict in words: the change in its own units, the noise band it had to leave, where
that band came from, and how clearly the move left it.

Shared by the PR comment (``sections``) and the terminal table (``cli/terminal``). The
text here is plain and unescaped: a band's evidence names a branch and a commit, so each
caller escapes it for its medium (``escape.text`` for markdown, ``terminal.safe`` for a
terminal).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perfbot.engine.judge.compare import MOVED, MetricResult
from perfbot.engine.judge.noise import Source
from perfbot.engine.show.numbers import MINUS, PLAIN_MAGNITUDES, format_number, two_digits
from perfbot.model import Scale

# A move at least this many times its band is "clear"; beyond the band but short of this
# it is "likely". At the band's edge chance alone would do it once in a thousand times
# *if* the noise estimate is right, and it may rest on a handful of runs: not yet clear.
CLEAR = 2.0
# What makes a single run of a stochastic tool judgeable, on every path; the App's
# comment adds its re-run command (``hint``).
REPEAT_HINT = "repeat each case ×3"
RERUN_HINT = "`/perfbot rerun`"

_UNITS = {Scale.RATIO: " %", Scale.POINTS: " pp", Scale.COUNT: ""}
# From this half-width on (in percent), a ratio band's two edges differ by a tenth or
# more and are both given.
LOPSIDED = 10.0
# Beyond this half-width (in percent) a band says nothing a reader can use ("−100/+15,000,000
# %": a side near zero, such as UDP jitter of 0.00004–0.0023 ms): it is given in the metric's
# own unit instead, "±0.0042 ms", as loss is in points.
UNREADABLE_PERCENT = 100.0


def amount(value: float, scale: Scale) -> str:
    """A signed change in its scale's units: ``−6.24 %``, ``+5.70 pp``, ``+12``."""
    if scale is Scale.COUNT:
        if value == 0:
            return "0"
        return f"{'+' if value > 0 else MINUS}{format_number(abs(value))}"
    unit = _UNITS[scale]
    if round(value, 2) == 0:
        return f"0.00{unit}"
    sign = "+" if value > 0 else MINUS
    if abs(value) >= 10 ** PLAIN_MAGNITUDES[1]:
        return f"{sign}{format_number(abs(value))}{unit}"
    return f"{sign}{abs(value):,.2f}{unit}"


def change_text(metric: MetricResult) -> str:
    """The change, or ``from 0`` where a ratio metric left zero (no percentage exists)."""
    if metric.change_pct is None:
        return "from 0"
    return amount(metric.change_pct, metric.scale)


def limit_text(value: float, scale: Scale) -> str:
    """An unsigned limit in its scale's units: ``5 %``, ``1 pp``, ``10``."""
    return f"{value:g}{_UNITS[scale]}"


def beyond_tolerance(tolerance: float, scale: Scale) -> str:
    """``beyond 5 % tolerance``; a counter has no unit to put before the word."""
    if scale is Scale.COUNT:
        return f"beyond the tolerance of {limit_text(tolerance, scale)}"
    return f"beyond {limit_text(tolerance, scale)} tolerance"


@dataclass(frozen=True, slots=True)
class Band:
    """The noise band of one metric: ``±3.8 %``, where it came from (untrusted text:
    the caller escapes it), and the confidence of the move in words ("" if it did not
    move)."""

    width: str
    evidence: str
    confidence: str
    # The metric's unit after ``width`` when the band is in it (untrusted: the caller
    # escapes it), "" when the band is in percent, points or counts.
    unit: str = ""


def band(metric: MetricResult) -> Band | None:
    """The band of a stochastic metric judged against its noise, moved or not; None for
    a deterministic tool (the floor alone decides), an unknown noise or an empty band."""
    noise, width = metric.noise, metric.band
    if noise is None or noise.source is Source.DETERMINISTIC or width is None:
        return None
    if not math.isfinite(width) or width <= 0:
        return None
    up, down = width, width
    if metric.scale is Scale.RATIO:
        # Judged in logs: the band's edges are ×(1 + w) up and ÷(1 + w) down.
        down = -math.expm1(-math.log1p(width / 100)) * 100
    confidence = _confidence(metric, up, down)
    in_unit = metric.unit_band
    if metric.scale is Scale.RATIO and up > UNREADABLE_PERCENT and _usable(in_unit):
        assert in_unit is not None
        return Band(f"±{two_digits(in_unit)}", noise.evidence, confidence, metric.unit)
    return Band(_width(up, down, metric.scale), noise.evidence, confidence)


def _usable(width: float | None) -> bool:
    return width is not None and math.isfinite(width) and width > 0


def _width(up: float, down: float, scale: Scale) -> str:
    """``±3.8 %``; a band this wide is lopsided, so both edges: ``−74/+290 %``."""
    if scale is Scale.RATIO and up >= LOPSIDED:
        return f"{MINUS}{two_digits(down)}/+{two_digits(up)}{_UNITS[scale]}"
    return f"±{two_digits(up)}{_UNITS[scale]}"


def _confidence(metric: MetricResult, up: float, down: float) -> str:
    if metric.verdict not in MOVED or metric.change_pct is None:
        return ""
    edge = up if metric.change_pct > 0 else down
    times = abs(metric.change_pct) / edge
    if times >= CLEAR:
        return f"clear ({_times(times)} the band)"
    if times > 1:
        return f"likely ({_times(times)} the band)"
    # The robust test on the medians called it while the means stayed inside the band
    # (one outlier run widens the t test's spread): real, but say what it rests on.
    return "likely (the medians stand apart)"


def _times(value: float) -> str:
    return f"{two_digits(value)}×" if value < 100 else "over 100×"


def hint(rerun: bool) -> str:
    """What would make an uncertain metric judgeable; ``rerun`` only where the App serves."""
    return f"{REPEAT_HINT}, or {RERUN_HINT}" if rerun else REPEAT_HINT
