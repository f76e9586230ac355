"""The SQLite store: one file, safe to share between processes.

SQL runs on one worker thread, except the writing of deliveries, which runs on the event
loop's own thread whenever it can do so without waiting (``perfbot.store._group_commit``).
What is SQLite's own here: the thread and its connection, the claim, and the processes'
presence (``perfbot.store.presence``); the rest is written once for both backends
(``perfbot.store._core``).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Concatenate, Final, ParamSpec, TypeVar

from perfbot.store._core import SQLStore
from perfbot.store._group_commit import AT_ONCE, LOCK_HELD, GroupCommit, immediate
from perfbot.store._migrations import migrate
from perfbot.store._queue import (
    DROP_LOCKS_OF,
    EXPIRE_LEASES_OF,
    KEY_BUSY,
)
from perfbot.store._rows import JOB_COLUMNS, job_from_row
from perfbot.store._sql import SQL, Params, Row, Steps
from perfbot.store.base import Job, NewJob
from perfbot.store.presence import Presence

P = ParamSpec("P")
T = TypeVar("T")

BUSY_TIMEOUT_MS: Final = 5000
# What ``observe_writes`` tells of each write on the event loop's connection.
WRITE_OUTCOMES: Final = (AT_ONCE, LOCK_HELD)
# Up to this many rows, a write of several is written on the loop's connection when it can
# be at once (a small report's measurements: a few dozen rows, well under a millisecond).
LOOP_ROWS: Final = 200


# Each branch walks the (status, due_at) index in order and stops at its first free job, so
# a claim does not read every queued row; the outer ORDER BY picks the older of the two.
_CLAIM: Final = SQL(
    f"""
    WITH candidate AS (
        SELECT id, due_at FROM (
            SELECT j.id, j.due_at FROM jobs AS j
            WHERE j.status = 'queued' AND j.due_at <= :now AND NOT {KEY_BUSY}
            ORDER BY j.due_at, j.id LIMIT 1
        )
        UNION ALL
        SELECT id, due_at FROM (
            SELECT j.id, j.due_at FROM jobs AS j
            WHERE j.status = 'running' AND j.lease_until < :now AND NOT {KEY_BUSY}
            ORDER BY j.due_at, j.id LIMIT 1
        )
        ORDER BY due_at, id LIMIT 1
    )
    UPDATE jobs
    SET status = 'running', lease_owner = :owner, lease_until = :until,
        attempts = attempts + 1
    WHERE id = (SELECT id FROM candidate)
    RETURNING {JOB_COLUMNS}
"""
)


# Whether a claim may find a job at all: a read, so that a worker with nothing to do takes
# no write lock (an idle process asks twice a second, and a woken one after every job).
# Wider than _CLAIM (it ignores the serial keys' locks): it never hides a job _CLAIM finds.
_ANY_DUE: Final = SQL(
    """
    SELECT 1 WHERE EXISTS (
        SELECT 1 FROM jobs WHERE status = 'queued' AND due_at <= :now
    ) OR EXISTS (
        SELECT 1 FROM jobs WHERE status = 'running' AND lease_until < :now
    )
    """
)


class SQLiteStore(SQLStore):
    """``Store`` on a SQLite file (or ``":memory:"``).

    sqlite3 connections belong to the thread that opened them and block while they wait, so
    one dedicated thread owns the connection and runs every statement that may wait;
    coroutines only await it. What never waits runs on a connection of the event loop's
    thread instead (``perfbot.store._group_commit``): the deliveries of a webhook burst,
    point reads, and small writes that get the write lock at once; one that does not goes
    to the thread. There every write is its own BEGIN IMMEDIATE transaction, which takes
    SQLite's write lock up front: processes sharing the file serialise their writes
    (waiting up to the busy timeout) instead of failing half-way through one.
    """

    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        self._path = path
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="perfbot-sqlite")
        self._conn: sqlite3.Connection | None = None  # touched on the worker thread only
        self._closed = False
        # Deliveries are written on the event loop's thread, through its own connection.
        self._deliveries = GroupCommit(path, self._run)
        # Which processes on this file are alive (a ":memory:" database has one).
        self._presence = None if path == ":memory:" else Presence(path)

    def observe_writes(self, outcome: Callable[[str], None]) -> None:
        """Tell ``outcome`` how each small write on the event loop's connection went:
        ``"at_once"``, or ``"lock_held"`` when another connection held the write lock and
        the write waited for it: a pause or two on the loop, then on the store's thread
        (``perfbot.store._group_commit``)."""
        self._deliveries.observe(outcome)

    async def _run(
        self,
        fn: Callable[Concatenate[sqlite3.Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run ``fn(connection, ...)`` on the worker thread."""
        if self._closed:
            raise RuntimeError(f"the store on {self._path} is closed")

        def task() -> T:
            return fn(self._connection(), *args, **kwargs)

        # A cancelled caller does not stop a statement already running: its transaction
        # still commits or rolls back whole. A claim lost that way comes back when its
        # lease expires.
        return await asyncio.get_running_loop().run_in_executor(self._executor, task)

    def _connection(self) -> sqlite3.Connection:
        # Opened lazily on the worker thread, the only thread allowed to use it.
        if self._conn is None:
            self._conn = _connect(self._path)
        return self._conn

    def _disconnect(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # The primitives the shared logic runs on (``SQLBackend``), each a job for the thread.

    async def _fetch(self, sql: SQL, params: Params) -> list[Row]:
        statement = sql.compiled("sqlite")
        return await self._run(_rows_of, statement.text, statement.bind(params))

    async def _peek(self, sql: SQL, params: Params) -> list[Row]:
        # On the loop's own connection where it can: no hop to the thread and back.
        statement = sql.compiled("sqlite")
        args = statement.bind(params)
        rows = None if self._closed else self._deliveries.peek(statement.text, args)
        if rows is not None:
            return rows
        return await self._run(_rows_of, statement.text, args)

    async def _fetch_if(self, probe: SQL, sql: SQL, params: Params) -> list[Row]:
        # The probe on the loop's connection costs a tenth of the hop to the thread.
        if not await self._peek(probe, params):
            return []
        return await self._fetch(sql, params)

    async def _poke(self, sql: SQL, params: Params) -> int:
        statement = sql.compiled("sqlite")
        args = statement.bind(params)
        if (
            not self._closed
            and (changed := await self._deliveries.poke(statement.text, args)) is not None
        ):
            return changed
        return await self._run(_write_one, statement.text, args)

    async def _write(self, sql: SQL, params: Params) -> int:
        statement = sql.compiled("sqlite")
        return await self._run(_write_one, statement.text, statement.bind(params))

    async def _write_many(
        self, sql: SQL, items: Sequence[T], row: Callable[[T], tuple[Any, ...]]
    ) -> int:
        text = sql.compiled("sqlite").text
        if len(items) <= LOOP_ROWS and not self._closed:
            # A few rows (a small report's) on the loop's connection: no hop to the thread.
            changed = await self._deliveries.poke_many(text, [row(item) for item in items])
            if changed is not None:
                return changed
        return await self._run(_write_rows, text, items, row)

    async def _atomically(self, steps: Steps) -> list[Row]:
        compiled = []
        for sql, each in steps:
            statement = sql.compiled("sqlite")
            compiled.append((statement.text, [statement.bind(params) for params in each]))
        return await self._run(_run_steps, compiled)

    async def setup(self) -> None:
        await self._run(_setup)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._deliveries.close()
        # Straight to the executor: _run would open a connection only to close it.
        await asyncio.get_running_loop().run_in_executor(self._executor, self._disconnect)
        if self._presence is not None:
            self._presence.close()
        # The thread is idle now; no need to block the loop joining it.
        self._executor.shutdown(wait=False)

    async def record_delivery(
        self, delivery_id: str, event: str, action: str | None, job: NewJob | None, now: float
    ) -> bool:
        # On the hot path of every webhook: a burst is one transaction (_group_commit).
        return await self._deliveries.record((delivery_id, event, action, job, now))

    async def claim(self, owner: str, lease_seconds: float, now: float) -> Job | None:
        params = {"now": now, "owner": owner, "until": now + lease_seconds}
        if not self._closed:
            due = _ANY_DUE.compiled("sqlite")
            if self._deliveries.peek(due.text, due.bind(params)) == []:
                return None  # nothing to claim (None: the probe could not run on the loop)
        # One short write that walks an index: on the loop's connection when the write lock
        # is free at once, else on the thread, which waits its turn.
        statement = _CLAIM.compiled("sqlite")
        rows = (
            None
            if self._closed
            else await self._deliveries.poke_rows(statement.text, statement.bind(params))
        )
        if rows is None:
            rows = await self._atomically([(_CLAIM, [params])])
        return job_from_row(rows[0]) if rows else None

    async def announce(self, owner_prefix: str) -> None:
        if self._presence is not None:
            await self._run(lambda _conn: self._presence_of().announce(owner_prefix))

    async def release_departed(self) -> list[str]:
        if self._presence is None:
            return []
        return await self._run(_release_departed, self._presence)

    def _presence_of(self) -> Presence:
        assert self._presence is not None
        return self._presence


# What runs on the worker thread ---------------------------------------------------------------


def _connect(path: str) -> sqlite3.Connection:
    # isolation_level=None: no implicit transactions; each write says BEGIN IMMEDIATE itself.
    conn = sqlite3.connect(path, isolation_level=None)
    # Before journal_mode: switching to WAL needs a lock another process may hold.
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    # WAL lets readers run beside the writer; NORMAL syncs at checkpoints only, which in WAL
    # can lose the last commits on power loss but never corrupts the file.
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _setup(conn: sqlite3.Connection) -> None:
    with immediate(conn):
        migrate(conn, time.time())


def _write_one(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> int:
    with immediate(conn):
        return conn.execute(sql, args).rowcount


def _write_rows(
    conn: sqlite3.Connection, sql: str, items: Sequence[T], row: Callable[[T], tuple[Any, ...]]
) -> int:
    # Encoded here, on the store's thread: 10,000 rows take a tenth of a second.
    rows = [row(item) for item in items]
    with immediate(conn):
        # executemany's rowcount is the sum over its rows: the ones actually changed.
        return conn.executemany(sql, rows).rowcount


def _run_steps(
    conn: sqlite3.Connection, steps: list[tuple[str, list[tuple[Any, ...]]]]
) -> list[Any]:
    rows: list[Any] = []
    with immediate(conn):
        for sql, each in steps:
            if len(each) == 1:
                # fetchall: a statement must have finished stepping before COMMIT.
                rows = conn.execute(sql, each[0]).fetchall()
            else:
                conn.executemany(sql, each)
                rows = []
    return rows


def _release_departed(conn: sqlite3.Connection, presence: Presence) -> list[str]:
    """Expire the leases and drop the PR locks of every process found to have ended."""
    freed = []
    for departed in presence.departed():
        prefix = departed.prefix
        claims = {"prefix": prefix, "length": len(prefix)}
        try:
            with immediate(conn):
                for sql in (EXPIRE_LEASES_OF, DROP_LOCKS_OF):
                    statement = sql.compiled("sqlite")
                    conn.execute(statement.text, statement.bind(claims))
        except BaseException:
            presence.release(departed)  # found again at the next look
            raise
        presence.forget(departed)
        freed.append(prefix)
    return freed


def _rows_of(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> list[Row]:
    return conn.execute(sql, args).fetchall()
