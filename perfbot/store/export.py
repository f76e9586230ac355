"""What ``perfbot history`` asks of the measurement store: the stored rows of one
repository, filtered and bounded, and the SQL both backends run for it.

One query builder for both: only the placeholders and the metric pattern's operator
differ (SQLite's GLOB, PostgreSQL's LIKE: both case-sensitive, so the two backends
answer alike). Importing it loads no database driver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

from perfbot.model import Better, Scale, Settings
from perfbot.store.measurements import (
    MeasuredSide,
    samples_from_text,
    settings_from_text,
    storable,
)

# The most rows one export may hold: an operator's terminal or a CI artifact, not a dump.
MAX_EXPORT_ROWS: Final = 100_000


@dataclass(frozen=True, slots=True)
class HistoryQuery:
    """Rows of ``repo`` (OWNER/NAME, any case, as recorded), newest ``limit`` of them.

    ``platforms``: each a full name (``qemu_x86/atom``) or a board (``qemu_x86`` matches
    ``qemu_x86/atom``, never ``qemu_x86_64``); empty: all. ``metric``: a glob where ``*``
    is any text and ``?`` one character (nothing else is special). ``since`` / ``until``:
    recorded times (Unix seconds), ``since`` included, ``until`` excluded.
    """

    repo: str
    platforms: tuple[str, ...] = ()
    metric: str | None = None
    branch: str | None = None
    since: float | None = None
    until: float | None = None
    limit: int = 1000

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_EXPORT_ROWS:
            raise ValueError(f"limit must be from 1 to {MAX_EXPORT_ROWS}, not {self.limit}")


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """One stored series of one run's side, as exported."""

    recorded_at: float
    repo_full_name: str
    branch: str
    side: MeasuredSide
    sha: str
    run_id: int
    run_attempt: int
    pr_number: int | None
    platform: str
    metric: str
    unit: str
    samples: tuple[float, ...]
    from_fork: bool
    # How the metric is judged, and the run's settings fingerprint (``perfbot changes``
    # needs them to judge a series as a comparison would).
    better: Better = Better.HIGHER
    scale: Scale = Scale.RATIO
    settings: Settings = ()


_COLUMNS: Final = (
    "recorded_at, repo_full_name, branch, side, sha, run_id, run_attempt, pr_number,"
    " platform, metric, unit, samples, from_fork, better, scale, settings, id"
)


def history_sql(
    query: HistoryQuery,
    placeholder: Callable[[str], str],
    dialect: Literal["sqlite", "postgres"],
) -> tuple[str, dict[str, Any]]:
    """The SELECT of ``query``'s rows, newest first, and its named parameters.

    ``placeholder(name)`` is the backend's spelling of a named parameter.
    """
    where = [f"lower(repo_full_name) = lower({placeholder('repo')})"]
    params: dict[str, Any] = {"repo": storable(query.repo), "limit": query.limit}
    if query.platforms:
        alternatives = []
        for index, platform in enumerate(query.platforms):
            name, board = f"platform{index}", f"board{index}"
            params[name] = storable(platform)
            params[board] = storable(platform) + "/"
            alternatives.append(
                f"platform = {placeholder(name)} OR substr(platform, 1, "
                f"length({placeholder(board)})) = {placeholder(board)}"
            )
        where.append("(" + " OR ".join(f"({a})" for a in alternatives) + ")")
    if query.metric is not None:
        if dialect == "sqlite":
            where.append(f"metric GLOB {placeholder('metric')}")
            params["metric"] = sqlite_glob(storable(query.metric))
        else:
            where.append(f"metric LIKE {placeholder('metric')} ESCAPE '\\'")
            params["metric"] = like_pattern(storable(query.metric))
    if query.branch is not None:
        where.append(f"branch = {placeholder('branch')}")
        params["branch"] = storable(query.branch)
    if query.since is not None:
        where.append(f"recorded_at >= {placeholder('since')}")
        params["since"] = query.since
    if query.until is not None:
        where.append(f"recorded_at < {placeholder('until')}")
        params["until"] = query.until
    sql = (
        f"SELECT {_COLUMNS} FROM measurements WHERE {' AND '.join(where)}"
        f" ORDER BY recorded_at DESC, id DESC LIMIT {placeholder('limit')}"
    )
    return sql, params


def sqlite_glob(pattern: str) -> str:
    """``*`` and ``?`` as SQLite's GLOB reads them; ``[`` literal (``[[]``)."""
    return pattern.replace("[", "[[]")


def like_pattern(pattern: str) -> str:
    """``*`` and ``?`` as LIKE's ``%`` and ``_``; LIKE's own specials escaped with ``\\``."""
    escaped = pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%").replace("?", "_")


def history_rows(rows: list[Any]) -> list[HistoryRow]:
    """The query's rows (newest first) as HistoryRow, oldest first."""
    result = [
        HistoryRow(
            recorded_at=float(recorded_at),
            repo_full_name=str(repo),
            branch=str(branch),
            side=side,
            sha=str(sha),
            run_id=int(run_id),
            run_attempt=int(attempt),
            pr_number=None if pr_number is None else int(pr_number),
            platform=str(platform),
            metric=str(metric),
            unit=str(unit),
            samples=samples_from_text(samples),
            from_fork=bool(from_fork),
            better=Better(better),
            scale=Scale(scale),
            settings=settings_from_text(settings),
        )
        for (
            recorded_at,
            repo,
            branch,
            side,
            sha,
            run_id,
            attempt,
            pr_number,
            platform,
            metric,
            unit,
            samples,
            from_fork,
            better,
            scale,
            settings,
            _id,
        ) in rows
    ]
    result.reverse()
    return result


def repository_known_sql(placeholder: Callable[[str], str]) -> str:
    """Whether any row of a repository is stored (the CLI's "no measurements of …")."""
    return (
        "SELECT 1 FROM measurements"
        f" WHERE lower(repo_full_name) = lower({placeholder('repo')}) LIMIT 1"
    )
