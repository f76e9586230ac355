"""``perfbot history``: the measurement store's rows of one repository, as CSV, JSON or SVG.

For operators and CI: what perfbot recorded of the default branch's pushes and of PR runs,
filtered by platform, metric, branch and time, bounded by ``--limit``. The store is the
one ``perfbot serve`` opens (``--database``, else ``PERFBOT_DATABASE_URL``, from the
environment or the env file, else ``perfbot.db``); a SQLite file that does not exist is
an error, never created.

Every cell of a row can come from an artifact (a metric's name, a unit, a branch), so
the CSV neutralises spreadsheet formulas, the JSON is json's and the SVG is
``perfbot.engine.show.plot``'s, which escapes every piece of text.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from perfbot.cli.usage import EXIT_OK, UsageError

if TYPE_CHECKING:
    from perfbot.cli.history_changes import MarkKey
    from perfbot.engine.judge.changes import ChangePoint
    from perfbot.store.export import HistoryQuery, HistoryRow

    Marks = dict[MarkKey, ChangePoint]

# The parser is built for every command: the store, the engine and the plot are imported
# only when `perfbot history` runs. The store's own bound (tests check they agree).
MAX_EXPORT_ROWS: Final = 100_000
DEFAULT_LIMIT: Final = 1000
DEFAULT_DATABASE_URL: Final = "perfbot.db"  # as perfbot serve's default
DATABASE_VARIABLE: Final = "PERFBOT_DATABASE_URL"
FORMATS: Final = ("csv", "json", "svg")
COLUMNS: Final = (
    "recorded_at",
    "repository",
    "branch",
    "side",
    "sha",
    "run_id",
    "run_attempt",
    "pr_number",
    "platform",
    "metric",
    "unit",
    "median",
    "n",
    "samples",
    "from_fork",
    "better",
    "scale",
    "settings",
)
# A cell a spreadsheet would run as a formula (OWASP's list: tab and carriage return too).
_FORMULA_START: Final = ("=", "+", "-", "@", "\t", "\r")
_REPO_SHAPE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+")
_DATE_HELP: Final = "YYYY-MM-DD, or YYYY-MM-DDTHH:MM[:SS] with Z or ±HH:MM (UTC if none)"


def add_arguments(history: argparse.ArgumentParser) -> None:
    """The options of ``perfbot history`` (see docs/cli/history.md)."""
    history.add_argument(
        "--repo", required=True, metavar="OWNER/NAME", help="the repository (required)"
    )
    history.add_argument(
        "--platform",
        action="append",
        metavar="NAME",
        help="only this platform, by its full name or its board (qemu_x86 matches "
        "qemu_x86/atom, never qemu_x86_64); repeatable",
    )
    history.add_argument(
        "--metric", metavar="GLOB", help="only metrics matching GLOB (* any text, ? one character)"
    )
    history.add_argument("--branch", metavar="NAME", help="only rows measured on this branch")
    history.add_argument(
        "--since", type=_since, metavar="WHEN", help=f"recorded at or after WHEN ({_DATE_HELP})"
    )
    history.add_argument(
        "--until",
        type=_until,
        metavar="WHEN",
        help="recorded before WHEN; a date includes its whole day",
    )
    history.add_argument(
        "--limit",
        type=_limit,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"at most the N newest rows (default {DEFAULT_LIMIT}, at most {MAX_EXPORT_ROWS:,})",
    )
    history.add_argument("--format", choices=FORMATS, default="csv", help="default csv")
    history.add_argument(
        "--changes",
        action="store_true",
        help="mark the change points of each branch's trend (see perfbot changes): a "
        "change column in the CSV, a change per row and a list of changes in the JSON, "
        "a note on the commit in the SVG",
    )
    history.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="write here (never through a symbolic link) instead of standard output",
    )
    history.add_argument(
        "--database",
        metavar="URL",
        help=f"the store (default ${DATABASE_VARIABLE}, else {DEFAULT_DATABASE_URL})",
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import asyncio  # noqa: PLC0415

    from perfbot.store.export import HistoryQuery  # noqa: PLC0415

    repo = str(args.repo)
    if not _REPO_SHAPE.fullmatch(repo):
        raise UsageError(f"--repo {repo!r} is not OWNER/NAME")
    if args.since is not None and args.until is not None and args.since >= args.until:
        raise UsageError("--since must be before --until")
    query = HistoryQuery(
        repo=repo,
        platforms=tuple(args.platform or ()),
        metric=args.metric,
        branch=args.branch,
        since=args.since,
        until=args.until,
        # One row more than asked: whether the export was cut short is said, not guessed.
        limit=min(args.limit + 1, MAX_EXPORT_ROWS),
    )
    rows, known = asyncio.run(_read(database_url(args.database), query))
    if not known:
        raise UsageError(f"no measurements of {repo} are stored")
    truncated = len(rows) > args.limit
    if truncated:
        rows = rows[len(rows) - args.limit :]  # the newest, still oldest first
        print(f"perfbot: only the newest {args.limit} rows are exported (--limit)", file=err)
    if not rows:
        print(f"perfbot: no measurements of {repo} match the filters", file=err)
    marks: Marks | None = None
    if args.changes:
        from perfbot.cli.history_changes import change_marks  # noqa: PLC0415

        marks = change_marks(rows)
    if args.format == "csv":
        text = csv_text(rows, marks)
    elif args.format == "json":
        text = json_text(repo, rows, truncated, marks)
    else:
        text = svg_text(repo, rows, marks)
    if args.output is None:
        out.write(text)
    else:
        from perfbot.cli.compare import write_output  # noqa: PLC0415  (its O_NOFOLLOW write)

        write_output(args.output, text, "--output")
    return EXIT_OK


def database_url(given: str | None) -> str:
    """``--database``, else ``PERFBOT_DATABASE_URL`` (the env file's too), else the default."""
    if given:
        return given
    from perfbot.app.settings import SettingsError, load_env_file  # noqa: PLC0415

    try:
        load_env_file(os.environ)  # as perfbot serve reads it; set variables win
    except SettingsError as exc:
        raise UsageError(str(exc)) from None
    return os.environ.get(DATABASE_VARIABLE, "").strip() or DEFAULT_DATABASE_URL


async def _read(url: str, query: HistoryQuery) -> tuple[list[HistoryRow], bool]:
    from perfbot.errors import PerfbotError  # noqa: PLC0415
    from perfbot.store import open_store  # noqa: PLC0415

    missing = _missing_sqlite_file(url)
    if missing is not None:
        raise UsageError(f"no database at {missing} (give --database or {DATABASE_VARIABLE})")
    try:
        store = open_store(url)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        await store.setup()
        rows = await store.export_measurements(query)
        known = bool(rows) or await store.has_measurements(query.repo)
    except (PerfbotError, RuntimeError, OSError) as exc:
        raise UsageError(f"the database is not usable: {exc}") from None
    finally:
        await store.close()
    return rows, known


def _missing_sqlite_file(url: str) -> str | None:
    """The SQLite file ``url`` names when it does not exist (opening would create it)."""
    scheme, sep, _ = url.partition("://")
    if sep and scheme != "sqlite":
        return None  # PostgreSQL (or a URL open_store refuses with its own sentence)
    path = url.removeprefix("sqlite:///")
    return None if Path(path).exists() else path


# --- the three formats ----------------------------------------------------------------------


def cells(row: HistoryRow) -> dict[str, Any]:
    """A row's values by column, numbers as numbers (the JSON's and the CSV's)."""
    from perfbot.engine.judge.compare import Stats  # noqa: PLC0415

    stats = Stats.of(row.samples) if row.samples else None
    return {
        "recorded_at": _iso(row.recorded_at),
        "repository": row.repo_full_name,
        "branch": row.branch,
        "side": row.side,
        "sha": row.sha,
        "run_id": row.run_id,
        "run_attempt": row.run_attempt,
        "pr_number": row.pr_number,
        "platform": row.platform,
        "metric": row.metric,
        "unit": row.unit,
        "median": None if stats is None else stats.value,
        "n": len(row.samples),
        "samples": list(row.samples),
        "from_fork": row.from_fork,
        "better": row.better.value,
        "scale": row.scale.value,
        "settings": dict(row.settings),
    }


def csv_text(rows: Iterable[HistoryRow], marks: Marks | None = None) -> str:
    from perfbot.cli.history_changes import mark_of, mark_text  # noqa: PLC0415
    from perfbot.store.measurements import settings_text  # noqa: PLC0415

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    columns = COLUMNS if marks is None else (*COLUMNS, "change")
    writer.writerow(columns)
    for row in rows:
        values = cells(row)
        values["samples"] = " ".join(repr(value) for value in row.samples)
        values["from_fork"] = "true" if row.from_fork else "false"
        values["settings"] = settings_text(row.settings)
        if marks is not None:
            values["change"] = mark_text(mark_of(row, marks))
        writer.writerow([_csv_cell(values[column]) for column in columns])
    return buffer.getvalue()


def _csv_cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool | int | float):
        return repr(value) if isinstance(value, float) else str(value)
    text = str(value)
    # Text from an artifact ("=HYPERLINK(...)" as a metric's name) stays text in a sheet.
    return "'" + text if text.startswith(_FORMULA_START) else text


def json_text(
    repo: str, rows: Sequence[HistoryRow], truncated: bool, marks: Marks | None = None
) -> str:
    from perfbot.cli.history_changes import mark_of, mark_text, records  # noqa: PLC0415

    document: dict[str, Any] = {
        "repository": repo,
        "truncated": truncated,
        "columns": list(COLUMNS if marks is None else (*COLUMNS, "change")),
        "rows": [_json_cells(row) for row in rows],
    }
    if marks is not None:
        for cells_of_row, row in zip(document["rows"], rows, strict=True):
            cells_of_row["change"] = mark_text(mark_of(row, marks)) or None
        document["changes"] = records(marks.items())
    # JSON has no NaN or infinity: such a stored value is written as null.
    return json.dumps(document, ensure_ascii=False, indent=1, allow_nan=False) + "\n"


def _json_cells(row: HistoryRow) -> dict[str, Any]:
    values = cells(row)
    values["samples"] = [_finite(value) for value in row.samples]
    values["median"] = None if values["median"] is None else _finite(values["median"])
    return values


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass(frozen=True, slots=True)
class _Series:
    platform: str
    metric: str
    unit: str


def svg_text(repo: str, rows: Sequence[HistoryRow], marks: Marks | None = None) -> str:
    """One series' values per commit, oldest first (plot.history_svg draws one metric)."""
    from perfbot.engine.judge.compare import Stats  # noqa: PLC0415
    from perfbot.engine.show.plot import HistoryPoint, history_svg  # noqa: PLC0415

    series = sorted({_Series(r.platform, r.metric, r.unit) for r in rows}, key=repr)
    if len(series) > 1:
        raise UsageError(
            f"an SVG draws one metric of one platform, and {len(series)} match: narrow"
            " --metric and --platform (CSV and JSON take any number)"
        )
    from perfbot.cli.history_changes import mark_of, mark_text  # noqa: PLC0415

    per_commit: dict[str, list[float]] = {}
    marked: dict[str, str] = {}
    for row in rows:  # oldest first: a commit's place is its first measurement's
        per_commit.setdefault(row.sha, []).extend(row.samples)
        if marks is not None and (text := mark_text(mark_of(row, marks))):
            marked[row.sha] = text
    points = [
        HistoryPoint(sha[:7], Stats.of(samples), mark=marked.get(sha, ""))
        for sha, samples in per_commit.items()
        if samples
    ]
    if not series:
        return history_svg("no measurements", "", [], title=f"{repo}: no measurements")
    (only,) = series
    unit = f" ({only.unit})" if only.unit else ""
    title = f"{repo} · {only.platform} · {only.metric}{unit}"
    return history_svg(only.metric, only.unit, points, title=title)


# --- argument types -------------------------------------------------------------------------


def _since(value: str) -> float:
    return _when(value, "--since", end_of_day=False)


def _until(value: str) -> float:
    return _when(value, "--until", end_of_day=True)


def _when(value: str, option: str, *, end_of_day: bool) -> float:
    """Unix seconds of an ISO date or time; a date alone is its midnight (UTC), or the
    next midnight for ``--until`` (its whole day included)."""
    text = value.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
            if end_of_day:
                moment += timedelta(days=1)
        else:
            moment = datetime.fromisoformat(text)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an ISO date ({_DATE_HELP})") from None
    return moment.timestamp()


def _limit(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= MAX_EXPORT_ROWS:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number from 1 to {MAX_EXPORT_ROWS}")
    return int(value)


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
