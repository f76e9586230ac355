"""The durable store: its interface, and ``open_store`` choosing a backend from a URL."""

from __future__ import annotations

from typing import Final

from perfbot.store.base import Job, JobStatus, NewJob, PullState, Store
from perfbot.store.sqlite import SQLiteStore

__all__ = ["Job", "JobStatus", "NewJob", "PullState", "SQLiteStore", "Store", "open_store"]

_SQLITE_PREFIX: Final = "sqlite:///"
_POSTGRES_SCHEMES: Final = ("postgresql", "postgres")
_ACCEPTED: Final = (
    "a SQLite file path (data/perfbot.db), sqlite:///relative/path.db"
    " or sqlite:////absolute/path.db"
)


def open_store(database_url: str) -> Store:
    """The store ``database_url`` names; call ``setup()`` on it before use."""
    scheme, sep, _ = database_url.partition("://")
    if sep and scheme.split("+")[0].lower() in _POSTGRES_SCHEMES:
        raise ValueError("PostgreSQL support is not built yet in this version; use a SQLite path")
    if database_url.startswith(_SQLITE_PREFIX) and len(database_url) > len(_SQLITE_PREFIX):
        # sqlite:///a.db is the relative path a.db; sqlite:////a.db keeps its slash: /a.db.
        return SQLiteStore(database_url.removeprefix(_SQLITE_PREFIX))
    if sep or not database_url:
        raise ValueError(f"unsupported database URL {database_url!r}; use {_ACCEPTED}")
    return SQLiteStore(database_url)
