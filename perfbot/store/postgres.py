"""The PostgreSQL store: one database shared by several perfbot replicas.

The store's logic is written once for both backends (``perfbot.store._core``). What is
PostgreSQL's own here: the pool of connections and how statements run on it, the claim
(how claims stay correct when several processes claim at once: ``PostgresStore.claim``),
a delivery and its job in one statement, and no presence (see ``release_departed``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, TypeVar

import psycopg
from psycopg import AsyncConnection
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from perfbot.errors import PerfbotError
from perfbot.store._core import SQLStore
from perfbot.store._migrations import migrate_postgres
from perfbot.store._pg_url import parse_url, scrub
from perfbot.store._queue import INSERT_DELIVERY, KEY_BUSY
from perfbot.store._rows import JOB_COLUMNS, job_from_row
from perfbot.store._sql import SQL, Params, Row, Steps
from perfbot.store.base import Job, NewJob
from perfbot.store.measurements import storable

T = TypeVar("T")

DEFAULT_POOL_SIZE: Final = 8
# How long a call waits for a free pooled connection before it fails.
POOL_TIMEOUT_SECONDS: Final = 10.0
CLOSE_TIMEOUT_SECONDS: Final = 5.0
# Key space (first int4) of pg_try_advisory_xact_lock(int4, int4) for serial keys; the
# second int4 is the key's hash. Bytes of "pbot".
SERIAL_KEY_LOCK_SPACE: Final = 0x70626F74
# Up to this many rows of a bulk write are encoded on the event loop: a thread costs more.
INLINE_RECORDS: Final = 500


# j may be claimed: queued and due, or running under an expired lease (its process died).
_CLAIMABLE: Final = """
    ((j.status = 'queued' AND j.due_at <= :now)
        OR (j.status = 'running' AND j.lease_until < :now))
"""

# Step 1 of a claim: the oldest claimable job whose key looks free, row-locked so no other
# claimer can take it (SKIP LOCKED: they pass over it to the next one instead of waiting),
# plus a try for its key's advisory lock. MATERIALIZED keeps the lock attempt to the one
# row the CTE returns.
_CANDIDATE: Final = SQL(
    f"""
    WITH candidate AS MATERIALIZED (
        SELECT j.id, j.serial_key FROM jobs AS j
        WHERE j.status IN ('queued', 'running') AND {_CLAIMABLE}
            AND j.serial_key <> ALL (:skip::text[])
            AND NOT {KEY_BUSY}
        ORDER BY j.due_at, j.id
        LIMIT 1
        FOR UPDATE OF j SKIP LOCKED
    )
    SELECT id, serial_key, pg_try_advisory_xact_lock(:space::integer, hashtext(serial_key))
    FROM candidate
"""
)

# Step 2, under the key's advisory lock: a new statement, so (READ COMMITTED) a new snapshot
# that sees every claim committed before the lock was granted. The key is checked again
# there, and the job taken only if it is still free. (The job itself is checked again too,
# though its row lock already keeps it from changing: cheap, and safe on its own.)
_TAKE: Final = SQL(
    f"""
    UPDATE jobs AS j
    SET status = 'running', lease_owner = :owner, lease_until = :until,
        attempts = j.attempts + 1
    WHERE j.id = :id AND {_CLAIMABLE} AND NOT {KEY_BUSY}
    RETURNING {JOB_COLUMNS}
"""
)

# A delivery and its job in one statement, hence one transaction and one round trip: the job
# is inserted only from the delivery row actually inserted, so a repeat stores nothing. The
# delivery names its job (job_outcome's way to it), so the job's id is drawn first, from the
# jobs' own identity sequence (a repeat leaves a gap in it, as a rolled-back insert does).
_RECORD_WITH_JOB: Final = SQL(
    """
    WITH delivery AS (
        INSERT INTO deliveries (id, event, action, received_at, job_id)
        VALUES (:id, :event, :action, :now, nextval(pg_get_serial_sequence('jobs', 'id')))
        ON CONFLICT (id) DO NOTHING
        RETURNING id, job_id
    ), job AS (
        INSERT INTO jobs (id, delivery_id, event, payload, serial_key, installation_id,
                          status, attempts, due_at, created_at)
        OVERRIDING SYSTEM VALUE
        SELECT job_id, id, :job_event::text, :payload::text, :serial_key::text,
            :installation_id::bigint, 'queued', 0, :now, :now
        FROM delivery
    )
    SELECT count(*) FROM delivery
"""
)


class DatabaseUnavailable(PerfbotError, RuntimeError):
    """The database could not be reached or logged into; the message names it, no password."""

    retryable = True  # a job that met it may well run once the database is back


class PostgresStore(SQLStore):
    """``Store`` on a PostgreSQL database, through a small pool of connections.

    Every pooled connection is in autocommit mode: a single statement is its own transaction
    (one round trip), and the few operations needing several statements open one explicitly.
    """

    dialect = "postgres"

    def __init__(self, url: str, *, pool_size: int = DEFAULT_POOL_SIZE) -> None:
        """Parse ``url`` (``postgresql://`` or ``postgres://``); nothing is connected yet.

        Raises ``ValueError`` naming the problem, never the password, for a malformed URL.
        """
        if pool_size < 1:
            raise ValueError(f"the PostgreSQL pool size must be at least 1, not {pool_size}")
        target = parse_url(url)
        self._conninfo = target.conninfo
        self._secrets = target.secrets  # to scrub connection errors, should libpq quote one
        self.where = target.where
        self._pool_size = pool_size
        self._pool: AsyncConnectionPool[AsyncConnection[TupleRow]] | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"PostgresStore({self.where!r})"

    def _connected(self) -> AsyncConnectionPool[AsyncConnection[TupleRow]]:
        if self._closed:
            raise RuntimeError(f"the store on {self.where} is closed")
        if self._pool is None:
            raise RuntimeError(f"the store on {self.where} is not set up: call setup() first")
        return self._pool

    async def setup(self) -> None:
        if self._closed:
            raise RuntimeError(f"the store on {self.where} is closed")
        # Migrate on a connection of its own, opened directly: a failure here carries
        # libpq's reason (refused, unknown host, wrong password), which a pool only logs.
        try:
            conn = await AsyncConnection.connect(self._conninfo, autocommit=True)
        except psycopg.OperationalError as exc:
            raise self._unavailable(exc) from None
        async with conn:
            await migrate_postgres(conn)
        if self._pool is not None:
            return
        pool: AsyncConnectionPool[AsyncConnection[TupleRow]] = AsyncConnectionPool(
            self._conninfo,
            kwargs={"autocommit": True},
            min_size=1,
            max_size=self._pool_size,
            timeout=POOL_TIMEOUT_SECONDS,
            name="perfbot",
            open=False,
        )
        try:
            await pool.open(wait=True, timeout=POOL_TIMEOUT_SECONDS)
        except PoolTimeout:
            await pool.close()
            raise DatabaseUnavailable(
                f"the PostgreSQL database {self.where} accepted one connection but the pool"
                f" could not open one within {POOL_TIMEOUT_SECONDS:g} s"
            ) from None
        self._pool = pool

    def _unavailable(self, exc: psycopg.Error) -> DatabaseUnavailable:
        # libpq's message can span lines (a hint: "Is the server running on that host...")
        # and repeats that connecting failed: one sentence for the start-up error.
        lines = [" ".join(line.split()) for line in scrub(str(exc), self._secrets).splitlines()]
        lines = [line for line in lines if line] or [type(exc).__name__]
        reason = lines[0].removeprefix("connection failed: ")
        if len(lines) > 1:
            reason += f" ({' '.join(lines[1:])})"
        return DatabaseUnavailable(
            f"cannot connect to the PostgreSQL database {self.where}: {reason}"
        )

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._pool is not None:
            await self._pool.close(timeout=CLOSE_TIMEOUT_SECONDS)

    async def _on_connection(self, work: Callable[[AsyncConnection[TupleRow]], Awaitable[T]]) -> T:
        """``work`` on a pooled connection; once more on another if that one was dead.

        A connection the server ended while it sat in the pool (a restart, a failover, an
        idle timeout) fails its first statement before running it: the pool drops it and
        the work runs again on a fresh one. Checking every connection as it leaves the
        pool would cost a round trip per statement instead.
        """
        for attempt in (1, 2):
            used: AsyncConnection[TupleRow] | None = None
            try:
                async with self._connected().connection() as conn:
                    used = conn
                    return await work(conn)
            except psycopg.OperationalError:
                if attempt == 2 or used is None or not used.broken:
                    raise
        raise AssertionError("unreachable")

    # The primitives the shared logic runs on (``SQLBackend``) -------------------------------

    async def _fetch(self, sql: SQL, params: Params) -> list[Row]:
        statement = sql.compiled("postgres")
        args = statement.bind(params)

        async def work(conn: AsyncConnection[TupleRow]) -> list[Row]:
            cur = await conn.execute(statement.text, args)
            return await cur.fetchall()

        return await self._on_connection(work)

    async def _write(self, sql: SQL, params: Params) -> int:
        statement = sql.compiled("postgres")
        args = statement.bind(params)

        async def work(conn: AsyncConnection[TupleRow]) -> int:
            cur = await conn.execute(statement.text, args)
            return cur.rowcount

        return await self._on_connection(work)

    async def _write_many(
        self, sql: SQL, items: Sequence[T], row: Callable[[T], tuple[Any, ...]]
    ) -> int:
        text = sql.compiled("postgres").text
        if len(items) <= INLINE_RECORDS:
            rows = [row(item) for item in items]
        else:  # 10,000 rows take a tenth of a second to encode: off the event loop
            rows = await asyncio.to_thread(lambda: [row(item) for item in items])

        async def work(conn: AsyncConnection[TupleRow]) -> int:
            async with conn.transaction():
                cur = conn.cursor()
                # Pipelined: one round trip for the batch, not one per row; the rowcount
                # is the sum over the rows (a conflict changes none).
                await cur.executemany(text, rows)
                return cur.rowcount

        return await self._on_connection(work)

    async def _atomically(self, steps: Steps) -> list[Row]:
        compiled = []
        for sql, each in steps:
            statement = sql.compiled("postgres")
            compiled.append((statement.text, [statement.bind(params) for params in each]))

        async def work(conn: AsyncConnection[TupleRow]) -> list[Row]:
            rows: list[Row] = []
            async with conn.transaction():
                for text, args in compiled:
                    if len(args) == 1:
                        cur = await conn.execute(text, args[0])
                        rows = await cur.fetchall() if cur.description else []
                    else:
                        await conn.cursor().executemany(text, args)
                        rows = []
            return rows

        return await self._on_connection(work)

    def _text(self, value: str) -> str:
        # Text may quote untrusted text (a name from an artifact, a branch in a delivery);
        # refusing it would leave a delivery unrecorded or a job unfinishable.
        return storable(value)

    # Deliveries and enqueueing -----------------------------------------------------------------

    async def record_delivery(
        self, delivery_id: str, event: str, action: str | None, job: NewJob | None, now: float
    ) -> bool:
        # No group commit as in SQLite: PostgreSQL commits concurrent transactions from
        # several connections side by side, and each delivery is a single statement.
        # Text from a (signed) delivery may hold NUL characters, which PostgreSQL's text
        # cannot: replaced, so that the delivery is stored rather than answered with a 500.
        text = self._text
        params: dict[str, Any] = {
            "id": text(delivery_id),
            "event": text(event),
            "action": None if action is None else text(action),
            "now": now,
            "job_id": None,
        }
        if job is None:
            return await self._write(INSERT_DELIVERY, params) > 0
        params |= {
            "job_event": text(job.event),
            "payload": text(job.payload),
            "serial_key": text(job.serial_key),
            "installation_id": job.installation_id,
        }
        (count,) = (await self._fetch(_RECORD_WITH_JOB, params))[0]  # count(*): one row
        return bool(count)

    # The queue ----------------------------------------------------------------------------------

    async def claim(self, owner: str, lease_seconds: float, now: float) -> Job | None:
        """See ``Store.claim``. Race-free between processes, in two steps:

        1. The oldest claimable job whose key looks free is row-locked (FOR UPDATE SKIP
           LOCKED), so concurrent claimers spread over different jobs instead of queueing
           for one, and the key's advisory lock is tried.
        2. Only under that lock is the job taken, by a statement that checks again that
           the job is claimable and its key free. Its snapshot is newer than the lock, and
           the lock is released only after its holder's commit, so whoever locks a key
           second sees the first's claim. Whoever cannot take the lock passes the key by
           for this claim: someone else is claiming it right now.

        So a job is never handed out twice, and two jobs of one key never run at once,
        however many replicas claim. Two keys sharing a hash only make one of them wait
        for a later claim.
        """
        params: dict[str, Any] = {
            "now": now,
            "owner": owner,
            "until": now + lease_seconds,
            "space": SERIAL_KEY_LOCK_SPACE,
        }
        find, take = _CANDIDATE.compiled("postgres"), _TAKE.compiled("postgres")

        async def work(conn: AsyncConnection[TupleRow]) -> Job | None:
            skip: list[str] = []  # keys busy or being claimed by someone else right now
            async with conn.transaction():
                # Each round either returns or adds a key to skip: it ends.
                while True:
                    cur = await conn.execute(find.text, find.bind(params | {"skip": skip}))
                    candidate = await cur.fetchone()
                    if candidate is None:
                        return None
                    job_id, serial_key, locked = candidate
                    if locked:
                        cur = await conn.execute(take.text, take.bind(params | {"id": job_id}))
                        taken = await cur.fetchone()
                        if taken is not None:
                            return job_from_row(taken)
                    skip.append(serial_key)

        return await self._on_connection(work)

    # A replica on another host cannot be seen to die from here (a session-held lock
    # would vanish with a network blip too, while its holder still runs): its claims
    # are taken over when their leases run out.

    async def announce(self, owner_prefix: str) -> None:
        return None

    async def release_departed(self) -> list[str]:
        return []
