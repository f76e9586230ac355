"""Zephyr twister.json: recordings of passed suites per platform, other suites as failures."""

from __future__ import annotations

import re
import string
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from perfbot.engine.read.formats._base import Format
from perfbot.engine.read.formats._common import (
    finite_number,
    guess_better,
    guess_unit,
    load_json,
    number_from_text,
)
from perfbot.errors import ParseError
from perfbot.model import FailedCase, Measurement, ParseContext, Parsed

NAME = "twister"
MAX_REASON = 200

# Built only, filtered out or skipped on purpose: nothing ran, and nothing failed either.
_NOT_RUN = frozenset({"skipped", "filtered", "not run"})
_PATH_SEPARATORS = re.compile(r"[/\\]")


@dataclass(frozen=True, slots=True)
class _Suite:
    """A passed suite with its numeric recordings, in console order."""

    name: str
    platform: str
    records: tuple[tuple[str, float], ...]


def sniff(head: str, path: str) -> float:
    """1.0 for a JSON object whose head names ``testsuites`` and twister's environment."""
    if not head.lstrip("\ufeff" + string.whitespace).startswith("{"):
        return 0.0
    # Keys only, with their quotes: twister writes "key":value without a space.
    if '"testsuites"' not in head:
        return 0.0
    return 1.0 if '"environment"' in head or '"zephyr_version"' in head else 0.0


def parse(text: str, context: ParseContext) -> Parsed:
    """Measurements from passed suites' recordings; a failure per suite that did not pass."""
    passed: list[_Suite] = []
    failures: list[FailedCase] = []
    for entry in _testsuites(text, context.path):
        if not isinstance(entry, dict):
            continue
        name = _text(entry.get("name")) or context.case
        platform = _text(entry.get("platform")) or context.platform
        status = _text(entry.get("status"))
        state = status.strip().lower()
        if state == "passed":
            passed.append(_Suite(name, platform, tuple(_records(entry.get("recording")))))
        elif state not in _NOT_RUN:
            failures.append(_failure(entry, name, platform, status))
    return Parsed(tuple(_measurements(passed)), tuple(failures))


def _testsuites(text: str, path: str) -> list[Any]:
    data = _load(text, path)
    if not isinstance(data, dict):
        raise ParseError(path, NAME, "the top level is not a JSON object")
    suites = data.get("testsuites")
    if not isinstance(suites, list):
        raise ParseError(path, NAME, 'there is no "testsuites" list')
    return suites


def _load(text: str, path: str) -> Any:
    try:
        return load_json(text, path, NAME)
    except ParseError:
        raise
    except ValueError:
        # json.loads refuses integers longer than Python's digit limit with a bare ValueError.
        raise ParseError(path, NAME, "a number in the JSON is too long") from None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _records(recording: Any) -> Iterator[tuple[str, float]]:
    # merge: true turns repeated keys into lists and as_json gives dicts; neither is one number.
    if not isinstance(recording, list):
        return
    for record in recording:
        if not isinstance(record, dict):
            continue
        for key, raw in record.items():
            value = number_from_text(raw) if isinstance(raw, str) else finite_number(raw)
            if key and value is not None:
                yield key, value


def _measurements(suites: list[_Suite]) -> Iterator[Measurement]:
    owners: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
    for suite in suites:
        for key, _ in suite.records:
            owners[suite.platform, key].add(suite.name)
    prefixes = _prefixes(suites)
    for suite in suites:
        for key, value in suite.records:
            shared = len(owners[suite.platform, key]) > 1
            metric = f"{prefixes[suite.platform, suite.name]}.{key}" if shared else key
            # Unit and direction come from the key alone: a suite name such as
            # "timeout_check" must not turn a throughput into lower-is-better.
            yield Measurement(suite.platform, metric, value, guess_unit(key), guess_better(key))


def _prefixes(suites: list[_Suite]) -> dict[tuple[str, str], str]:
    """The metric prefix of each (platform, suite): its short name, unless that is ambiguous."""
    full_names: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
    for suite in suites:
        full_names[suite.platform, _short_name(suite.name)].add(suite.name)
    prefixes: dict[tuple[str, str], str] = {}
    for suite in suites:
        short = _short_name(suite.name)
        # Two suites "a/x" and "b/x" on one platform would meet again under "x".
        unique = len(full_names[suite.platform, short]) == 1
        prefixes[suite.platform, suite.name] = short if unique else suite.name
    return prefixes


def _short_name(name: str) -> str:
    return _PATH_SEPARATORS.split(name)[-1] or name


def _failure(entry: dict[str, Any], name: str, platform: str, status: str) -> FailedCase:
    # The suite's log is never read: it can be hundreds of kB and belongs in the CI output.
    label = status.strip() or "no status"
    detail = _text(entry.get("reason")).strip() or "no reason given"
    return FailedCase(
        platform=platform,
        case=_short_name(name),
        reason=_one_line(f"twister: {label}: {detail}"),
        whole_platform=True,
    )


def _one_line(text: str) -> str:
    # Only a bounded head is cleaned, so a reason as long as a log costs nothing.
    head = text[: MAX_REASON * 4]
    line = " ".join("".join(ch if ch.isprintable() else " " for ch in head).split())
    if len(line) > MAX_REASON or len(text) > len(head):
        return line[: MAX_REASON - 1] + "…"
    return line


FORMAT = Format(
    name=NAME,
    reads="Zephyr twister.json (recordings per suite and platform)",
    sniff=sniff,
    parse=parse,
    # Under QEMU icount the same code gives the same numbers, run after run.
    deterministic=True,
)
