"""SQLite's group commit of webhook deliveries, written on the event loop's own thread.

The deliveries read in one turn of the event loop are written in one transaction: each
caller still hears back only after its delivery is committed, but a burst costs one
transaction instead of one per delivery. The batch is written on a connection of the
event loop's thread whenever that needs no waiting: the batch is a few short inserts, and
a commit in WAL with synchronous=NORMAL does not sync. Handed to the store's thread, the
loop and the thread took turns at the GIL for every row bound, and ingest ran at two
thirds of the rate (``bench/ingest.py``). The loop's connection never waits for SQLite's
write lock: when another connection holds it, the batch goes to the store's thread, which
does wait. The store's other small writes (``poke``) try again on the loop after a pause
or two of it first (``LOCK_PAUSES``).
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, Concatenate, Final, ParamSpec, Protocol, TypeVar

from perfbot.store._queue import INSERT_DELIVERY, INSERT_JOB
from perfbot.store.base import NewJob

P = ParamSpec("P")
T = TypeVar("T")

# The loop's connection hands the WAL to the thread for a checkpoint this often.
CHECKPOINT_EVERY_COMMITS: Final = 200
# Rows per multi-row INSERT at most, and host parameters in one at most: SQLite's limit
# before 3.32 (32,766 since). A job's 8 parameters a row fit 100 rows; a measurement's 23,
# 43 rows.
_ROWS_CHUNK: Final = 100
_MAX_PARAMETERS: Final = 999
# Statements the loop's connection keeps prepared: the two inserts for each size of batch
# (up to _ROWS_CHUNK rows), a report's measurements for each count of rows, the rest,
# rather than sqlite3's default 128.
_CACHED_STATEMENTS: Final = 384

# A small write that met another connection's write lock is tried again on the loop's
# connection after each of these pauses, then handed to the store's thread. The lock's
# holder is most often the other process's own small write, over within a millisecond;
# a pause of the task costs a timer, the thread a hop there and back and turns at the GIL.
# (The loop's timers tick in milliseconds: a shorter pause lasts as long.)
LOCK_PAUSES: Final = (0.001, 0.002)

DeliveryRow = tuple[str, str, str | None, NewJob | None, float]
# How a write tried on the loop's connection went (``GroupCommit.observe``): committed at
# once, or it met another connection's write lock (it waited for it, on the loop or on the
# store's thread).
AT_ONCE: Final = "at_once"
LOCK_HELD: Final = "lock_held"
_Pending = tuple[DeliveryRow, "asyncio.Future[bool]"]


class OnThread(Protocol):
    """The store's way to run ``fn(connection, ...)`` on its worker thread."""

    def __call__(
        self,
        fn: Callable[Concatenate[sqlite3.Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> Awaitable[T]: ...


class GroupCommit:
    """The pending deliveries of the SQLite file ``path``, and the loop's connection."""

    def __init__(self, path: str, on_thread: OnThread) -> None:
        self._path = path
        self._on_thread = on_thread
        self._closed = False
        self._pending: list[_Pending] = []
        self._flush_scheduled = False
        self._conn: sqlite3.Connection | None = None
        self._thread: int | None = None
        self._commits = 0
        self._checkpointing = False
        self._background: set[asyncio.Task[None]] = set()
        self._observe: Callable[[str], None] | None = None

    def observe(self, outcome: Callable[[str], None]) -> None:
        """Tell ``outcome`` how each write tried on the loop's connection went (``AT_ONCE``
        or ``LOCK_HELD``): how often processes sharing the file wait for each other."""
        self._observe = outcome

    def _observed(self, outcome: str) -> None:
        if self._observe is not None:
            self._observe(outcome)

    async def record(self, row: DeliveryRow) -> bool:
        """Write ``row`` with the others of this turn of the loop; whether it was new."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        self._pending.append((row, future))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            loop.call_soon(self._flush)
        return await future

    def close(self) -> None:
        """No more writes on the loop (the store's thread says it is closed)."""
        self._closed = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _flush(self) -> None:
        """Write the pending deliveries on the loop's connection, or else the thread's."""
        self._flush_scheduled = False
        batch, self._pending = self._pending, []
        rows = [item for item, _ in batch]
        conn = None
        try:
            conn = self._connection()
            results = None if conn is None else record_deliveries(conn, rows)
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                _settle(batch, exc)
                return
            results = None
        except Exception as exc:
            _settle(batch, exc)
            return
        if results is None:
            if conn is not None:
                self._observed(LOCK_HELD)
            self._in_background(self._flush_on_thread(batch))
            return
        _settle(batch, results)
        self._observed(AT_ONCE)
        self._commits += 1
        if self._commits % CHECKPOINT_EVERY_COMMITS == 0:
            self._checkpoint_soon()

    async def _flush_on_thread(self, batch: list[_Pending]) -> None:
        try:
            results = await self._on_thread(record_deliveries, [item for item, _ in batch])
        except Exception as exc:
            _settle(batch, exc)
        else:
            _settle(batch, results)

    def _connection(self) -> sqlite3.Connection | None:
        """The event loop thread's connection, or None where there can't be one."""
        if self._closed or self._path == ":memory:":
            return None  # a second connection to ":memory:" would be another database
        if self._conn is None:
            self._conn = _connect_for_loop(self._path)
            self._thread = threading.get_ident()
        elif self._thread != threading.get_ident():
            return None  # a store used from a second loop's thread: sqlite3 forbids it
        return self._conn

    def peek(self, sql: str, args: tuple[Any, ...]) -> list[Any] | None:
        """The rows of a point read on the loop's connection, or None when it cannot run
        there at once (no such connection, or a lock in the way): the caller goes to the
        thread. A read in WAL mode waits for no writer, and a key's row or two costs less
        than the hop to the thread."""
        conn = self._connection()
        if conn is None:
            return None
        try:
            return conn.execute(sql, args).fetchall()
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                return None
            raise

    async def poke(self, sql: str, args: tuple[Any, ...]) -> int | None:
        """One small write (a row by its key) in a transaction of its own on the loop's
        connection; the rows it changed, or None when it cannot run there (no such
        connection, or another writer still holds the lock after ``LOCK_PAUSES``): the
        caller goes to the thread, which waits its turn."""
        return await self._small_write(lambda conn: conn.execute(sql, args).rowcount, alone=True)

    async def poke_rows(self, sql: str, args: tuple[Any, ...]) -> list[Any] | None:
        """``poke`` of a write that returns rows (``RETURNING``: a claim); its rows."""
        # fetchall: the statement commits when it has finished stepping.
        return await self._small_write(lambda conn: conn.execute(sql, args).fetchall(), alone=True)

    async def poke_many(self, sql: str, rows: list[tuple[Any, ...]]) -> int | None:
        """``poke`` of an INSERT of one row (``_of_rows``) for each of ``rows`` (a report's
        few measurements), as one INSERT of them all; the rows changed.

        One statement, its own transaction: executemany stepped the statement once a row,
        between a BEGIN IMMEDIATE and a COMMIT of their own."""
        if not sql.lstrip().upper().startswith("INSERT"):
            raise ValueError("poke_many takes an INSERT of one row")
        if not rows:
            return 0
        chunks = _chunked(sql, len(rows[0]), [value for row in rows for value in row])

        def write(conn: sqlite3.Connection) -> int:
            return sum(conn.execute(text, values).rowcount for text, values in chunks)

        return await self._small_write(write, alone=len(chunks) == 1)

    async def _small_write(
        self, write: Callable[[sqlite3.Connection], T], *, alone: bool = False
    ) -> T | None:
        """``write`` on the loop's connection: at once, or after a pause when another
        connection holds the write lock (``LOCK_PAUSES``), else not at all. Counted once
        it lands or goes to the thread, ``LOCK_HELD`` when it met the lock.

        A caller cancelled during a pause drops its write, as a write cancelled before the
        thread started it always was; a store closed meanwhile refuses it, as it refuses
        any write after ``close``.

        ``alone``: it is one statement, its own transaction (autocommit): BEGIN IMMEDIATE
        and COMMIT around it were two more statements to run for nothing, a write lock it
        could not get is the same refusal, and the thread, which waits for the lock, runs
        it under BEGIN IMMEDIATE as ever."""
        met_lock, pauses = False, iter(LOCK_PAUSES)
        while True:
            conn = self._connection()
            if conn is None:
                return None
            try:
                if alone:
                    done = write(conn)
                else:
                    with immediate(conn):
                        done = write(conn)
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                met_lock = True
                pause = next(pauses, None)
                if pause is None:
                    self._observed(LOCK_HELD)
                    return None
                await asyncio.sleep(pause)
                continue
            self._observed(LOCK_HELD if met_lock else AT_ONCE)
            self._commits += 1
            if self._commits % CHECKPOINT_EVERY_COMMITS == 0:
                self._checkpoint_soon()
            return done

    def _checkpoint_soon(self) -> None:
        # The loop's connection leaves the WAL to grow (a checkpoint syncs the file); the
        # thread copies it back into the database without blocking writers.
        if self._checkpointing or self._closed:
            return
        self._checkpointing = True

        async def checkpoint() -> None:
            try:
                await self._on_thread(_checkpoint)
            except Exception:
                pass  # the next checkpoint, or the thread's own automatic one, catches up
            finally:
                self._checkpointing = False

        self._in_background(checkpoint())

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction, holding the database's write lock from its first statement."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


# The id the jobs' next row gets, as AUTOINCREMENT draws it: one past the largest ever
# used (sqlite_sequence) or present. The table's last rowid is one step down its b-tree.
_NEXT_JOB_ID: Final = (
    "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'jobs'), 0),"
    " COALESCE((SELECT MAX(id) FROM jobs), 0)) + 1"
)


def record_deliveries(conn: sqlite3.Connection, rows: list[DeliveryRow]) -> list[bool]:
    """Several deliveries in one transaction; for each, whether it was new.

    Two multi-row inserts per batch rather than two statements per delivery. A delivery
    names its job, so each delivery with a job is given the id its job would get, as
    AUTOINCREMENT draws them (under the write lock nothing else draws one meanwhile).
    The deliveries' insert skips the repeats and returns the ids it inserted; only their
    jobs are inserted (a repeat's id is a gap, never used). The same id twice in one
    batch: the first one wins, as the insert takes the rows in order.
    """
    delivery, queued = INSERT_DELIVERY.compiled("sqlite"), INSERT_JOB.compiled("sqlite")
    with immediate(conn):
        next_id: int | None = None
        # Rows bound by position, in the order of the statements' parameters (test_sql
        # holds it), all of a batch in one flat list: no dict, no tuple per delivery.
        deliveries: list[object] = []
        job_ids: list[int | None] = []
        for delivery_id, event, action, job, now in rows:
            job_id = None
            if job is not None:
                if next_id is None:
                    next_id = int(conn.execute(_NEXT_JOB_ID).fetchone()[0])
                job_id = next_id
                next_id += 1
            deliveries += (delivery_id, event, action, now, job_id)
            job_ids.append(job_id)
        inserted = _insert(conn, delivery.text + " RETURNING id", len(delivery.names), deliveries)
        results: list[bool] = []
        jobs: list[object] = []
        for (delivery_id, _, _, job, now), job_id in zip(rows, job_ids, strict=True):
            new = delivery_id in inserted
            if new:
                inserted.discard(delivery_id)  # a repeat later in the batch is no longer new
                if job is not None:
                    jobs += (
                        job_id,
                        delivery_id,
                        job.event,
                        job.payload,
                        job.serial_key,
                        job.installation_id,
                        now,
                        now,
                    )
            results.append(new)
        _insert(conn, queued.text, len(queued.names), jobs)
        return results


def _insert(conn: sqlite3.Connection, text: str, width: int, values: list[object]) -> set[Any]:
    """The rows of ``values`` (``width`` values a row) by ``text``, an INSERT of one row,
    as INSERTs of many rows (``_chunked``): a statement's start, and AUTOINCREMENT's
    bookkeeping, once a batch rather than once a row (executemany runs the statement once
    per row), a quarter less time a job (``bench/ingest.py``). What its RETURNING clause
    returns, if it has one: the first column of each row."""
    returned: set[Any] = set()
    for statement, chunk in _chunked(text, width, values):
        # Read to its end: a statement must have finished stepping before the next one.
        returned.update(row[0] for row in conn.execute(statement, chunk))
    return returned


def _chunked(text: str, width: int, values: list[Any]) -> list[tuple[str, list[Any]]]:
    """``values`` (``width`` a row) as INSERTs of many rows by ``text`` (``_of_rows``),
    each with its values: up to ``_ROWS_CHUNK`` rows and ``_MAX_PARAMETERS`` values."""
    step = width * max(1, min(_ROWS_CHUNK, _MAX_PARAMETERS // width))
    return [
        (_of_rows(text, len(chunk) // width), chunk)
        for chunk in (values[start : start + step] for start in range(0, len(values), step))
    ]


@functools.cache
def _of_rows(text: str, count: int) -> str:
    """``text``, an INSERT of one row (``VALUES (...)``, no parenthesis inside), inserting
    ``count`` rows."""
    head, _, rest = text.partition(" VALUES ")
    row, _, tail = rest.strip().partition(")")
    return f"{head} VALUES {', '.join([row + ')'] * count)}{tail}"


def _settle(batch: list[_Pending], outcome: list[bool] | BaseException) -> None:
    """Give each waiting caller its delivery's result, or the batch's error."""
    for index, (_, future) in enumerate(batch):
        if future.done():
            continue  # the caller was cancelled
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome[index])


def _connect_for_loop(path: str) -> sqlite3.Connection:
    """A connection for the event loop's thread: it must never block.

    No busy timeout (a locked database is an error at once, and the caller goes to the
    thread instead) and no automatic checkpoint (the sync it ends with). The schema and
    WAL mode are already set up by the thread's connection.
    """
    conn = sqlite3.connect(path, isolation_level=None, cached_statements=_CACHED_STATEMENTS)
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
