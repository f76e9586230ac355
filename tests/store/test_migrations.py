"""The one list of migrations: what each dialect runs of a released version never changes,
and a database of any earlier version migrates to the latest."""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import sqlite3
from pathlib import Path

import psycopg
import pytest

from perfbot.store import PostgresStore, SQLiteStore
from perfbot.store._group_commit import immediate
from perfbot.store._migrations import migrate
from perfbot.store._queue import COMPLETE, INSERT_JOB
from perfbot.store._schema import MIGRATIONS, PG_MIGRATIONS, STEPS
from perfbot.store._series import INSERT_MEASUREMENT
from perfbot.store._sql import SQL

# The digest of each released version's statements, as each dialect runs them. The DDL is
# shared between the dialects (and its types are words of ``WORDS``): an edit there would
# change a released migration of one backend or both without touching its entry.
RELEASED = {
    "sqlite": (
        "dd197f1f683b",
        "408f1328d56d",
        "4dade7b3e206",
        "d4ff48309385",
        "c0e172311c84",
        "225249383c47",
        "c8dc6174634a",
        "07d66b5c0808",
        "ba61668eb281",
        "5faa0cfbee88",
        "f4a5bc33609e",
        "f2dcc260d3aa",
        "d3606b19b328",
        "4774c14ec3bd",
    ),
    "postgres": (
        "bf310289dde9",
        "49cc32eef255",
        "38727826ee2d",
        "27171160b4c6",
        "c0e172311c84",
        "f31d54b41905",
        "af65fb8b7333",
        "ba62fa478d0b",
        "ba61668eb281",
        "61d50d670513",
        "6cf050b576b2",
        "ca0bb5bdba43",
        "2f6c07eeed05",
        "e3b0c44298fc",
    ),
}


def digest(statements: tuple[str, ...]) -> str:
    return hashlib.sha256("\x00".join(statements).encode()).hexdigest()[:12]


@pytest.mark.parametrize(
    ("dialect", "migrations"), [("sqlite", MIGRATIONS), ("postgres", PG_MIGRATIONS)]
)
def test_released_migrations_are_never_edited(
    dialect: str, migrations: tuple[tuple[str, ...], ...]
) -> None:
    assert len(migrations) == len(STEPS)
    released = RELEASED[dialect]
    assert tuple(digest(version) for version in migrations[: len(released)]) == released


def sqlite_at(conn: sqlite3.Connection, version: int) -> None:
    """``conn``'s database as the first ``version`` migrations leave it."""
    conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at REAL)")
    for number, statements in enumerate(MIGRATIONS[:version], start=1):
        for statement in statements:
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version VALUES (?, 0)", (number,))


@pytest.mark.parametrize("version", range(len(MIGRATIONS) + 1))
async def test_a_sqlite_database_of_any_version_migrates(tmp_path: Path, version: int) -> None:
    path = str(tmp_path / "perfbot.db")
    with sqlite3.connect(path) as conn:
        sqlite_at(conn, version)
    conn.close()
    store = SQLiteStore(path)
    try:
        await store.setup()
        assert await store.record_delivery("d1", "push", None, None, 1.0)
    finally:
        await store.close()
    with sqlite3.connect(path) as conn:
        versions = [row[0] for row in conn.execute("SELECT version FROM schema_version")]
    conn.close()
    assert versions == list(range(1, len(MIGRATIONS) + 1))


@pytest.mark.parametrize("version", range(len(PG_MIGRATIONS) + 1))
async def test_a_postgresql_database_of_any_version_migrates(pg_url: str, version: int) -> None:
    conn = await psycopg.AsyncConnection.connect(pg_url, autocommit=True)
    async with conn, conn.transaction():
        await conn.execute(
            "CREATE TABLE schema_version"
            " (version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
        )
        for number, statements in enumerate(PG_MIGRATIONS[:version], start=1):
            for statement in statements:
                await conn.execute(statement)
            await conn.execute("INSERT INTO schema_version VALUES (%s, 0)", (number,))
    store = PostgresStore(pg_url)
    try:
        await store.setup()
        assert await store.record_delivery("d1", "push", None, None, 1.0)
    finally:
        await store.close()
    check = await psycopg.AsyncConnection.connect(pg_url, autocommit=True)
    async with check:
        cur = await check.execute("SELECT version FROM schema_version ORDER BY version")
        versions = [row[0] for row in await cur.fetchall()]
    assert versions == list(range(1, len(PG_MIGRATIONS) + 1))


def _temporary_tables(conn: sqlite3.Connection, sql: SQL) -> int:
    """How many temporary b-trees SQLite builds to run ``sql`` once."""
    statement = sql.compiled("sqlite")
    program = conn.execute("EXPLAIN " + statement.text, [None] * len(statement.names))
    return sum(1 for op in program if op[1] == "OpenEphemeral")


async def test_sqlite_checks_its_lists_of_values_without_temporary_tables(tmp_path: Path) -> None:
    # Migration 14: a CHECK of `x IN (a, b, c)` made SQLite build a temporary b-tree for
    # every row written (two per measurement, one per job write).
    path = str(tmp_path / "perfbot.db")
    writes = (INSERT_MEASUREMENT, INSERT_JOB, COMPLETE)
    with sqlite3.connect(path, isolation_level=None) as conn:
        sqlite_at(conn, 13)
        assert [_temporary_tables(conn, sql) for sql in writes] == [2, 1, 1]
        conn.execute(
            "INSERT INTO jobs (delivery_id, event, payload, serial_key, status, due_at,"
            " created_at) VALUES ('d0', 'push', '{}', 'k', 'queued', 1, 1)"
        )
    conn.close()
    store = SQLiteStore(path)
    try:
        await store.setup()
        # The connection that migrated reads the rewritten schema too.
        migrated = await store._run(lambda conn: [_temporary_tables(conn, sql) for sql in writes])
        assert migrated == [0, 0, 0]
    finally:
        await store.close()
    with sqlite3.connect(path, isolation_level=None) as conn:
        assert [_temporary_tables(conn, sql) for sql in writes] == [0, 0, 0]
        assert conn.execute("SELECT delivery_id, status FROM jobs").fetchall() == [("d0", "queued")]
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        # The same conditions hold as before.
        with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
            conn.execute("UPDATE jobs SET status = 'lost'")
        assert (
            "side = 'base' OR side = 'head' OR side = 'push'"
            in conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'measurements'").fetchone()[
                0
            ]
        )
    conn.close()


def _defensive(conn: sqlite3.Connection) -> None:
    """SQLite's defensive mode on ``conn``, as macOS's own SQLite has it on every
    connection: no edit of sqlite_schema, whatever ``PRAGMA writable_schema`` says.
    Python 3.12 has ``Connection.setconfig``; 3.11 calls the library (the connection
    object holds its ``sqlite3 *`` just after the object header)."""
    if hasattr(conn, "setconfig"):
        conn.setconfig(1010, True)  # SQLITE_DBCONFIG_DEFENSIVE
        return
    library = ctypes.CDLL(ctypes.util.find_library("sqlite3") or "libsqlite3.so.0")
    handle = ctypes.c_void_p.from_address(id(conn) + ctypes.sizeof(ctypes.c_void_p) * 2)
    done = ctypes.c_int(-1)
    status = library.sqlite3_db_config(handle, 1010, 1, ctypes.byref(done))
    assert (status, done.value) == (0, 1), "defensive mode not turned on"


def test_a_defensive_sqlite_migrates_without_the_schema_edits(tmp_path: Path) -> None:
    path = str(tmp_path / "perfbot.db")
    with sqlite3.connect(path, isolation_level=None) as conn:
        sqlite_at(conn, 13)
    conn.close()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        _defensive(conn)
        with pytest.raises(sqlite3.OperationalError, match="may not be modified"):
            conn.execute("UPDATE sqlite_schema SET sql = sql WHERE 0")
        with immediate(conn):
            assert migrate(conn, 1.0) == len(STEPS)
        assert conn.execute("SELECT MAX(version) FROM schema_version").fetchone() == (14,)
        # The constraints are as they were, and hold.
        text = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'jobs'").fetchone()[0]
        assert "status IN ('queued', 'running', 'done', 'failed')" in text
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
            conn.execute(
                "INSERT INTO jobs (delivery_id, event, payload, serial_key, status, due_at,"
                " created_at) VALUES ('d0', 'push', '{}', 'k', 'lost', 1, 1)"
            )
    finally:
        conn.close()
