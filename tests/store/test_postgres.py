"""What is particular to the PostgreSQL store: replicas racing, migrations, start-up errors.

The Store contract itself runs against PostgreSQL in test_store.py. Here every "replica" is a
PostgresStore with its own connection pool, as a separate perfbot process would have.
"""

from __future__ import annotations

import asyncio
import socket
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from perfbot.store import DatabaseUnavailable, JobStatus, NewJob, PostgresStore, open_store
from perfbot.store._migrations import SchemaTooNew
from perfbot.store._schema import MIGRATIONS, PG_MIGRATIONS
from perfbot.store.postgres import SERIAL_KEY_LOCK_SPACE
from tests.deadline import within
from tests.store.helpers import job_status

NOW = 1_000.0
LEASE = 60.0
PASSWORD = "s3cret-Pa55word"

Replica = Callable[..., Awaitable[PostgresStore]]


@pytest.fixture
async def replica(pg_url: str) -> AsyncIterator[Replica]:
    """Opens (and sets up) a PostgresStore on the test's database; all closed afterwards."""
    opened: list[PostgresStore] = []

    async def open_(pool_size: int = 8, *, setup: bool = True) -> PostgresStore:
        store = PostgresStore(pg_url, pool_size=pool_size)
        opened.append(store)
        if setup:
            await store.setup()
        return store

    yield open_
    for store in opened:
        await store.close()


def new_job(key: str) -> NewJob:
    return NewJob(event="pull_request", payload="{}", serial_key=key, installation_id=7)


def with_password(url: str, password: str, address: tuple[str, int] | None = None) -> str:
    """``url`` with another password, and at another host and port if given."""
    parts = urlsplit(url)
    host, port = address or (parts.hostname or "localhost", parts.port)
    netloc = f"{parts.username or 'postgres'}:{password}@{host}" + (f":{port}" if port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def database_of(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


async def sessions(pg_url: str, application: str) -> int:
    """Connections to the test's database made by ``application``."""
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name = %s",
            (database_of(pg_url), application),
        )
        row = await cur.fetchone()
    assert row is not None
    return int(row[0])


# Replicas racing ------------------------------------------------------------------------------


async def test_replicas_never_run_one_job_twice_nor_two_jobs_of_one_key(
    replica: Replica,
) -> None:
    stores = [await replica(), await replica()]
    jobs = 150
    keys = 3  # far fewer keys than claimers: most claims race for a busy key
    for i in range(jobs):
        delivery = f"d{i}"
        assert await stores[i % 2].record_delivery(
            delivery, "push", None, new_job(f"pr-{i % keys}"), NOW
        )
    claims: Counter[int] = Counter()
    running: Counter[str] = Counter()  # jobs of each key running now
    overlaps: list[str] = []

    async def claimer(store: PostgresStore, owner: str) -> None:
        for _ in range(jobs * 50):  # bounded even if the queue never drained
            job = await store.claim(owner, LEASE, NOW)
            if job is None:
                if await store.queue_depth(NOW) == 0:
                    return
                await asyncio.sleep(0.001)
                continue
            if running[job.serial_key]:
                overlaps.append(f"job {job.id} started beside another of {job.serial_key}")
            running[job.serial_key] += 1
            claims[job.id] += 1
            await asyncio.sleep(0.001)  # the job runs: the other claimers go on meanwhile
            running[job.serial_key] -= 1  # before complete frees the key for the others
            await store.complete(job.id, owner, NOW)

    await within(
        asyncio.gather(
            *(claimer(store, f"r{r}-w{w}") for r, store in enumerate(stores) for w in range(6))
        ),
        60,
    )

    assert overlaps == []
    assert len(claims) == jobs
    assert set(claims.values()) == {1}


async def test_an_expired_job_is_taken_over_by_exactly_one_replica(replica: Replica) -> None:
    stores = [await replica(), await replica()]
    await stores[0].record_delivery("d1", "push", None, new_job("pr-1"), NOW)
    first = await stores[0].claim("dead", 10.0, NOW)
    assert first is not None

    taken = await asyncio.gather(
        *(stores[i % 2].claim(f"w{i}", LEASE, NOW + 11) for i in range(12))
    )

    winners = [job for job in taken if job is not None]
    assert len(winners) == 1
    assert (winners[0].id, winners[0].attempts) == (first.id, 2)


async def test_a_key_being_claimed_elsewhere_is_passed_over(replica: Replica, pg_url: str) -> None:
    # Another replica holds pr-1's claim lock (its claim has not committed yet): pr-1's job,
    # although the oldest, is left to it, and pr-2's is taken instead.
    store = await replica()
    await store.record_delivery("pr-1-job", "push", None, new_job("pr-1"), NOW - 1)
    await store.record_delivery("pr-2-job", "push", None, new_job("pr-2"), NOW)
    async with await psycopg.AsyncConnection.connect(pg_url) as other:
        await other.execute(
            "SELECT pg_advisory_xact_lock(%s::integer, hashtext('pr-1'))",
            (SERIAL_KEY_LOCK_SPACE,),
        )
        job = await store.claim("w1", LEASE, NOW)
        assert job is not None
        assert job.delivery_id == "pr-2-job"
        assert await store.claim("w1", LEASE, NOW) is None
        await other.rollback()  # the other claim ended without taking it

    job = await store.claim("w1", LEASE, NOW)
    assert job is not None
    assert job.delivery_id == "pr-1-job"


async def test_racing_replicas_take_a_lock_once(replica: Replica) -> None:
    stores = [await replica(), await replica()]

    won = await asyncio.gather(
        *(stores[i % 2].try_lock("pr-1", f"w{i}", 10.0, NOW) for i in range(10))
    )

    assert won.count(True) == 1


async def test_racing_replicas_claim_a_redelivery_once(replica: Replica) -> None:
    stores = [await replica(), await replica()]

    won = await asyncio.gather(*(stores[i % 2].claim_redelivery("g1", NOW) for i in range(10)))

    assert won.count(True) == 1
    assert not await stores[0].claim_redelivery("g1", NOW + 86_400)
    assert await stores[1].claim_redelivery("g2", NOW)


async def test_an_error_with_a_nul_character_is_kept_readable(replica: Replica) -> None:
    # PostgreSQL's text cannot hold NUL; refusing the error would leave the job unfinishable.
    store = await replica()
    for delivery in ("d1", "d2"):
        await store.record_delivery(delivery, "push", None, new_job(delivery), NOW)
    first, second = await store.claim("w", LEASE, NOW), await store.claim("w", LEASE, NOW)
    assert first is not None
    assert second is not None

    await store.retry_later(first.id, "w", NOW + 5, "bad name a\x00b", NOW)
    await store.give_up(second.id, "w", "bad name c\x00d", NOW)

    assert await job_status(store, first.delivery_id) == (JobStatus.QUEUED, 1, "bad name a\ufffdb")
    assert await job_status(store, second.delivery_id) == (JobStatus.FAILED, 1, "bad name c\ufffdd")


# Migrations -----------------------------------------------------------------------------------


def test_migrations_are_numbered_like_the_sqlite_ones() -> None:
    # Version N means the same schema on both backends: a SQLite migration needs its twin.
    assert len(PG_MIGRATIONS) == len(MIGRATIONS)


async def test_replicas_starting_together_migrate_once(replica: Replica, pg_url: str) -> None:
    stores = [await replica(setup=False) for _ in range(4)]

    # Every setup runs to its end (a failed one must not leave the others running on).
    outcomes = await asyncio.gather(*(store.setup() for store in stores), return_exceptions=True)

    assert outcomes == [None] * len(stores)
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        cur = await conn.execute("SELECT version FROM schema_version ORDER BY version")
        versions = [row[0] for row in await cur.fetchall()]
    assert versions == list(range(1, len(PG_MIGRATIONS) + 1))
    assert await stores[3].record_delivery("d1", "push", None, new_job("pr-1"), NOW)
    assert await stores[0].claim("w", LEASE, NOW) is not None


async def test_a_schema_newer_than_the_code_is_refused(replica: Replica, pg_url: str) -> None:
    await replica()
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        await conn.execute("INSERT INTO schema_version VALUES (%s, 0)", (len(PG_MIGRATIONS) + 1,))

    with pytest.raises(SchemaTooNew, match="upgrade perfbot"):
        await (await replica(setup=False)).setup()


# Connections ----------------------------------------------------------------------------------


def _closed_port() -> int:
    # A port nothing listens on (it was free a moment ago): connecting is refused at once.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_an_unreachable_database_is_one_sentence_without_the_password(
    pg_url: str,
) -> None:
    url = with_password(pg_url, PASSWORD, ("127.0.0.1", _closed_port()))
    store = open_store(url)

    with pytest.raises(DatabaseUnavailable) as raised:
        await store.setup()

    message = str(raised.value)
    user = urlsplit(pg_url).username or "postgres"
    assert message.startswith(f"cannot connect to the PostgreSQL database {user}@127.0.0.1:")
    assert "refused" in message
    assert PASSWORD not in message
    assert "\n" not in message
    # Nothing chained either, so a traceback shows no driver exception.
    assert raised.value.__cause__ is None
    assert raised.value.__suppress_context__
    await store.close()


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("password", "password authentication failed"),
        ("database", "does not exist"),
    ],
)
async def test_a_refused_login_names_the_reason_not_the_password(
    pg_url: str, change: str, reason: str
) -> None:
    if change == "password":
        url = with_password(pg_url, PASSWORD)
    else:
        url = urlunsplit(urlsplit(pg_url)._replace(path="/no_such_database"))
    store = PostgresStore(url)

    with pytest.raises(DatabaseUnavailable, match=reason) as raised:
        await store.setup()

    assert PASSWORD not in str(raised.value)
    assert (urlsplit(pg_url).password or "?") not in str(raised.value)
    await store.close()


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (f"postgresql://perfbot:{PASSWORD}%zz@db/perfbot", "percent-encoded"),
        (f"postgresql://perfbot:{PASSWORD}@db/perfbot?colour=blue", "colour"),
        (f"postgresql://perfbot@db/perfbot?password={PASSWORD}%zz", "percent-encoded"),
        (f"postgresql://perfbot@db/perfbot?sslmode=x&password='{PASSWORD}%", "percent-encoded"),
    ],
)
def test_a_malformed_url_is_refused_without_its_password(url: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason) as raised:
        open_store(url)
    assert PASSWORD not in str(raised.value)


@pytest.mark.parametrize("scheme", ["postgres", "postgresql+psycopg"])
async def test_every_accepted_scheme_connects(pg_url: str, scheme: str) -> None:
    store = open_store(scheme + "://" + pg_url.partition("://")[2])
    try:
        await store.setup()
        assert await store.record_delivery("d1", "push", None, new_job("pr-1"), NOW)
    finally:
        await store.close()


async def test_the_pool_stays_within_its_size_and_closes(pg_url: str) -> None:
    # Its own application name, so no connection of another test is counted; the URL's
    # name is kept (perfbot names its connections "perfbot" only when the URL does not).
    store = PostgresStore(f"{pg_url}&application_name=pool-test", pool_size=2)
    await store.setup()
    for i in range(20):
        await store.record_delivery(f"d{i}", "push", None, new_job(f"pr-{i}"), NOW)

    # More callers than connections: they queue for the pool instead of opening more.
    claimed = await asyncio.gather(*(store.claim(f"w{i}", LEASE, NOW) for i in range(20)))

    assert all(job is not None for job in claimed)
    assert 1 <= await sessions(pg_url, "pool-test") <= 2
    await store.close()
    await store.close()
    for _ in range(100):  # a backend exits just after its client hangs up
        if await sessions(pg_url, "pool-test") == 0:
            break
        await asyncio.sleep(0.02)
    assert await sessions(pg_url, "pool-test") == 0
    with pytest.raises(RuntimeError, match="closed"):
        await store.queue_depth(NOW)


async def test_a_store_used_before_setup_says_so(replica: Replica) -> None:
    store = await replica(setup=False)
    with pytest.raises(RuntimeError, match=r"call setup\(\) first"):
        await store.queue_depth(NOW)


async def test_connections_the_server_ended_are_replaced(pg_url: str) -> None:
    """A restart, failover or idle timeout ends pooled sessions: the next call still works."""
    store = open_store(pg_url)
    await store.setup()
    try:
        assert await store.record_delivery("d1", "push", None, new_job("pr-1"), NOW)
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = 'perfbot' AND pid <> pg_backend_pid()"
            )
        for n in range(3):  # more calls than the pool had connections
            assert await store.record_delivery(f"d{n + 2}", "push", None, new_job("pr-1"), NOW)
    finally:
        await store.close()
