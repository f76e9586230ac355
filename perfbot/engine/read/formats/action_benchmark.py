"""github-action-benchmark's custom JSON: ``{name, unit, value}`` entries with a direction."""

from __future__ import annotations

import re
from typing import Any

from perfbot.engine.read.formats._base import Format
from perfbot.engine.read.formats._common import (
    finite_number,
    kind_of,
    load_json,
    number_from_text,
    shown_value,
)
from perfbot.errors import ParseError
from perfbot.model import Better, FailedCase, Measurement, ParseContext, Parsed

NAME = "github-action-benchmark"
BIGGER = "customBiggerIsBetter"
SMALLER = "customSmallerIsBetter"
MAX_NAME = 200

_DIRECTIONS = ((BIGGER, Better.HIGHER), (SMALLER, Better.LOWER))
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DIRECTION_KEY = re.compile(r'[{,]\s*"custom(?:Bigger|Smaller)IsBetter"\s*:')
_ENTRY_KEYS = tuple(re.compile(rf'"{key}"\s*:') for key in ("name", "unit", "value"))
# perfbot's own format may carry producers' notes under any key; it is never ours.
_PERFBOT_KEY = re.compile(r'[{,]\s*"perfbot"\s*:')


class _Invalid(Exception):
    """A broken document, carrying the sentence that names the offending entry."""


def sniff(head: str, path: str) -> float:
    """Sure of the two-direction object, fairly sure of a bare array of entries."""
    start = head.lstrip()[:1]
    if start == "{":
        if _PERFBOT_KEY.search(head):
            return 0.0
        return 1.0 if _DIRECTION_KEY.search(head) else 0.0
    if start == "[" and all(key.search(head) for key in _ENTRY_KEYS):
        # Other tools write arrays of name/unit/value objects too, so leave room for them.
        return 0.9
    return 0.0


def parse(text: str, ctx: ParseContext) -> Parsed:
    """The file's entries; a broken entry is a failed case of the file (named by its place,
    ``[3].name …``) and its other entries are read. A broken file is a ``ParseError``."""
    document = load_json(text, ctx.path, NAME)
    try:
        groups = _groups(document, ctx.path)
    except _Invalid as exc:
        raise ParseError(ctx.path, NAME, str(exc)) from None
    measurements: list[Measurement] = []
    failures: list[FailedCase] = []
    for label, items, better in groups:
        for index, item in enumerate(items):
            try:
                measurements.append(_read_entry(item, f"{label}[{index}]", better, ctx.platform))
            except _Invalid as exc:
                failures.append(FailedCase(ctx.platform, ctx.path, str(exc)))
    if not measurements and not failures:
        raise ParseError(ctx.path, NAME, "the file has no benchmark entries")
    return Parsed(measurements=tuple(measurements), failures=tuple(failures))


def _groups(document: Any, path: str) -> list[tuple[str, list[Any], Better]]:
    """The entry arrays of the file, each with its label for messages and its direction."""
    if isinstance(document, list):
        return [("", document, direction_from_path(path))]
    expected = f"a JSON array of entries, or an object with {BIGGER} and/or {SMALLER} arrays"
    if not isinstance(document, dict):
        raise _Invalid(f"expected {expected}, got {kind_of(document)}")
    present = [(key, better) for key, better in _DIRECTIONS if key in document]
    if not present:
        raise _Invalid(f"expected {expected}, got an object without either key")
    groups = []
    for key, better in present:
        items = document[key]
        if not isinstance(items, list):
            raise _Invalid(f"{key} must be an array, got {kind_of(items)}")
        groups.append((key, items, better))
    return groups


def direction_from_path(path: str) -> Better:
    """The direction of a bare array, which the file does not state.

    github-action-benchmark takes it from the ``tool`` input of the workflow, which perfbot
    never sees; the file name (``smaller-is-better.json``) is the only trace of it left.
    """
    return Better.LOWER if "smaller" in path.lower() else Better.HIGHER


def _read_entry(item: Any, where: str, better: Better, platform: str) -> Measurement:
    if not isinstance(item, dict):
        raise _Invalid(f"{where} must be an object with name, unit and value, got {kind_of(item)}")
    for key in ("name", "unit", "value"):
        if key not in item:
            raise _Invalid(f"{where}.{key} is missing")
    return Measurement(
        platform=platform,
        metric=_name(item["name"], f"{where}.name"),
        value=_value(item["value"], f"{where}.value"),
        unit=_unit(item["unit"], f"{where}.unit"),
        better=better,
    )


def _name(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _Invalid(f"{field} must be a non-empty string, got {shown_value(value)}")
    if len(value) > MAX_NAME:
        raise _Invalid(f"{field} must be at most {MAX_NAME} characters long, got {len(value)}")
    # Names end up in table cells of the PR comment, where a newline breaks the table.
    if _CONTROL.search(value):
        raise _Invalid(f"{field} must not contain control characters (newlines, tabs)")
    return value


def _unit(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"{field} must be a string, got {shown_value(value)}")
    if _CONTROL.search(value):
        raise _Invalid(f"{field} must not contain control characters (newlines, tabs)")
    return value


def _value(value: Any, field: str) -> float:
    # Some producers write the number as a string ("1,234.5"); accept what reads as one.
    number = number_from_text(value) if isinstance(value, str) else finite_number(value)
    if number is None:
        raise _Invalid(f"{field} must be a finite number, got {shown_value(value)}")
    return number


FORMAT = Format(
    name=NAME,
    reads="github-action-benchmark customBiggerIsBetter / customSmallerIsBetter JSON",
    sniff=sniff,
    parse=parse,
)
