"""The service's log lines: one JSON object each, its time to the millisecond in UTC."""

from __future__ import annotations

import json
import logging

from perfbot.support.logs import JsonFormatter


def record(created: float, message: str = "done", **extra: object) -> logging.LogRecord:
    made = logging.LogRecord("perfbot.worker", logging.INFO, __file__, 1, message, (), None)
    made.created = created
    made.msecs = int((created - int(created)) * 1000) + 0.0
    made.__dict__.update(extra)
    return made


def test_a_line_says_when_what_and_of_which_delivery() -> None:
    line = JsonFormatter().format(record(1_764_642_528.141, delivery="d-1", job=7, attempt=1))
    assert json.loads(line) == {
        "time": "2025-12-02T02:28:48.141Z",
        "level": "info",
        "logger": "perfbot.worker",
        "message": "done",
        "delivery": "d-1",
        "job": 7,
        "attempt": 1,
    }


def test_each_line_has_its_own_time_within_and_across_seconds() -> None:
    formatter = JsonFormatter()
    times = [1_764_642_528.125, 1_764_642_528.875, 1_764_642_529.0, 1_764_642_588.5]
    stamps = [json.loads(formatter.format(record(t)))["time"] for t in times]
    assert stamps == [
        "2025-12-02T02:28:48.125Z",
        "2025-12-02T02:28:48.875Z",
        "2025-12-02T02:28:49.000Z",
        "2025-12-02T02:29:48.500Z",
    ]


def test_a_line_orjson_refuses_is_written_all_the_same() -> None:
    # A lone surrogate (from a payload's text) and an int past 64 bits: json writes them.
    line = JsonFormatter().format(record(1_764_642_528.0, "bad \udc80 text", job=2**70))
    assert json.loads(line)["message"] == "bad \udc80 text"
    assert json.loads(line)["job"] == 2**70


def test_a_line_keeps_text_as_it_is_not_escaped() -> None:
    line = JsonFormatter().format(record(1_764_642_528.0, "zperf on n\u00e9t \u2014 ok"))
    assert "zperf on n\u00e9t \u2014 ok" in line
