"""Helpers the parsers share: strict JSON, number checks, names, units and directions."""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any, Final

from perfbot.errors import ParseError
from perfbot.model import Better


def load_json(text: str, path: str, format: str) -> Any:
    """Parse JSON, refusing NaN/Infinity and absurd nesting, as a ParseError.

    The parsers only look up known keys, never walk a document recursively, so nesting
    matters only where the JSON decoder itself gives up (RecursionError).
    """

    def refuse_constant(name: str) -> Any:
        raise ParseError(path, format, f"the number {name} is not allowed")

    try:
        value = json.loads(text, parse_constant=refuse_constant)
    except RecursionError:
        raise ParseError(path, format, "the JSON is nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ParseError(
            path, format, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except ParseError:
        raise
    except ValueError:
        # Python refuses integers of more than 4,300 digits (CVE-2020-10735 guard).
        raise ParseError(path, format, "the JSON holds an absurdly long number") from None
    return value


def finite_number(value: Any) -> float | None:
    """``value`` as a finite float, or None when it is not a real, finite number.

    Booleans are not numbers here, and neither are strings: a report that says
    ``"12.5"`` where a number belongs is read by the parser that expects that.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def number_from_text(text: str) -> float | None:
    """A decimal written in a report (``"13.099"``, ``"3,001,058"``) as a finite float."""
    if text.isascii() and text.replace(".", "", 1).isdigit():
        # Digits with at most one point (most values): what the pattern below accepts.
        number = float(text)
        return number if math.isfinite(number) else None
    cleaned = text.strip().replace(",", "")
    if not re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", cleaned):
        return None
    number = float(cleaned)
    return number if math.isfinite(number) else None


_LOWER_IS_BETTER = re.compile(
    r"(latency|_us$|_ms$|_ns$|_s$|time|jitter|lost|loss|drop|error|err$|retrans|rtt|"
    r"miss|fail|cpu|used_ram|used_rom|_rt$|rst|dup|usage)",
    re.IGNORECASE,
)

_UNIT_SUFFIXES = (
    ("_gbps", "Gbps"),
    ("_mbps", "Mbps"),
    ("_kbps", "kbps"),
    ("_bps", "bps"),
    ("_pps", "pps"),
    ("_us", "µs"),
    ("_ms", "ms"),
    ("_ns", "ns"),
    ("_percent", "%"),
    ("_pct", "%"),
    ("_bytes", "B"),
)


# As many names as a big report has (20,000 metrics), so a second side's are all known.
_NAMES_KNOWN: Final = 1 << 16


@functools.lru_cache(maxsize=_NAMES_KNOWN)
def guess_better(name: str) -> Better:
    """Direction of a metric known only by name: latencies, losses, errors go down."""
    return Better.LOWER if _LOWER_IS_BETTER.search(name) else Better.HIGHER


@functools.lru_cache(maxsize=_NAMES_KNOWN)
def guess_unit(name: str) -> str:
    """Unit of a metric known only by name (``udp4_mbps`` → ``Mbps``), else empty."""
    lowered = name.lower()
    for suffix, unit in _UNIT_SUFFIXES:
        if lowered.endswith(suffix):
            return unit
    return ""


def kind_of(value: Any) -> str:
    """What a JSON value is, in words, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def shown_value(value: Any) -> str:
    """``value`` as JSON, short and ASCII-only, so a hostile value cannot flood a message."""
    shown = json.dumps(value)
    return shown if len(shown) <= 60 else shown[:59] + "…"
