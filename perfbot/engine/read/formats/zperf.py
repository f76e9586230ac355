"""Zephyr zperf console logs: ``ZPERF-RESULT <marker>=<value>`` lines and ``ZPERF-DONE``."""

from __future__ import annotations

import re
import string

from perfbot.engine.read.formats._base import Format
from perfbot.engine.read.formats._common import guess_better, guess_unit, number_from_text
from perfbot.errors import ParseError
from perfbot.model import (
    Better,
    FailedCase,
    Measurement,
    ParseContext,
    Parsed,
    Scale,
    Settings,
    quick_measurement,
    settings_of,
)

NAME = "zperf"
INCOMPLETE_REASON = "zperf run incomplete: no ZPERF-DONE line (the run was cut short or timed out)"

# Searched, never anchored, like twister does: console lines may carry a timestamp, a
# log-level prefix or QEMU noise. The value stops at anything that cannot be part of a
# number (an ANSI colour code, a CR), and number_from_text decides whether it is one.
_RESULT = re.compile(r"ZPERF-RESULT (?P<marker>[A-Za-z0-9_.-]+)=(?P<value>[0-9A-Za-z.,+-]*)")
_SNIFF_RESULT = re.compile(r"ZPERF-RESULT [A-Za-z0-9_.-]+=[+-]?\.?[0-9]")
_TAG = "ZPERF-RESULT"
# A line's first result and the rest of its line, to wherever str.splitlines breaks it: a
# result never spans a line, so one scan of a whole log finds what a read line by line
# finds (a second result on a line is not taken, as the line's search does not take it).
_FIRST_RESULT_OF_LINE = re.compile(
    _RESULT.pattern + r"[^\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]*"
)
# execute_upload() in Zephyr's zperf_shell.c, before "Starting...".
_STATED = (
    ("duration", re.compile(r"Duration:\s+(\d+(?:\.\d+)?\s*[mu]?s)\s*$")),
    ("packet_size", re.compile(r"Packet size:\s+(\d+) bytes\s*$")),
    ("rate_kbps", re.compile(r"Rate:\s+(\d+) kbps\s*$")),
)
_STARTING = "Starting..."
_DONE = "ZPERF-DONE"

# A console log may open with a bracketed prefix ("[00:00:01.000,000] <inf> ..."), which a
# JSON array never does: its first line would hold a quote, a brace or nothing after "]".
_LOG_BRACKET = re.compile(r"\[[^\[\]{}\"\n]*\][ \t]*\S")


def sniff(head: str, path: str) -> float:
    """1.0 when the head holds a ``ZPERF-RESULT name=number`` line outside JSON, else 0."""
    if _looks_like_json(head):
        # A twister.json may quote zperf lines inside its logs; that file is not ours.
        return 0.0
    return 1.0 if _SNIFF_RESULT.search(head) else 0.0


def _looks_like_json(head: str) -> bool:
    stripped = head.lstrip("\ufeff" + string.whitespace)
    if stripped.startswith("{"):
        return True
    return stripped.startswith("[") and _LOG_BRACKET.match(stripped) is None


def parse(text: str, context: ParseContext) -> Parsed:
    """Every printed result as a sample; a missing ``ZPERF-DONE`` adds a failure."""
    measurements, printed = _measurements(text, context.platform)
    if not printed:
        raise ParseError(context.path, NAME, "no ZPERF-RESULT line")
    return Parsed(tuple(measurements), _failures(text, context))


def _measurements(text: str, platform: str) -> tuple[list[Measurement], int]:
    """The samples of every result line, in console order, and how many result lines the
    log printed (a value that is no number is no sample). Each sample is made as its
    line is met: a log of 5,000 results once held them all as tuples, then as samples."""
    measurements: list[Measurement] = []
    printed = 0
    kinds: dict[str, tuple[str, Better]] = {}
    for settings, results in _printed(text):
        printed += len(results)
        for marker, written in results:
            value = number_from_text(written)
            if value is None:
                # nan, inf, an overflowing or garbled value: not a number to compare.
                continue
            kind = kinds.get(marker)
            if kind is None:
                kind = kinds[marker] = (guess_unit(marker), guess_better(marker))
            unit, better = kind
            # Every field by position: keywords cost the call as much again.
            made = quick_measurement(platform, marker, value, unit, better, Scale.RATIO, settings)
            measurements.append(made)
    return measurements, printed


def _printed(text: str) -> list[tuple[Settings, list[tuple[str, str]]]]:
    """The results printed under each settings, in console order: (settings, [(marker,
    value as printed), ...]) for each stretch of the log between two ``Starting...``.

    The zperf shell states an upload's parameters before it starts (``Duration:``,
    ``Packet size:``, ``Rate:``, then ``Starting...``); the statistics it prints after
    reuse those words for measured values, so only the lines before ``Starting...``
    count. The loopback self-test states none: its fingerprint is empty, and its whole
    log is one scan (``_FIRST_RESULT_OF_LINE``) instead of a regex search per line.
    """
    if _STARTING not in text:
        return [((), _FIRST_RESULT_OF_LINE.findall(text))]
    stretches: list[tuple[Settings, list[tuple[str, str]]]] = []
    results: list[tuple[str, str]] = []
    stated: dict[str, str] = {}
    current: Settings = ()
    for line in text.splitlines():
        # The substring test skips the bulk of a long console log before any regex runs.
        match = _RESULT.search(line) if _TAG in line else None
        if match is not None:
            results.append((match["marker"], match["value"]))
            continue
        for name, pattern in _STATED:
            said = pattern.search(line)
            if said:
                stated[name] = " ".join(said.group(1).split())
        if _STARTING in line:
            stretches.append((current, results))
            current, stated, results = settings_of(**stated), {}, []
    stretches.append((current, results))
    return stretches


def _failures(text: str, context: ParseContext) -> tuple[FailedCase, ...]:
    if _DONE in text:
        return ()
    # The numbers printed before the cut stay usable; the failure says the rest is missing.
    return (
        FailedCase(
            platform=context.platform,
            case=context.case,
            reason=INCOMPLETE_REASON,
            whole_platform=False,
        ),
    )


FORMAT = Format(
    name=NAME,
    reads="Zephyr zperf console log (ZPERF-RESULT lines)",
    sniff=sniff,
    parse=parse,
    # Under QEMU icount the same code gives the same numbers, run after run.
    deterministic=True,
)
