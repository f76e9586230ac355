"""Shared parser helpers: strict JSON and number reading."""

from __future__ import annotations

import pytest

from perfbot.engine.read.formats._common import (
    finite_number,
    guess_better,
    guess_unit,
    load_json,
    number_from_text,
)
from perfbot.errors import ParseError
from perfbot.model import Better


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param('{"a": NaN}', "NaN", id="nan"),
        pytest.param('{"a": -Infinity}', "-Infinity", id="infinity"),
        pytest.param("[" * 100_000 + "]" * 100_000, "nested too deeply", id="deep-recursion"),
        pytest.param('{"a": ' + "9" * 5000 + "}", "absurdly long number", id="huge-int"),
        pytest.param('{"a": 1', "invalid JSON at line 1", id="truncated"),
    ],
)
def test_load_json_refuses_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        load_json(text, "x.json", "test")


def test_load_json_accepts_plain_documents() -> None:
    assert load_json('{"a": [1, 2.5]}', "x.json", "test") == {"a": [1, 2.5]}


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1, 1.0), (2.5, 2.5), (True, None), ("3", None), (10**400, None), (None, None)],
)
def test_finite_number(value: object, expected: float | None) -> None:
    assert finite_number(value) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("13.099", 13.099),
        ("3,001,058", 3001058.0),
        (" -2e3 ", -2000.0),
        ("1e999", None),
        ("nan", None),
        ("12 Mbps", None),
        ("", None),
    ],
)
def test_number_from_text(text: str, expected: float | None) -> None:
    assert number_from_text(text) == expected


@pytest.mark.parametrize(
    ("name", "better", "unit"),
    [
        ("udp4_mbps", Better.HIGHER, "Mbps"),
        ("p99_latency_us", Better.LOWER, "µs"),
        ("jitter_ms", Better.LOWER, "ms"),
        ("lost_percent", Better.LOWER, "%"),
        ("transactions", Better.HIGHER, ""),
    ],
)
def test_guesses_by_name(name: str, better: Better, unit: str) -> None:
    assert guess_better(name) is better
    assert guess_unit(name) == unit
