"""Reading back a file ``perfbot history`` wrote (its CSV or its JSON) for ``perfbot changes``.

Every cell is untrusted (a metric's name came from an artifact, the file from anyone):
the file is bounded in size and rows, each row is checked, and what is wrong is said in
one sentence (``UsageError``), never a traceback. Cells the CSV neutralised against
spreadsheet formulas (a leading ``'``) are read back as written.

Only the branch's own trend is read: rows of side ``push`` (its pushed commits) and
``base`` (what PRs against it measured of it), never a fork PR's rows (its author wrote
every byte of them). Files written before the ``better``, ``scale`` and ``settings``
columns existed are read with the defaults the store would have given (higher is better,
ratio, no settings), and the reader says so.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from perfbot.cli.usage import UsageError
from perfbot.engine.judge.change_series import Observation
from perfbot.model import Better, Scale, Settings

MAX_FILE_BYTES: Final = 64 * 1024 * 1024
MAX_ROWS: Final = 100_000  # what one `perfbot history` export holds at most
MAX_NAME: Final = 1000
TREND_SIDES: Final = frozenset({"push", "base"})
REQUIRED: Final = ("branch", "side", "sha", "platform", "metric", "samples")
OPTIONAL: Final = ("better", "scale", "settings")
_SHA: Final = re.compile(r"[0-9a-fA-F]{7,64}")
_FORMULA_START: Final = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True, slots=True)
class HistoryFile:
    """The trend rows of a history file, oldest first, by branch; what was left out."""

    branches: dict[str, list[Observation]]
    rows: int
    left_out: int
    missing_columns: tuple[str, ...]


def read_history_file(path: Path) -> HistoryFile:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    if size > MAX_FILE_BYTES:
        raise UsageError(
            f"{path} is {size:,} bytes, more than the {MAX_FILE_BYTES:,} a history file may be"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    stripped = text.lstrip()
    rows = _json_rows(path, stripped) if stripped.startswith("{") else _csv_rows(path, text)
    return _observations(path, rows)


def _json_rows(path: Path, text: str) -> tuple[list[Mapping[str, Any]], set[str]]:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        raise UsageError(f"{path} is not valid JSON") from None
    rows = document.get("rows") if isinstance(document, dict) else None
    if not isinstance(rows, list):
        raise UsageError(f"{path} is not a perfbot history JSON file (no list of rows)")
    _bound(path, len(rows))
    if not all(isinstance(row, dict) for row in rows):
        raise UsageError(f"{path}: every row of a history JSON file must be an object")
    named = document.get("columns")
    if rows:
        columns = set(rows[0])
    elif isinstance(named, list):
        columns = {name for name in named if isinstance(name, str)}
    else:
        columns = set(REQUIRED)  # an empty export: nothing to judge, nothing missing
    return rows, columns


def _csv_rows(path: Path, text: str) -> tuple[list[Mapping[str, Any]], set[str]]:
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
        columns = set(reader.fieldnames or ())
        rows: list[Mapping[str, Any]] = []
        for row in reader:
            rows.append(row)
            _bound(path, len(rows))
    except csv.Error as exc:
        raise UsageError(f"{path} is not a valid CSV file ({exc})") from None
    return rows, columns


def _bound(path: Path, rows: int) -> None:
    if rows > MAX_ROWS:
        raise UsageError(f"{path} has more than {MAX_ROWS:,} rows (perfbot history writes fewer)")


def _observations(path: Path, parsed: tuple[list[Mapping[str, Any]], set[str]]) -> HistoryFile:
    rows, columns = parsed
    missing = [column for column in REQUIRED if column not in columns]
    if missing:
        raise UsageError(
            f"{path} is not a perfbot history file: it has no {', '.join(missing)} column"
        )
    branches: dict[str, list[Observation]] = {}
    left_out = 0
    for number, row in enumerate(rows, start=2):
        if _text(row.get("side")) not in TREND_SIDES or _flag(row.get("from_fork")):
            left_out += 1
            continue
        observation = _observation(path, number, row)
        if observation is None:
            left_out += 1
            continue
        branches.setdefault(_name(row.get("branch")), []).append(observation)
    return HistoryFile(
        branches,
        len(rows),
        left_out,
        tuple(column for column in OPTIONAL if column not in columns),
    )


def _observation(path: Path, number: int, row: Mapping[str, Any]) -> Observation | None:
    sha = _text(row.get("sha"))
    if not _SHA.fullmatch(sha):
        raise UsageError(f"{path}, row {number}: the sha is not a commit SHA")
    samples = _samples(path, number, row.get("samples"))
    if not samples:
        return None  # every sample was infinite or missing: nothing measured
    try:
        better = Better(_text(row.get("better")) or Better.HIGHER.value)
        scale = Scale(_text(row.get("scale")) or Scale.RATIO.value)
    except ValueError:
        raise UsageError(
            f"{path}, row {number}: better or scale is not a value perfbot writes"
        ) from None
    return Observation(
        platform=_name(row.get("platform")),
        metric=_name(row.get("metric")),
        unit=_name(row.get("unit")),
        better=better,
        scale=scale,
        settings=_settings(path, number, row.get("settings")),
        sha=sha.lower(),
        samples=samples,
    )


def _samples(path: Path, number: int, cell: object) -> tuple[float, ...]:
    values: Iterable[object]
    if isinstance(cell, list):
        values = [value for value in cell if value is not None]  # JSON's null: not finite
    elif isinstance(cell, str):
        values = cell.split()
    else:
        raise UsageError(f"{path}, row {number}: samples are not a list of numbers")
    result = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise UsageError(f"{path}, row {number}: samples are not a list of numbers")
        try:
            number_value = float(value)
        except ValueError:
            raise UsageError(f"{path}, row {number}: samples are not a list of numbers") from None
        if math.isfinite(number_value):
            result.append(number_value)
    return tuple(result)


def _settings(path: Path, number: int, cell: object) -> Settings:
    if cell is None or cell == "":
        return ()
    if isinstance(cell, str):
        try:
            cell = json.loads(_unneutralised(cell))
        except (ValueError, RecursionError):
            raise UsageError(f"{path}, row {number}: settings are not valid JSON") from None
    pairs: Iterable[object]
    if isinstance(cell, dict):
        pairs = list(cell.items())
    elif isinstance(cell, list):
        pairs = cell
    else:
        raise UsageError(f"{path}, row {number}: settings are not name–value pairs")
    result = []
    for pair in pairs:
        if not (isinstance(pair, list | tuple) and len(pair) == 2):
            raise UsageError(f"{path}, row {number}: settings are not name–value pairs")
        result.append((_name(pair[0]), _name(pair[1])))
    return tuple(sorted(result))


def _text(cell: object) -> str:
    return cell if isinstance(cell, str) else "" if cell is None else str(cell)


def _name(cell: object) -> str:
    """A name as perfbot wrote it: the CSV's formula guard taken off, bounded."""
    return _unneutralised(_text(cell))[:MAX_NAME]


def _unneutralised(text: str) -> str:
    if text.startswith("'") and text[1:].startswith(_FORMULA_START):
        return text[1:]
    return text


def _flag(cell: object) -> bool:
    return cell is True or (isinstance(cell, str) and cell.strip().lower() == "true")
