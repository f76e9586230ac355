"""The durable store: its interface, and ``open_store`` choosing a backend from a URL.

The backends are imported when a store is opened, not with this package: importing the
store's types (``perfbot.store.base``: ``NewJob``, ``Job``, ``PullState``…) loads neither
sqlite3 nor psycopg.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from perfbot.store.base import Job, JobOutcome, JobStatus, NewJob, PullState, Store
from perfbot.store.measurements import CommitSamples, MeasurementRecord, RunSeries, SeriesKey

if TYPE_CHECKING:
    from perfbot.store.postgres import DatabaseUnavailable, PostgresStore
    from perfbot.store.sqlite import SQLiteStore

__all__ = [
    "CommitSamples",
    "DatabaseUnavailable",
    "Job",
    "JobOutcome",
    "JobStatus",
    "MeasurementRecord",
    "NewJob",
    "PostgresStore",
    "PullState",
    "RunSeries",
    "SQLiteStore",
    "SeriesKey",
    "Store",
    "open_store",
]

_SQLITE_PREFIX: Final = "sqlite:///"
_POSTGRES_SCHEMES: Final = ("postgresql", "postgres")
_ACCEPTED: Final = (
    "a SQLite file path (data/perfbot.db), sqlite:///relative/path.db"
    " or sqlite:////absolute/path.db, or postgresql://user:password@host:port/database"
)


def open_store(database_url: str, *, pool_size: int | None = None) -> Store:
    """The store ``database_url`` names; call ``setup()`` on it before use.

    ``pool_size`` caps a PostgreSQL store's connections (SQLite has one). A malformed URL
    raises ``ValueError``; an unreachable database raises ``DatabaseUnavailable`` from
    ``setup()``. Neither message contains the password.
    """
    from perfbot.store.sqlite import SQLiteStore  # noqa: PLC0415

    scheme, sep, _ = database_url.partition("://")
    if sep and scheme.split("+")[0].lower() in _POSTGRES_SCHEMES:
        try:
            from perfbot.store.postgres import PostgresStore  # noqa: PLC0415
        except ModuleNotFoundError as exc:
            if not (exc.name or "").startswith("psycopg"):
                raise
            # psycopg is the optional extra `postgres` (pyproject.toml).
            raise ValueError(
                "a postgresql:// database needs the PostgreSQL driver, which is not installed:"
                " pip install 'perfbot[postgres]'"
            ) from None
        if pool_size is None:
            return PostgresStore(database_url)
        return PostgresStore(database_url, pool_size=pool_size)
    if database_url.startswith(_SQLITE_PREFIX) and len(database_url) > len(_SQLITE_PREFIX):
        # sqlite:///a.db is the relative path a.db; sqlite:////a.db keeps its slash: /a.db.
        return SQLiteStore(database_url.removeprefix(_SQLITE_PREFIX))
    if sep or not database_url:
        shown = _without_password(database_url)
        raise ValueError(f"unsupported database URL {shown!r}; use {_ACCEPTED}")
    return SQLiteStore(database_url)


def _without_password(url: str) -> str:
    """``url`` with the password of its authority masked, for an error message."""
    try:
        password = urlsplit(url).password
    except ValueError:
        return url.partition("://")[0] + "://…"
    return url.replace(f":{password}@", ":***@", 1) if password else url


def __getattr__(name: str) -> Any:
    """The backends' names, imported on first use: psycopg is an optional extra, and the
    store's types are read where no database is opened (triage)."""
    if name in ("DatabaseUnavailable", "PostgresStore"):
        from perfbot.store import postgres  # noqa: PLC0415

        return getattr(postgres, name)
    if name == "SQLiteStore":
        from perfbot.store import sqlite  # noqa: PLC0415

        return sqlite.SQLiteStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
