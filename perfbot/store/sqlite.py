"""The SQLite store: one file, safe to share between processes.

SQL runs on one worker thread, except the writing of deliveries, which runs on the event
loop's own thread whenever it can do so without waiting.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Concatenate, Final, ParamSpec, TypeVar

from perfbot.store._migrations import migrate
from perfbot.store._queue import (
    DROP_LOCKS_OF,
    EXPIRE_LEASES_OF,
    INSERT_DELIVERY,
    INSERT_JOB,
    KEY_BUSY,
    DeliveriesSQL,
    QueueSQL,
)
from perfbot.store._rows import (
    JOB_COLUMNS,
    job_from_row,
)
from perfbot.store._series import MeasurementsSQL
from perfbot.store._sql import SQL, Params, Row, Steps
from perfbot.store._state import InstallationsSQL, LocksSQL, PullsSQL
from perfbot.store.base import Job, NewJob
from perfbot.store.presence import Presence

P = ParamSpec("P")
T = TypeVar("T")

BUSY_TIMEOUT_MS: Final = 5000
# The loop's connection hands the WAL to the thread for a checkpoint this often.
CHECKPOINT_EVERY_COMMITS: Final = 200


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


class SQLiteStore(DeliveriesSQL, QueueSQL, PullsSQL, InstallationsSQL, LocksSQL, MeasurementsSQL):
    """``Store`` on a SQLite file (or ``":memory:"``).

    sqlite3 connections belong to the thread that opened them and block while they wait, so
    one dedicated thread owns the connection and runs every statement; coroutines only await
    it. The one exception is ``record_delivery``, on the hot path of every webhook: see
    ``_flush_deliveries``. Every write is its own BEGIN IMMEDIATE transaction, which takes
    SQLite's write lock up front: processes sharing the file serialise their writes (waiting
    up to the busy timeout) instead of failing half-way through one.
    """

    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        self._path = path
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="perfbot-sqlite")
        self._conn: sqlite3.Connection | None = None  # touched on the worker thread only
        self._closed = False
        self._pending: list[_PendingDelivery] = []
        self._flush_scheduled = False
        # Deliveries are written on the event loop's thread, through its own connection.
        self._loop_conn: sqlite3.Connection | None = None
        self._loop_thread: int | None = None
        self._loop_commits = 0
        self._checkpointing = False
        self._background: set[asyncio.Task[None]] = set()
        # Which processes on this file are alive (a ":memory:" database has one).
        self._presence = None if path == ":memory:" else Presence(path)

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
        return await self._run(_fetch, statement.text, statement.bind(params))

    async def _write(self, sql: SQL, params: Params) -> int:
        statement = sql.compiled("sqlite")
        return await self._run(_write_one, statement.text, statement.bind(params))

    async def _write_many(
        self, sql: SQL, items: Sequence[T], row: Callable[[T], tuple[Any, ...]]
    ) -> int:
        return await self._run(_write_rows, sql.compiled("sqlite").text, items, row)

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
        if self._loop_conn is not None:
            self._loop_conn.close()
            self._loop_conn = None
        # Straight to the executor: _run would open a connection only to close it.
        await asyncio.get_running_loop().run_in_executor(self._executor, self._disconnect)
        if self._presence is not None:
            self._presence.close()
        # The thread is idle now; no need to block the loop joining it.
        self._executor.shutdown(wait=False)

    async def record_delivery(
        self, delivery_id: str, event: str, action: str | None, job: NewJob | None, now: float
    ) -> bool:
        # Group commit: the deliveries read in one turn of the event loop are written in
        # one transaction. Each caller still hears back only after its delivery is
        # committed, but a burst costs one transaction instead of one per delivery.
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        self._pending.append(((delivery_id, event, action, job, now), future))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            loop.call_soon(self._flush_deliveries)
        return await future

    def _flush_deliveries(self) -> None:
        """Write the pending deliveries on the event loop's own connection, or else the thread's.

        Why on the loop: the batch is a few short inserts, and a commit in WAL with
        synchronous=NORMAL does not sync. Handed to the store's thread, the loop and the
        thread took turns at the GIL for every row bound, and ingest ran at two thirds of
        the rate (``bench/ingest.py``). The loop's connection never waits for SQLite's
        write lock: when another connection holds it, the batch goes to the thread, which
        does wait.
        """
        self._flush_scheduled = False
        batch, self._pending = self._pending, []
        rows = [item for item, _ in batch]
        try:
            conn = self._loop_connection()
            results = None if conn is None else _record_deliveries(conn, rows)
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                _settle(batch, exc)
                return
            results = None
        except Exception as exc:
            _settle(batch, exc)
            return
        if results is None:
            task = asyncio.get_running_loop().create_task(self._flush_on_thread(batch))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            return
        _settle(batch, results)
        self._loop_commits += 1
        if self._loop_commits % CHECKPOINT_EVERY_COMMITS == 0:
            self._checkpoint_soon()

    async def _flush_on_thread(self, batch: list[_PendingDelivery]) -> None:
        try:
            results = await self._run(_record_deliveries, [item for item, _ in batch])
        except Exception as exc:
            _settle(batch, exc)
        else:
            _settle(batch, results)

    def _loop_connection(self) -> sqlite3.Connection | None:
        """The event loop thread's connection, or None where there can't be one."""
        if self._closed or self._path == ":memory:":
            return None  # a second connection to ":memory:" would be another database
        if self._loop_conn is None:
            self._loop_conn = _connect_for_loop(self._path)
            self._loop_thread = threading.get_ident()
        elif self._loop_thread != threading.get_ident():
            return None  # a store used from a second loop's thread: sqlite3 forbids it
        return self._loop_conn

    def _checkpoint_soon(self) -> None:
        # The loop's connection leaves the WAL to grow (a checkpoint syncs the file); the
        # thread copies it back into the database without blocking writers.
        if self._checkpointing or self._closed:
            return
        self._checkpointing = True

        async def checkpoint() -> None:
            try:
                await self._run(_checkpoint)
            except Exception:
                pass  # the next checkpoint, or the thread's own automatic one, catches up
            finally:
                self._checkpointing = False

        task = asyncio.get_running_loop().create_task(checkpoint())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def claim(self, owner: str, lease_seconds: float, now: float) -> Job | None:
        params = {"now": now, "owner": owner, "until": now + lease_seconds}
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


def _connect_for_loop(path: str) -> sqlite3.Connection:
    """A connection for the event loop's thread: it must never block.

    No busy timeout (a locked database is an error at once, and the caller goes to the
    thread instead) and no automatic checkpoint (the sync it ends with). The schema and
    WAL mode are already set up by the thread's connection.
    """
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 0")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    return conn


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused because another connection holds a lock (SQLITE_BUSY...)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF == sqlite3.SQLITE_BUSY


def _checkpoint(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


@contextmanager
def _write(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction, holding the database's write lock from its first statement."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _setup(conn: sqlite3.Connection) -> None:
    with _write(conn):
        migrate(conn, time.time())


def _write_one(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> int:
    with _write(conn):
        return conn.execute(sql, args).rowcount


def _write_rows(
    conn: sqlite3.Connection, sql: str, items: Sequence[T], row: Callable[[T], tuple[Any, ...]]
) -> int:
    # Encoded here, on the store's thread: 10,000 rows take a tenth of a second.
    rows = [row(item) for item in items]
    with _write(conn):
        # executemany's rowcount is the sum over its rows: the ones actually changed.
        return conn.executemany(sql, rows).rowcount


def _run_steps(
    conn: sqlite3.Connection, steps: list[tuple[str, list[tuple[Any, ...]]]]
) -> list[Any]:
    rows: list[Any] = []
    with _write(conn):
        for sql, each in steps:
            if len(each) == 1:
                # fetchall: a statement must have finished stepping before COMMIT.
                rows = conn.execute(sql, each[0]).fetchall()
            else:
                conn.executemany(sql, each)
                rows = []
    return rows


_DeliveryRow = tuple[str, str, str | None, NewJob | None, float]
_PendingDelivery = tuple[_DeliveryRow, "asyncio.Future[bool]"]


def _settle(batch: list[_PendingDelivery], outcome: list[bool] | BaseException) -> None:
    """Give each waiting caller its delivery's result, or the batch's error."""
    for index, (_, future) in enumerate(batch):
        if future.done():
            continue  # the caller was cancelled
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome[index])


def _record_deliveries(conn: sqlite3.Connection, rows: list[_DeliveryRow]) -> list[bool]:
    """Several deliveries in one transaction; for each, whether it was new.

    One lookup and two bulk inserts per batch rather than two statements per delivery:
    under the write lock nothing else can insert between the lookup and the inserts.
    """
    with _write(conn):
        seen = _known_deliveries(conn, [row[0] for row in rows])
        results, fresh = [], []
        for row in rows:
            new = row[0] not in seen
            if new:
                seen.add(row[0])  # the same id twice in one batch: the first one wins
                fresh.append(row)
            results.append(new)
        delivery, queued = INSERT_DELIVERY.compiled("sqlite"), INSERT_JOB.compiled("sqlite")
        conn.executemany(
            delivery.text,
            [
                delivery.bind({"id": delivery_id, "event": event, "action": action, "now": now})
                for delivery_id, event, action, _, now in fresh
            ],
        )
        conn.executemany(
            queued.text,
            [
                queued.bind(
                    {
                        "delivery_id": delivery_id,
                        "event": job.event,
                        "payload": job.payload,
                        "serial_key": job.serial_key,
                        "installation_id": job.installation_id,
                        "now": now,
                    }
                )
                for delivery_id, _, _, job, now in fresh
                if job is not None
            ],
        )
        return results


def _known_deliveries(conn: sqlite3.Connection, ids: list[str]) -> set[str]:
    known: set[str] = set()
    for start in range(0, len(ids), _IN_CHUNK):
        chunk = ids[start : start + _IN_CHUNK]
        query = f"SELECT id FROM deliveries WHERE id IN ({', '.join('?' * len(chunk))})"
        known.update(row[0] for row in conn.execute(query, chunk))
    return known


# Host parameters per lookup, well under SQLite's limit (32,766 since 3.32, 999 before).
_IN_CHUNK = 500


def _release_departed(conn: sqlite3.Connection, presence: Presence) -> list[str]:
    """Expire the leases and drop the PR locks of every process found to have ended."""
    freed = []
    for departed in presence.departed():
        prefix = departed.prefix
        claims = {"prefix": prefix, "length": len(prefix)}
        try:
            with _write(conn):
                for sql in (EXPIRE_LEASES_OF, DROP_LOCKS_OF):
                    statement = sql.compiled("sqlite")
                    conn.execute(statement.text, statement.bind(claims))
        except BaseException:
            presence.release(departed)  # found again at the next look
            raise
        presence.forget(departed)
        freed.append(prefix)
    return freed


def _fetch(conn: sqlite3.Connection, sql: str, params: Any) -> list[Any]:
    return conn.execute(sql, params).fetchall()
