"""Runs the schema's migrations (``perfbot.store._schema``) on a SQLite or PostgreSQL
database, each version once, one process or replica at a time."""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING, Final

from perfbot.errors import PerfbotError
from perfbot.store._schema import PG_MIGRATIONS, STEPS, WORDS, SchemaEdit, rendered
from perfbot.store._sql import SQL

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg.rows import TupleRow

_VERSION_TABLE: Final = (
    "CREATE TABLE IF NOT EXISTS schema_version"
    " (version INTEGER PRIMARY KEY, applied_at {real} NOT NULL)"
)
_CURRENT: Final = SQL("SELECT COALESCE(MAX(version), 0) FROM schema_version")
_APPLIED: Final = SQL("INSERT INTO schema_version (version, applied_at) VALUES (:version, :at)")
# The key of pg_advisory_xact_lock(bigint), perfbot's migration lock on PostgreSQL (the
# claim's per-serial-key locks use the separate two-int4 key space, so they never collide
# with this one). The bytes of "perfbotM".
MIGRATION_LOCK_KEY: Final = 0x70657266626F744D


class SchemaTooNew(PerfbotError, RuntimeError):
    """The database was migrated by a newer perfbot; running older code on it is unsafe."""


def _pending(current: int) -> range:
    """The versions a database at ``current`` lacks; a newer one is refused."""
    if current > len(STEPS):
        raise SchemaTooNew(
            f"the database schema is at version {current} but this perfbot knows only"
            f" {len(STEPS)}; upgrade perfbot or use another database"
        )
    return range(current + 1, len(STEPS) + 1)


def migrate(conn: sqlite3.Connection, now: float) -> int:
    """Run the migrations ``conn``'s SQLite database lacks; return the resulting version.

    Call inside a BEGIN IMMEDIATE transaction, so processes starting together migrate one
    after the other: the second sees the first's version and has nothing left to do.
    """
    conn.execute(_VERSION_TABLE.format_map(WORDS["sqlite"]))
    current, applied = _CURRENT.compiled("sqlite"), _APPLIED.compiled("sqlite")
    (at,) = conn.execute(current.text).fetchone()
    for version in _pending(int(at)):
        for step in STEPS[version - 1]:
            statement = rendered(step, "sqlite")
            if statement is None or (isinstance(step, SchemaEdit) and not _schema_writable(conn)):
                continue
            conn.execute(statement)
        conn.execute(applied.text, applied.bind({"version": version, "at": now}))
    return len(STEPS)


def _schema_writable(conn: sqlite3.Connection) -> bool:
    """Whether ``conn`` may edit ``sqlite_schema``: an edit of no row, refused when it is
    prepared if not. (Defensive mode leaves ``PRAGMA writable_schema`` reading 1.) A
    statement refused so leaves the transaction as it was."""
    try:
        conn.execute("UPDATE sqlite_schema SET sql = sql WHERE 0")
    except sqlite3.OperationalError:
        return False
    return True


async def migrate_postgres(conn: AsyncConnection[TupleRow]) -> int:
    """Run the migrations ``conn``'s PostgreSQL database lacks; return the resulting version.

    ``conn`` must be outside a transaction: this runs one. It first takes a transaction-level
    advisory lock, so replicas starting together migrate one after the other; the second
    waits, then sees the first's version and has nothing left to do.
    """
    current, applied = _CURRENT.compiled("postgres"), _APPLIED.compiled("postgres")
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
        await conn.execute(_VERSION_TABLE.format_map(WORDS["postgres"]))
        row = await (await conn.execute(current.text)).fetchone()
        assert row is not None  # an aggregate always returns a row
        for version in _pending(int(row[0])):
            for statement in PG_MIGRATIONS[version - 1]:
                await conn.execute(statement)
            params = {"version": version, "at": time.time()}
            await conn.execute(applied.text, applied.bind(params))
    return len(STEPS)
