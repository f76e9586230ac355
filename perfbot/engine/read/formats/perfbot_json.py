"""perfbot's own JSON report format, validated by hand against its published schema.

Version 1 is the report format users write. Version 2 is what perfbot writes itself and
reads back anywhere a report is accepted: a baseline (``perfbot compare --save``), whose
metrics also carry the scale and the settings fingerprint of their samples, and the
comparison document (``--json``), of which the head side is read. A v1 reader's strict
keys stay strict: the v2 keys are errors in a v1 file.
"""

from __future__ import annotations

import re
from typing import Any

from perfbot.engine.read.formats._base import Format
from perfbot.engine.read.formats._common import finite_number, kind_of, load_json, shown_value
from perfbot.errors import ParseError
from perfbot.model import (
    Better,
    FailedCase,
    Measurement,
    ParseContext,
    Parsed,
    Scale,
    Settings,
)

NAME = "perfbot-json"
SCHEMA = "perfbot/schema/perfbot-report.schema.json"
SUPPORTED_VERSIONS = (1, 2)
BASELINE, COMPARISON = "baseline", "comparison"  # the v2 "kind"s perfbot writes

# These limits are repeated in the schema; the tests check both agree on the boundaries.
MAX_LABEL = 200
MAX_UNIT = 50
MAX_SAMPLES = 10_000
MAX_REASON = 200

_METRIC_KEYS = ("name", "value", "values", "unit", "better", "platform")
_FAILURE_KEYS = ("case", "reason", "platform")
_METRIC_KEYS_V2 = (*_METRIC_KEYS, "scale", "settings", "deterministic")
_FAILURE_KEYS_V2 = (*_FAILURE_KEYS, "whole_platform")
MAX_SETTINGS = 50
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_TOP_LEVEL_LOOKING_KEY = re.compile(r'[{,]\s*"perfbot"\s*:')


class _Invalid(Exception):
    """A broken document, carrying the sentence that names the offending field."""


def sniff(head: str, path: str) -> float:
    """Certain when a JSON object has a ``"perfbot"`` key, whatever its version."""
    if not head.lstrip().startswith("{"):
        return 0.0
    return 1.0 if _TOP_LEVEL_LOOKING_KEY.search(head) else 0.0


def parse(text: str, ctx: ParseContext) -> Parsed:
    """The report; a broken item of ``metrics`` or ``failures`` is a failed case of the
    file (named by its place, ``metrics[3].name …``) and the other items are read. A
    broken document, or a broken comparison perfbot wrote, is a ``ParseError``."""
    document = load_json(text, ctx.path, NAME)
    try:
        return _read_document(document, ctx.platform, ctx.path)
    except _Invalid as exc:
        raise ParseError(ctx.path, NAME, str(exc)) from None


def _read_document(document: Any, default_platform: str, path: str) -> Parsed:
    if not isinstance(document, dict):
        raise _Invalid(f"the document must be a JSON object, got {kind_of(document)}")
    version = _check_version(document)
    kind = _kind(document, version)
    if kind == COMPARISON:
        return _read_comparison(document)
    platform = _optional_label(document, "platform", "") or default_platform
    metric_items = _items(document, "metrics", required=True)
    failure_items = _items(document, "failures", required=False)
    if not metric_items and not failure_items:
        # An empty report is almost always a producer bug (an empty jq filter, a run that
        # wrote nothing); reading it as "no data" would hide that.
        raise _Invalid("the report has no metrics and no failures")
    measurements: list[Measurement] = []
    failures: list[FailedCase] = []
    for index, item in enumerate(metric_items):
        try:
            measurements.extend(_read_metric(item, f"metrics[{index}]", platform, version))
        except _Invalid as exc:
            failures.append(FailedCase(platform, path, str(exc)))
    for index, item in enumerate(failure_items):
        try:
            failures.append(_read_failure(item, f"failures[{index}]", platform, version))
        except _Invalid as exc:
            failures.append(FailedCase(platform, path, str(exc)))
    return Parsed(measurements=tuple(measurements), failures=tuple(failures))


def _kind(document: dict[str, Any], version: int) -> str | None:
    if "kind" not in document or version < 2:
        return None  # in v1 every other top-level key is the producer's own note
    kind = document["kind"]
    if kind not in (BASELINE, COMPARISON):
        raise _Invalid(f'kind must be "{BASELINE}" or "{COMPARISON}", got {shown_value(kind)}')
    return str(kind)


def _read_comparison(document: dict[str, Any]) -> Parsed:
    """The head side of a ``perfbot compare --json`` document: what that run measured."""
    measurements: list[Measurement] = []
    for p_index, item in enumerate(_items(document, "platforms", required=True)):
        where = f"platforms[{p_index}]"
        if not isinstance(item, dict):
            raise _Invalid(f"{where} must be an object, got {kind_of(item)}")
        platform = _label(item, "name", where)
        for m_index, metric in enumerate(_items(item, "metrics", required=False)):
            measurements.extend(_comparison_metric(metric, f"{where}.metrics[{m_index}]", platform))
    failures = []
    for index, item in enumerate(_items(document, "failures", required=False)):
        where = f"failures[{index}]"
        if not isinstance(item, dict):
            raise _Invalid(f"{where} must be an object, got {kind_of(item)}")
        if item.get("side") != "head":
            continue
        platform = _label(item, "platform", where)
        failures.append(FailedCase(platform, _label(item, "case", where), _reason(item, where)))
    if not measurements and not failures:
        raise _Invalid("the comparison has no head measurement and no head failure")
    return Parsed(measurements=tuple(measurements), failures=tuple(failures))


def _comparison_metric(item: Any, where: str, platform: str) -> list[Measurement]:
    if not isinstance(item, dict):
        raise _Invalid(f"{where} must be an object, got {kind_of(item)}")
    head = item.get("head")
    if head is None:
        return []  # missing in that run's head: nothing measured
    if not isinstance(head, dict):
        raise _Invalid(f"{where}.head must be an object, got {kind_of(head)}")
    samples = head.get("samples", [])
    if not isinstance(samples, list) or len(samples) > MAX_SAMPLES:
        raise _Invalid(f"{where}.head.samples must be an array of at most {MAX_SAMPLES} numbers")
    name = _label(item, "name", where)
    unit = _unit(item, where)
    better = _better(item, where)
    values = [_number(value, f"{where}.head.samples[{i}]") for i, value in enumerate(samples)]
    return [Measurement(platform, name, value, unit, better) for value in values]


def _check_version(document: dict[str, Any]) -> int:
    supported = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
    if "perfbot" not in document:
        raise _Invalid(
            f'"perfbot" (the format version) is missing; supported versions: {supported}'
        )
    version = document["perfbot"]
    if finite_number(version) not in SUPPORTED_VERSIONS:
        raise _Invalid(
            f'"perfbot": {shown_value(version)} is not a supported format version; '
            f"supported versions: {supported}"
        )
    return int(version)


def _items(document: dict[str, Any], key: str, *, required: bool) -> list[Any]:
    if key not in document:
        if required:
            raise _Invalid(f"{key} is missing (an array, possibly empty)")
        return []
    items = document[key]
    if not isinstance(items, list):
        raise _Invalid(f"{key} must be an array, got {kind_of(items)}")
    return items


def _read_metric(item: Any, where: str, file_platform: str, version: int) -> list[Measurement]:
    fields = _fields(item, where, _METRIC_KEYS_V2 if version >= 2 else _METRIC_KEYS)
    name = _label(fields, "name", where)
    samples = _samples(fields, where)
    unit = _unit(fields, where)
    better = _better(fields, where)
    platform = _optional_label(fields, "platform", where) or file_platform
    scale = _scale(fields, where)
    settings = _settings(fields, where)
    _flag(fields, "deterministic", where)
    return [Measurement(platform, name, value, unit, better, scale, settings) for value in samples]


def _read_failure(item: Any, where: str, file_platform: str, version: int) -> FailedCase:
    fields = _fields(item, where, _FAILURE_KEYS_V2 if version >= 2 else _FAILURE_KEYS)
    case = _label(fields, "case", where)
    reason = _reason(fields, where)
    platform = _optional_label(fields, "platform", where) or file_platform
    return FailedCase(platform, case, reason, _flag(fields, "whole_platform", where))


def _flag(fields: dict[str, Any], key: str, where: str) -> bool:
    value = fields.get(key, False)
    if not isinstance(value, bool):
        raise _Invalid(f"{where}.{key} must be true or false, got {shown_value(value)}")
    return value


def deterministic_series(text: str) -> set[tuple[str, str]]:
    """The (platform, metric) pairs a valid baseline file marks as deterministic.

    A Measurement does not carry its tool's prior (the side takes it from the format of
    the file), so a caller that reads a baseline applies these afterwards; anything
    that is not a valid version 2 baseline gives nothing.
    """
    try:
        document = load_json(text, "", NAME)
        if not isinstance(document, dict) or document.get("kind") != BASELINE:
            return set()
        _read_document(document, "", "")
    except (ParseError, _Invalid):
        return set()
    found = set()
    for index, item in enumerate(document.get("metrics", [])):
        try:
            _read_metric(item, f"metrics[{index}]", "", 2)
        except _Invalid:
            continue  # a broken item is a failed case of the file, not a metric
        if item.get("deterministic") is True and "platform" in item:
            found.add((item["platform"], item["name"]))
    return found


def _scale(fields: dict[str, Any], where: str) -> Scale:
    value = fields.get("scale", Scale.RATIO.value)
    allowed = [scale.value for scale in Scale]
    if not isinstance(value, str) or value not in allowed:
        raise _Invalid(
            f"{where}.scale must be one of {', '.join(allowed)}, got {shown_value(value)}"
        )
    return Scale(value)


def _settings(fields: dict[str, Any], where: str) -> Settings:
    """The settings fingerprint: an object of short strings, read back as sorted pairs."""
    value = fields.get("settings", {})
    if not isinstance(value, dict) or len(value) > MAX_SETTINGS:
        raise _Invalid(f"{where}.settings must be an object of at most {MAX_SETTINGS} strings")
    pairs = []
    for key, setting in value.items():
        field = f"{where}.settings.{key}"
        pairs.append(
            (
                _text(key, f"{where}.settings key", min_length=1, max_length=MAX_LABEL),
                _text(setting, field, min_length=0, max_length=MAX_LABEL),
            )
        )
    return tuple(sorted(pairs))


def _fields(item: Any, where: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise _Invalid(f"{where} must be an object, got {kind_of(item)}")
    unknown = sorted(key for key in item if key not in allowed)
    if unknown:
        raise _Invalid(
            f"{where} has an unknown key {shown_value(unknown[0])} (allowed: {', '.join(allowed)})"
        )
    return item


def _label(fields: dict[str, Any], key: str, where: str) -> str:
    if key not in fields:
        raise _Invalid(f"{_field(where, key)} is missing")
    return _text(fields[key], _field(where, key), min_length=1, max_length=MAX_LABEL)


def _optional_label(fields: dict[str, Any], key: str, where: str) -> str | None:
    if key not in fields:
        return None
    return _text(fields[key], _field(where, key), min_length=1, max_length=MAX_LABEL)


def _unit(fields: dict[str, Any], where: str) -> str:
    if "unit" not in fields:
        return ""
    return _text(fields["unit"], _field(where, "unit"), min_length=0, max_length=MAX_UNIT)


def _text(value: Any, field: str, *, min_length: int, max_length: int) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"{field} must be a string, got {kind_of(value)}")
    if not min_length <= len(value) <= max_length:
        raise _Invalid(
            f"{field} must be {min_length} to {max_length} characters long, got {len(value)}"
        )
    # Names end up in table cells of the PR comment, where a newline breaks the table.
    if _CONTROL.search(value):
        raise _Invalid(f"{field} must not contain control characters (newlines, tabs)")
    return value


def _samples(fields: dict[str, Any], where: str) -> list[float]:
    if ("value" in fields) == ("values" in fields):
        both = " (not both)" if "value" in fields else ""
        raise _Invalid(f"{where} must have exactly one of value or values{both}")
    if "value" in fields:
        return [_number(fields["value"], f"{where}.value")]
    values = fields["values"]
    if not isinstance(values, list):
        raise _Invalid(f"{where}.values must be an array of numbers, got {kind_of(values)}")
    if not 1 <= len(values) <= MAX_SAMPLES:
        raise _Invalid(f"{where}.values must hold 1 to {MAX_SAMPLES} numbers, got {len(values)}")
    return [_number(value, f"{where}.values[{i}]") for i, value in enumerate(values)]


def _number(value: Any, field: str) -> float:
    number = finite_number(value)
    if number is None:
        raise _Invalid(f"{field} must be a finite number, got {shown_value(value)}")
    return number


def _better(fields: dict[str, Any], where: str) -> Better:
    value = fields.get("better", Better.HIGHER.value)
    if not isinstance(value, str) or value not in (Better.HIGHER.value, Better.LOWER.value):
        raise _Invalid(f'{where}.better must be "higher" or "lower", got {shown_value(value)}')
    return Better(value)


def _reason(fields: dict[str, Any], where: str) -> str:
    if "reason" not in fields:
        raise _Invalid(f"{_field(where, 'reason')} is missing")
    value = fields["reason"]
    if not isinstance(value, str) or not value:
        raise _Invalid(f"{where}.reason must be a non-empty string, got {shown_value(value)}")
    return _one_line(value, MAX_REASON)


def _one_line(text: str, limit: int) -> str:
    """``text`` on one line (control characters and runs of spaces become one space), cut."""
    flat = " ".join(_CONTROL.sub(" ", text).split()) or "no reason given"
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _field(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


FORMAT = Format(
    name=NAME,
    reads=f"perfbot's own JSON format (schema: {SCHEMA})",
    sniff=sniff,
    parse=parse,
)
