"""The Store contract, run against every backend, then what is particular to SQLite.

PostgreSQL in particular: test_postgres.py.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import psycopg
import pytest

from perfbot.store import (
    JobOutcome,
    JobStatus,
    NewJob,
    PostgresStore,
    PullState,
    SQLiteStore,
    Store,
    open_store,
)
from perfbot.store import _group_commit as group_commit
from perfbot.store._migrations import SchemaTooNew
from perfbot.store._schema import MIGRATIONS
from perfbot.store.base import SweepRecord
from tests.deadline import within
from tests.store.conftest import Connect
from tests.store.helpers import job_status, pg_migrate_to

NOW = 1_000.0
LEASE = 60.0


def new_job(key: str = "pr-1", payload: str = "{}") -> NewJob:
    return NewJob(event="pull_request", payload=payload, serial_key=key, installation_id=7)


async def enqueue(store: Store, delivery_id: str, key: str = "pr-1", now: float = NOW) -> None:
    assert await store.record_delivery(delivery_id, "pull_request", "opened", new_job(key), now)


async def claimed_delivery(store: Store, owner: str, now: float, lease: float = LEASE) -> str:
    job = await store.claim(owner, lease, now)
    assert job is not None
    return job.delivery_id


# Deliveries --------------------------------------------------------------------------------


async def test_each_delivery_of_a_batch_finds_its_own_job(store: Store) -> None:
    # Recorded together: on SQLite one group-commit batch, longer than one INSERT's rows
    # (_group_commit._ROWS_CHUNK), every seventh delivery without a job.
    ids = [f"d{n}" for n in range(2 * group_commit._ROWS_CHUNK + 30)]
    jobless = set(ids[::7])
    await asyncio.gather(
        *(
            store.record_delivery(i, "push", None, None if i in jobless else new_job(key=i), NOW)
            for i in ids
        )
    )
    for _ in range(len(ids) - len(jobless)):
        job = await store.claim("w1", LEASE, NOW)
        assert job is not None
        await store.complete(job.id, "w1", NOW + 1, reason=f"done: {job.delivery_id}")
    assert await store.claim("w1", LEASE, NOW) is None
    for i in ids:
        outcome = await store.job_outcome(i)
        expected = None if i in jobless else JobOutcome(JobStatus.DONE, 1, None, f"done: {i}")
        assert outcome == expected


async def test_a_duplicate_delivery_is_refused_and_stores_no_second_job(store: Store) -> None:
    job = new_job(payload='{"first": true}')
    assert await store.record_delivery("d1", "pull_request", "opened", job, NOW)
    again = new_job(payload='{"second": true}')
    assert not await store.record_delivery("d1", "pull_request", "opened", again, NOW + 1)

    assert await store.queue_depth(NOW) == 1
    claimed = await store.claim("w1", LEASE, NOW + 1)
    assert claimed is not None
    assert claimed.payload == '{"first": true}'
    assert await store.claim("w2", LEASE, NOW + 1) is None


async def test_deliveries_arriving_together_are_each_recorded_once(store: Store) -> None:
    # Concurrent callers: SQLite writes them in one group-commit batch, with repeats in it.
    ids = [f"d{n % 30}" for n in range(90)]
    results = await asyncio.gather(
        *(
            store.record_delivery(i, "push", None, new_job(key=i, payload=f'"{n}"'), NOW)
            for n, i in enumerate(ids)
        )
    )
    winners = {i: n for n, (i, new) in enumerate(zip(ids, results, strict=True)) if new}
    assert sorted(winners) == sorted(set(ids))  # each id recorded by exactly one caller
    assert results.count(True) == 30
    assert await store.queue_depth(NOW) == 30
    claimed = [await store.claim(f"w{n}", LEASE, NOW) for n in range(31)]
    jobs = {job.serial_key: job.payload for job in claimed if job is not None}
    assert jobs == {i: f'"{n}"' for i, n in winners.items()}  # the winner's job, only


async def test_nul_characters_in_a_delivery_are_stored_not_refused(store: Store) -> None:
    # Signed by GitHub, but JSON may carry \u0000 in an action or a branch name.
    job = new_job(key="500:900:feat\x00ure")
    assert await store.record_delivery("d1", "workflow_run", "comp\x00leted", job, NOW)
    assert not await store.record_delivery("d1", "workflow_run", "comp\x00leted", job, NOW)
    claimed = await store.claim("w1", LEASE, NOW)
    assert claimed is not None
    assert claimed.serial_key.startswith("500:900:feat")


async def test_a_delivery_without_a_job_is_remembered_and_enqueues_nothing(store: Store) -> None:
    assert not await store.delivery_seen("d1")
    assert await store.record_delivery("d1", "ping", None, None, NOW)
    assert await store.delivery_seen("d1")
    assert not await store.delivery_seen("d2")
    assert await store.queue_depth(NOW) == 0
    assert await job_status(store, "d1") is None
    # Seen once without a job, a redelivery with one still adds nothing.
    assert not await store.record_delivery("d1", "ping", None, new_job(), NOW)
    assert await store.queue_depth(NOW) == 0


async def test_a_redelivery_is_claimed_once_ever(connect: Connect) -> None:
    store = await connect()
    assert await store.claim_redelivery("g1", NOW)
    assert not await store.claim_redelivery("g1", NOW + 1)
    assert await store.claim_redelivery("g2", NOW + 1)
    await store.release_redelivery("g2")  # GitHub turned the request down: ask again later
    assert await store.claim_redelivery("g2", NOW + 2)
    assert not await store.claim_redelivery("g2", NOW + 3)
    # Independent of the deliveries: neither records one nor needs one.
    assert not await store.delivery_seen("g1")
    assert await store.record_delivery("g1", "push", None, None, NOW)
    assert await store.queue_depth(NOW) == 0

    reopened = await connect()  # another process, or this one restarted, days later
    assert not await reopened.claim_redelivery("g1", NOW + 3 * 86_400)


async def test_the_last_sweep_is_recorded_for_every_process(connect: Connect) -> None:
    store = await connect()
    assert await store.last_sweep() is None
    await store.sweep_started(NOW)
    assert await store.last_sweep() == SweepRecord(started_at=NOW, cursor=None)
    await store.sweep_finished(NOW - 5)
    assert await store.last_sweep() == SweepRecord(started_at=NOW, cursor=NOW - 5)

    other = await connect()  # another process: sees the record, and replaces it
    assert await other.last_sweep() == SweepRecord(started_at=NOW, cursor=NOW - 5)
    await other.sweep_started(NOW + 300)
    assert await store.last_sweep() == SweepRecord(started_at=NOW + 300, cursor=NOW - 5)
    # The cursor only moves forward: a slow sweep finishing late never takes it back.
    await other.sweep_finished(NOW + 290)
    await store.sweep_finished(NOW + 100)
    assert await store.last_sweep() == SweepRecord(started_at=NOW + 300, cursor=NOW + 290)


# Claiming ----------------------------------------------------------------------------------


async def test_claim_returns_the_job_leased_to_its_owner(store: Store) -> None:
    job = NewJob(event="check_run", payload='{"x": 1}', serial_key="pr-9", installation_id=42)
    await store.record_delivery("d1", "check_run", "completed", job, NOW)

    claimed = await store.claim("w1", 30.0, NOW + 5)

    assert claimed is not None
    assert (claimed.delivery_id, claimed.event, claimed.payload) == ("d1", "check_run", '{"x": 1}')
    assert (claimed.serial_key, claimed.installation_id) == ("pr-9", 42)
    assert (claimed.attempts, claimed.created_at) == (1, NOW)
    assert (claimed.lease_owner, claimed.lease_until) == ("w1", NOW + 35.0)
    assert await job_status(store, "d1") == (JobStatus.RUNNING, 1, None)


async def test_claim_takes_the_earliest_due_then_the_first_enqueued(store: Store) -> None:
    await enqueue(store, "late", key="a", now=NOW + 10)
    await enqueue(store, "tie-1", key="b", now=NOW)
    await enqueue(store, "tie-2", key="c", now=NOW)
    await enqueue(store, "early", key="d", now=NOW - 10)

    order = [await claimed_delivery(store, "w", NOW + 10) for _ in range(4)]

    assert order == ["early", "tie-1", "tie-2", "late"]
    assert await store.claim("w", LEASE, NOW + 10) is None


async def test_a_job_is_not_claimed_before_it_is_due(store: Store) -> None:
    assert await store.claim("w1", LEASE, NOW) is None
    await enqueue(store, "d1", now=NOW)
    assert await store.claim("w1", LEASE, NOW - 0.5) is None
    assert await claimed_delivery(store, "w1", NOW) == "d1"


async def test_a_serial_key_runs_one_job_at_a_time(store: Store) -> None:
    await enqueue(store, "first", key="pr-1")
    await enqueue(store, "second", key="pr-1")
    await enqueue(store, "other", key="pr-2")
    first = await store.claim("w1", LEASE, NOW)
    assert first is not None
    assert first.delivery_id == "first"

    # The second job of pr-1 waits although it is older than pr-2's.
    assert await claimed_delivery(store, "w2", NOW) == "other"
    assert await store.claim("w3", LEASE, NOW + 1) is None

    await store.complete(first.id, "w1", NOW + 2)
    assert await claimed_delivery(store, "w3", NOW + 2) == "second"


async def test_a_serial_key_is_free_again_once_its_lease_expires(store: Store) -> None:
    await enqueue(store, "younger", key="pr-1", now=NOW)
    assert await claimed_delivery(store, "w1", NOW, lease=10.0) == "younger"
    # A delivery recorded while "younger" runs, due earlier, so it wins the next claim.
    await enqueue(store, "older", key="pr-1", now=NOW - 5)

    assert await store.claim("w2", LEASE, NOW + 10) is None  # the lease is live up to its end
    assert await claimed_delivery(store, "w2", NOW + 11) == "older"
    # Now "older" holds pr-1, so the abandoned "younger" waits for it.
    assert await store.claim("w3", LEASE, NOW + 12) is None


async def test_an_abandoned_job_is_claimed_again_with_one_more_attempt(store: Store) -> None:
    await enqueue(store, "d1")
    first = await store.claim("dead-worker", 10.0, NOW)
    assert first is not None
    assert await store.claim("w2", LEASE, NOW + 5) is None

    again = await store.claim("w2", LEASE, NOW + 11)

    assert again is not None
    assert (again.id, again.attempts, again.lease_owner) == (first.id, 2, "w2")
    assert await job_status(store, "d1") == (JobStatus.RUNNING, 2, None)
    # The worker that came back late no longer owns it.
    assert not await store.extend_lease(first.id, "dead-worker", LEASE, NOW + 12)
    await store.complete(first.id, "dead-worker", NOW + 12)
    assert await job_status(store, "d1") == (JobStatus.RUNNING, 2, None)
    await store.complete(first.id, "w2", NOW + 13)
    assert await job_status(store, "d1") == (JobStatus.DONE, 2, None)


async def test_extend_lease_keeps_others_away(store: Store) -> None:
    await enqueue(store, "d1")
    job = await store.claim("w1", 10.0, NOW)
    assert job is not None

    assert await store.extend_lease(job.id, "w1", 10.0, NOW + 8)

    assert await store.claim("w2", LEASE, NOW + 15) is None
    assert await claimed_delivery(store, "w2", NOW + 19) == "d1"


async def test_an_expired_lease_is_not_extended(store: Store) -> None:
    # Even if nobody took it yet: another job of its key may have started meanwhile.
    await enqueue(store, "d1")
    job = await store.claim("w1", 10.0, NOW)
    assert job is not None
    assert not await store.extend_lease(job.id, "w1", 10.0, NOW + 11)
    assert not await store.extend_lease(job.id + 1000, "w1", 10.0, NOW)


# Finishing ---------------------------------------------------------------------------------


async def test_complete_finishes_the_job(store: Store) -> None:
    await enqueue(store, "d1")
    job = await store.claim("w1", LEASE, NOW)
    assert job is not None
    await store.complete(job.id, "w1", NOW + 1)
    assert await job_status(store, "d1") == (JobStatus.DONE, 1, None)
    assert await store.queue_depth(NOW + 1) == 0
    assert await store.claim("w1", LEASE, NOW + 1_000) is None


async def test_complete_keeps_the_handlers_reason(store: Store) -> None:
    await enqueue(store, "d1")
    await enqueue(store, "d2", key="pr-2")
    assert await store.job_outcome("d1") == JobOutcome(JobStatus.QUEUED, 0, None, None)
    first = await store.claim("w1", LEASE, NOW)
    second = await store.claim("w1", LEASE, NOW)
    assert first is not None
    assert second is not None
    await store.complete(first.id, "w1", NOW + 1, reason="ignored: the operator disabled a/b")
    await store.complete(second.id, "w1", NOW + 1)
    assert await store.job_outcome(first.delivery_id) == JobOutcome(
        JobStatus.DONE, 1, None, "ignored: the operator disabled a/b"
    )
    assert await store.job_outcome(second.delivery_id) == JobOutcome(JobStatus.DONE, 1, None, None)
    assert await store.job_outcome("nope") is None


async def test_a_failed_jobs_outcome_names_its_error(store: Store) -> None:
    await enqueue(store, "d1")
    job = await store.claim("w1", LEASE, NOW)
    assert job is not None
    await store.give_up(job.id, "w1", "404 from the API", NOW + 1)
    assert await store.job_outcome("d1") == JobOutcome(
        JobStatus.FAILED, 1, "404 from the API", None
    )


async def test_give_up_fails_the_job_for_good(store: Store) -> None:
    await enqueue(store, "d1")
    job = await store.claim("w1", LEASE, NOW)
    assert job is not None
    await store.give_up(job.id, "w1", "404 from the API", NOW + 1)
    assert await job_status(store, "d1") == (JobStatus.FAILED, 1, "404 from the API")
    assert await store.queue_depth(NOW + 1) == 0
    assert await store.claim("w1", LEASE, NOW + 1_000) is None


async def test_retry_later_requeues_the_job_until_it_is_due(store: Store) -> None:
    await enqueue(store, "d1")
    job = await store.claim("w1", LEASE, NOW)
    assert job is not None
    await store.retry_later(job.id, "w1", NOW + 30, "502 from the API", NOW + 1)
    assert await job_status(store, "d1") == (JobStatus.QUEUED, 1, "502 from the API")

    # Neither before it is due, even once the old lease would have expired.
    assert await store.claim("w2", LEASE, NOW + 29) is None
    again = await store.claim("w2", LEASE, NOW + 30)

    assert again is not None
    assert (again.id, again.attempts, again.lease_owner) == (job.id, 2, "w2")


@pytest.mark.parametrize("finish", ["complete", "retry_later", "give_up"])
async def test_only_the_lease_owner_can_finish_a_job(store: Store, finish: str) -> None:
    await enqueue(store, "d1")
    job = await store.claim("w1", LEASE, NOW)
    assert job is not None

    if finish == "complete":
        await store.complete(job.id, "intruder", NOW + 1)
    elif finish == "retry_later":
        await store.retry_later(job.id, "intruder", NOW + 2, "boom", NOW + 1)
    else:
        await store.give_up(job.id, "intruder", "boom", NOW + 1)

    assert await job_status(store, "d1") == (JobStatus.RUNNING, 1, None)
    assert await store.claim("w2", LEASE, NOW + 3) is None  # still leased to w1


async def test_a_finished_job_cannot_be_finished_again(store: Store) -> None:
    await enqueue(store, "d1")
    job = await store.claim("w1", LEASE, NOW)
    assert job is not None
    await store.complete(job.id, "w1", NOW + 1)
    await store.give_up(job.id, "w1", "late", NOW + 2)
    await store.retry_later(job.id, "w1", NOW + 3, "late", NOW + 2)
    assert await job_status(store, "d1") == (JobStatus.DONE, 1, None)


async def test_queue_depth_counts_queued_and_running_jobs(store: Store) -> None:
    for delivery in ("done", "failed", "running", "queued"):
        await enqueue(store, delivery, key=delivery)
    assert await store.queue_depth(NOW) == 4
    claimed: dict[str, int] = {}
    for _ in range(3):
        job = await store.claim("w1", LEASE, NOW)
        assert job is not None
        claimed[job.delivery_id] = job.id
    assert sorted(claimed) == ["done", "failed", "running"]
    await store.complete(claimed["done"], "w1", NOW)
    await store.give_up(claimed["failed"], "w1", "no", NOW)

    assert await store.queue_depth(NOW) == 2
    assert await job_status(store, "nope") is None


# Locks -------------------------------------------------------------------------------------


async def test_a_lock_is_exclusive_until_it_expires(store: Store) -> None:
    assert await store.try_lock("k", "a", 10.0, NOW)
    assert not await store.try_lock("k", "b", 10.0, NOW + 5)
    assert not await store.try_lock("k", "b", 10.0, NOW + 10)  # held up to its expiry
    assert await store.try_lock("other", "b", 10.0, NOW)
    assert await store.try_lock("k", "b", 10.0, NOW + 11)
    assert not await store.try_lock("k", "a", 10.0, NOW + 12)


async def test_the_owner_refreshes_its_lock(store: Store) -> None:
    assert await store.try_lock("k", "a", 10.0, NOW)
    assert await store.try_lock("k", "a", 10.0, NOW + 8)
    assert not await store.try_lock("k", "b", 10.0, NOW + 15)
    assert await store.try_lock("k", "b", 10.0, NOW + 19)


async def test_only_the_owner_unlocks(store: Store) -> None:
    assert await store.try_lock("k", "a", 10.0, NOW)
    await store.unlock("k", "b")
    assert not await store.try_lock("k", "b", 10.0, NOW + 1)
    await store.unlock("k", "a")
    assert await store.try_lock("k", "b", 10.0, NOW + 1)
    await store.unlock("missing", "a")  # nothing to unlock is fine


async def test_a_locks_holder_is_told_until_it_expires(store: Store) -> None:
    assert await store.lock_holder("k", NOW) is None
    assert await store.try_lock("k", "a", 10.0, NOW)
    assert await store.lock_holder("k", NOW + 10) == "a"
    assert await store.lock_holder("k", NOW + 11) is None  # expired
    assert await store.lock_holder("other", NOW) is None


# Marks -------------------------------------------------------------------------------------

MONTH = 30 * 86_400.0


async def test_a_mark_is_taken_once_until_it_lapses(store: Store) -> None:
    assert await store.take_mark("confirm:1:abc", "run-1", MONTH, NOW)
    assert not await store.take_mark("confirm:1:abc", "run-2", MONTH, NOW + MONTH)  # stands
    assert await store.mark_holder("confirm:1:abc", NOW + MONTH) == "run-1"
    assert await store.mark_holder("confirm:1:abc", NOW + MONTH + 1) is None  # lapsed
    assert await store.take_mark("confirm:1:abc", "run-2", MONTH, NOW + MONTH + 1)
    assert await store.mark_holder("confirm:1:def", NOW) is None


async def test_its_holder_takes_a_mark_again_and_keeps_it_afresh(store: Store) -> None:
    # A job run again from the start takes the mark it left the first time.
    assert await store.take_mark("help:1:7:bob", "d1", 3600.0, NOW)
    assert await store.take_mark("help:1:7:bob", "d1", 3600.0, NOW + 3000)
    assert not await store.take_mark("help:1:7:bob", "d2", 3600.0, NOW + 3601)
    assert await store.mark_holder("help:1:7:bob", NOW + 6600) == "d1"
    assert await store.take_mark("help:1:7:bob", "d2", 3600.0, NOW + 6601)


async def test_only_its_holder_drops_a_mark(store: Store) -> None:
    assert await store.take_mark("refused:1:7:bob", "d1", 3600.0, NOW)
    await store.drop_mark("refused:1:7:bob", "d2")
    assert await store.mark_holder("refused:1:7:bob", NOW) == "d1"
    await store.drop_mark("refused:1:7:bob", "d1")
    assert await store.mark_holder("refused:1:7:bob", NOW) is None
    assert await store.take_mark("refused:1:7:bob", "d2", 3600.0, NOW)
    await store.drop_mark("missing", "d1")  # nothing to drop is fine


async def test_a_mark_left_by_a_lock_of_an_earlier_perfbot_still_stands(store: Store) -> None:
    # Until marks had names of their own they were taken with try_lock: a database of then
    # holds them in the same place, under the same keys, and they must still count.
    assert await store.try_lock("confirm:1:abc", "perfbot-confirm:9:1", MONTH, NOW)
    assert await store.mark_holder("confirm:1:abc", NOW + 1) == "perfbot-confirm:9:1"
    assert not await store.take_mark("confirm:1:abc", "perfbot-confirm:10:1", MONTH, NOW + 1)
    assert await store.take_mark("confirm:1:abc", "perfbot-confirm:9:1", MONTH, NOW + 1)


# Pull-request state ------------------------------------------------------------------------


def pull(repo_id: int, number: int) -> PullState:
    return PullState(
        repo_id=repo_id,
        number=number,
        comment_id=555,
        newest_head_sha="a" * 40,
        reported_head_sha="b" * 40,
        reported_run_id=123456789012,
        reported_run_attempt=2,
        report_body="## perfbot\n| metric | Δ |\n",
        rerun_requested_by="octocat",
        updated_at=NOW,
        check_run_id=987654321098,
        check_run_head_sha="a" * 40,
    )


async def test_pull_state_is_saved_and_replaced(store: Store) -> None:
    assert await store.get_pull(1, 2) is None
    first = pull(1, 2)
    await store.save_pull(first)
    assert await store.get_pull(1, 2) == first

    replaced = PullState(repo_id=1, number=2, newest_head_sha="c" * 40, updated_at=NOW + 1)
    await store.save_pull(replaced)

    assert await store.get_pull(1, 2) == replaced  # every field replaced, Nones included
    assert await store.get_pull(1, 3) is None
    assert await store.get_pull(2, 2) is None


async def test_forget_repositories_drops_only_theirs(store: Store) -> None:
    for repo_id, number in [(1, 1), (1, 2), (2, 1), (3, 1)]:
        await store.save_pull(pull(repo_id, number))

    await store.forget_repositories([1, 3, 99])
    await store.forget_repositories([])

    assert await store.get_pull(1, 1) is None
    assert await store.get_pull(1, 2) is None
    assert await store.get_pull(3, 1) is None
    assert await store.get_pull(2, 1) == pull(2, 1)


# Schema and several stores on one database --------------------------------------------------


async def test_setup_is_idempotent_and_data_persists(connect: Connect) -> None:
    first = await connect()
    await first.setup()
    await enqueue(first, "d1")
    await first.save_pull(pull(1, 2))
    await first.close()

    reopened = await connect()
    await reopened.setup()

    assert await reopened.delivery_seen("d1")
    assert await reopened.get_pull(1, 2) == pull(1, 2)
    assert await claimed_delivery(reopened, "w1", NOW) == "d1"


async def test_a_claim_by_one_store_is_seen_by_another(connect: Connect) -> None:
    first, second = await connect(), await connect()
    await enqueue(first, "d1")

    job = await second.claim("w2", LEASE, NOW)

    assert job is not None
    assert await job_status(first, "d1") == (JobStatus.RUNNING, 1, None)
    assert await first.claim("w1", LEASE, NOW) is None
    await first.complete(job.id, "w1", NOW)  # not first's worker's job
    await second.complete(job.id, "w2", NOW)
    assert await job_status(first, "d1") == (JobStatus.DONE, 1, None)


async def test_racing_stores_hand_each_job_to_exactly_one_owner(connect: Connect) -> None:
    stores = [await connect(), await connect()]
    jobs = 200
    for i in range(jobs):
        await enqueue(stores[0], f"d{i}", key=f"pr-{i % 5}")  # fewer keys than workers
    claims: Counter[int] = Counter()
    running_keys: set[str] = set()

    async def worker(store: Store, owner: str) -> None:
        deadline = time.monotonic() + 30
        for _ in range(jobs * 20):  # bounded even if the queue never drains
            if time.monotonic() > deadline:
                return
            job = await store.claim(owner, LEASE, NOW)
            if job is None:
                if await store.queue_depth(NOW) == 0:
                    return
                await asyncio.sleep(0.001)
                continue
            assert job.serial_key not in running_keys, "two live jobs on one serial key"
            running_keys.add(job.serial_key)
            claims[job.id] += 1
            await asyncio.sleep(0)  # let the others try while this one runs
            running_keys.discard(job.serial_key)  # before complete frees the key for others
            await store.complete(job.id, owner, NOW)

    await asyncio.gather(
        *(worker(store, f"s{s}-w{w}") for s, store in enumerate(stores) for w in range(4))
    )

    assert len(claims) == jobs
    assert set(claims.values()) == {1}
    assert await stores[1].queue_depth(NOW) == 0


async def test_racing_stores_record_each_delivery_once(connect: Connect) -> None:
    first, second = await connect(), await connect()
    ids = [f"d{i}" for i in range(50)]

    results = await asyncio.gather(
        *(
            store.record_delivery(i, "push", None, new_job(), NOW)
            for i in ids
            for store in (first, second)
        )
    )

    assert results.count(True) == len(ids)
    assert await second.queue_depth(NOW) == len(ids)


# SQLite in particular ------------------------------------------------------------------------


async def test_an_in_memory_database_works() -> None:
    store = SQLiteStore(":memory:")
    try:
        await store.setup()
        await enqueue(store, "d1")
        assert await claimed_delivery(store, "w1", NOW) == "d1"
    finally:
        await store.close()


async def test_the_file_is_in_wal_mode_at_the_latest_schema(tmp_path: Path) -> None:
    path = str(tmp_path / "perfbot.db")
    store = SQLiteStore(path)
    await store.setup()
    await store.setup()
    await store.close()

    with sqlite3.connect(path) as conn:
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
        versions = [row[0] for row in conn.execute("SELECT version FROM schema_version")]
    conn.close()

    assert mode == "wal"
    assert versions == list(range(1, len(MIGRATIONS) + 1))


async def test_a_suspension_recorded_before_version_7_is_kept(tmp_path: Path) -> None:
    path = str(tmp_path / "perfbot.db")
    with sqlite3.connect(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        migrate_to(conn, 6)
        conn.execute("INSERT INTO suspended_installations (id, since) VALUES (7, ?)", (NOW,))
        conn.execute("COMMIT")
    conn.close()
    store = SQLiteStore(path)
    await store.setup()
    try:
        assert await store.is_suspended(7)
        assert not await store.is_suspended(8)
        # It was recorded at its arrival: a later unsuspend (GitHub's time) lifts it.
        assert not await store.set_suspended(7, False, NOW + 10, NOW + 5)
    finally:
        await store.close()


async def test_a_suspension_recorded_before_version_7_is_kept_on_postgresql(
    pg_url: str,
) -> None:
    conn = await psycopg.AsyncConnection.connect(pg_url, autocommit=True)
    async with conn, conn.transaction():
        await pg_migrate_to(conn, 6)
        await conn.execute("INSERT INTO suspended_installations (id, since) VALUES (7, %s)", (NOW,))
    store = PostgresStore(pg_url)
    await store.setup()
    try:
        assert await store.is_suspended(7)
        assert not await store.is_suspended(8)
        assert not await store.set_suspended(7, False, NOW + 10, NOW + 5)
    finally:
        await store.close()


async def test_job_ids_are_not_reused_once_the_newest_job_is_gone(tmp_path: Path) -> None:
    # SQLite's group commit picks the ids itself: as AUTOINCREMENT would, never one used.
    path = str(tmp_path / "perfbot.db")
    store = SQLiteStore(path)
    await store.setup()
    try:
        await asyncio.gather(
            *(store.record_delivery(i, "push", None, new_job(key=i), NOW) for i in ("d1", "d2"))
        )
        with sqlite3.connect(path) as conn:
            (newest,) = conn.execute("SELECT MAX(id) FROM jobs").fetchone()
            conn.execute("DELETE FROM jobs WHERE id = ?", (newest,))
        conn.close()
        assert await store.record_delivery("d3", "push", None, new_job(key="d3"), NOW)
        with sqlite3.connect(path) as conn:
            ids = dict(conn.execute("SELECT delivery_id, id FROM jobs").fetchall())
            linked = dict(conn.execute("SELECT id, job_id FROM deliveries").fetchall())
        conn.close()
        assert ids["d3"] == newest + 1
        assert linked == {"d1": ids["d1"], "d2": newest, "d3": ids["d3"]}
        assert await store.job_outcome("d3") == JobOutcome(JobStatus.QUEUED, 0, None, None)
    finally:
        await store.close()


# A version-12 database: deliveries, one with two jobs (the newest counts), one without.
_BEFORE_13 = (
    "INSERT INTO deliveries (id, event, action, received_at) VALUES"
    " ('d1', 'push', NULL, 1), ('d2', 'push', NULL, 1), ('d3', 'ping', NULL, 1)",
    "INSERT INTO jobs (delivery_id, event, payload, serial_key, status, attempts, due_at,"
    " created_at, last_error) VALUES ('d1', 'push', '{}', 'k1', 'done', 1, 1, 1, NULL),"
    " ('d2', 'push', '{}', 'k2', 'failed', 2, 1, 1, 'old'),"
    " ('d2', 'push', '{}', 'k2', 'failed', 3, 1, 1, 'newest')",
)


async def _outcomes_after_13(store: Store) -> list[JobOutcome | None]:
    await store.setup()
    try:
        assert await store.record_delivery("d4", "push", None, new_job(key="k4"), NOW)
        return [await store.job_outcome(i) for i in ("d1", "d2", "d3", "d4")]
    finally:
        await store.close()


_OUTCOMES_AFTER_13 = [
    JobOutcome(JobStatus.DONE, 1, None, None),
    JobOutcome(JobStatus.FAILED, 3, "newest", None),
    None,
    JobOutcome(JobStatus.QUEUED, 0, None, None),
]


async def test_a_job_recorded_before_version_13_is_found_from_its_delivery(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "perfbot.db")
    with sqlite3.connect(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        migrate_to(conn, 12)
        for statement in _BEFORE_13:
            conn.execute(statement)
        conn.execute("COMMIT")
    conn.close()
    assert await _outcomes_after_13(SQLiteStore(path)) == _OUTCOMES_AFTER_13
    fresh = str(tmp_path / "fresh.db")
    store = SQLiteStore(fresh)
    await store.setup()
    await store.close()
    assert _indexes(path) == _indexes(fresh)  # jobs_delivery gone, jobs_running_key partial


def _indexes(path: str) -> set[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index'")
        found = {(name, sql) for name, sql in rows if sql is not None}
    conn.close()
    return found


async def test_a_job_recorded_before_version_13_is_found_on_postgresql(pg_url: str) -> None:
    conn = await psycopg.AsyncConnection.connect(pg_url, autocommit=True)
    async with conn, conn.transaction():
        await pg_migrate_to(conn, 12)
        for statement in _BEFORE_13:
            await conn.execute(statement)
    assert await _outcomes_after_13(PostgresStore(pg_url)) == _OUTCOMES_AFTER_13


def migrate_to(conn: sqlite3.Connection, version: int) -> None:
    """The schema of an older perfbot: the first ``version`` migrations."""
    conn.execute(
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
    )
    for number, statements in enumerate(MIGRATIONS[:version], start=1):
        for statement in statements:
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version VALUES (?, 0)", (number,))


async def test_a_schema_newer_than_the_code_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "perfbot.db")
    store = SQLiteStore(path)
    await store.setup()
    await store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO schema_version VALUES (?, 0)", (len(MIGRATIONS) + 1,))
    conn.close()

    newer = SQLiteStore(path)
    try:
        with pytest.raises(SchemaTooNew, match="upgrade perfbot"):
            await newer.setup()
    finally:
        await newer.close()


async def test_a_closed_store_says_so(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "perfbot.db"))
    await store.setup()
    await store.close()
    await store.close()
    with pytest.raises(RuntimeError, match="closed"):
        await store.queue_depth(NOW)


async def test_waiting_for_the_write_lock_leaves_the_loop_running(tmp_path: Path) -> None:
    path = str(tmp_path / "perfbot.db")
    store = SQLiteStore(path)
    await store.setup()
    other_process = sqlite3.connect(path, isolation_level=None)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    ticker = asyncio.create_task(tick())
    try:
        other_process.execute("BEGIN IMMEDIATE")  # hold the write lock
        write = asyncio.create_task(store.record_delivery("d1", "push", None, new_job(), NOW))
        # The loop ticks on while the write waits (up to the 5 s busy timeout) for the lock.
        for _ in range(400):
            if ticks >= 10 or write.done():
                break
            await asyncio.sleep(0.01)
        assert not write.done(), "the write should still be waiting for the lock"
        assert ticks >= 10, "the loop stood still while the store waited"
        other_process.execute("COMMIT")
        assert await within(write, 5)
    finally:
        ticker.cancel()
        other_process.close()
        await store.close()


@asynccontextmanager
async def _beside_another_process(
    tmp_path: Path,
) -> AsyncIterator[tuple[SQLiteStore, list[str], sqlite3.Connection]]:
    """A SQLite store whose writes' outcomes are kept in a list, and a connection to its
    file of its own (another process's, as far as the store can tell)."""
    path = str(tmp_path / "perfbot.db")
    store = SQLiteStore(path)
    await store.setup()
    seen: list[str] = []
    store.observe_writes(seen.append)
    other_process = sqlite3.connect(path, isolation_level=None)
    try:
        yield store, seen, other_process
    finally:
        other_process.close()
        await store.close()


async def test_writes_that_met_another_connections_lock_are_counted(tmp_path: Path) -> None:
    # perfbot_sqlite_loop_writes_total: a write on a free file is committed at once; one
    # that meets another process's write lock waits for it, and is told so.
    async with _beside_another_process(tmp_path) as (store, seen, other_process):
        assert await store.try_lock("pull:1:7", "w:1", 15, NOW)
        assert await store.record_delivery("d1", "push", None, new_job(), NOW)
        assert seen == ["at_once", "at_once"]
        other_process.execute("BEGIN IMMEDIATE")  # hold the write lock
        unlock = asyncio.create_task(store.unlock("pull:1:7", "w:1"))
        delivery = asyncio.create_task(store.record_delivery("d2", "push", None, new_job(), NOW))
        await asyncio.sleep(0.05)
        assert seen == ["at_once", "at_once", "lock_held", "lock_held"]
        other_process.execute("COMMIT")
        await within(unlock, 5)
        assert await within(delivery, 5)
        assert await store.lock_holder("pull:1:7", NOW) is None  # the waited write landed


async def test_a_one_statement_write_on_the_loop_is_its_own_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No BEGIN IMMEDIATE and COMMIT around a lone statement; several rows (a report's
    # measurements) are one statement of them all, or statements that commit together.
    store = SQLiteStore(str(tmp_path / "perfbot.db"))
    await store.setup()
    try:
        assert await store.record_delivery("d0", "push", None, None, NOW)  # opens the loop's
        ran: list[str] = []
        loop_connection = store._deliveries._connection()
        assert loop_connection is not None
        loop_connection.set_trace_callback(ran.append)
        assert await store.try_lock("pull:1:7", "w:1", 15, NOW)
        await store.unlock("pull:1:7", "w:1")
        assert [statement.split()[0] for statement in ran] == ["INSERT", "DELETE"]
        ran.clear()
        many = group_commit.GroupCommit.poke_many
        insert = "INSERT INTO locks VALUES (?, 'w', 1) ON CONFLICT (key) DO NOTHING"
        assert await many(store._deliveries, insert, [("a",), ("b",), ("a",)]) == 2
        assert [statement.split()[0] for statement in ran] == ["INSERT"]  # one, of 3 rows
        ran.clear()
        # Past the host parameters one statement may hold: several, in one transaction.
        monkeypatch.setattr(group_commit, "_MAX_PARAMETERS", 2)
        assert await many(store._deliveries, insert, [("b",), ("c",), ("d",)]) == 2
        assert [statement.split()[0] for statement in ran] == [
            "BEGIN",
            "INSERT",
            "INSERT",
            "COMMIT",
        ]
        assert {row[0] for row in loop_connection.execute("SELECT key FROM locks")} == {
            "a",
            "b",
            "c",
            "d",
        }
    finally:
        await store.close()


async def test_a_write_that_met_a_short_lock_lands_on_the_loop_after_a_pause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another process's write lock, released during the write's pause: the write is tried
    # again on the loop's connection (no hop to the store's thread), and counted once as
    # having met the lock.
    monkeypatch.setattr(group_commit, "LOCK_PAUSES", (0.5,))
    async with _beside_another_process(tmp_path) as (store, seen, other_process):
        assert await store.try_lock("pull:1:7", "w:1", 15, NOW)
        loop_connection = store._deliveries._connection()
        assert loop_connection is not None
        ran: list[str] = []
        loop_connection.set_trace_callback(ran.append)
        other_process.execute("BEGIN IMMEDIATE")
        unlock = asyncio.create_task(store.unlock("pull:1:7", "w:1"))
        await asyncio.sleep(0.05)  # its first try met the lock; it pauses
        assert not unlock.done()
        other_process.execute("COMMIT")
        await within(unlock, 5)
        assert [statement.split()[0] for statement in ran] == ["DELETE", "DELETE"]
        assert seen == ["at_once", "lock_held"]
        assert await store.lock_holder("pull:1:7", NOW) is None


async def test_deliveries_written_on_the_loop_are_checkpointed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The loop's connection never checkpoints (that syncs the file): the thread must, or
    # the WAL grows for as long as only deliveries arrive.
    monkeypatch.setattr(group_commit, "CHECKPOINT_EVERY_COMMITS", 3)
    path = str(tmp_path / "perfbot.db")
    store = SQLiteStore(path)
    await store.setup()
    try:
        for n in range(3):  # one transaction each: every call is its own loop turn
            assert await store.record_delivery(f"d{n}", "push", None, new_job(), NOW)
        await asyncio.sleep(0)  # the checkpoint task hands its work to the store's thread
        await store.queue_depth(NOW)  # queued behind the checkpoint: it has run
        # The database file alone, without its WAL: what a checkpoint has copied back.
        shutil.copyfile(path, tmp_path / "main-file-only.db")
    finally:
        await store.close()

    with sqlite3.connect(tmp_path / "main-file-only.db") as conn:
        ids = {row[0] for row in conn.execute("SELECT id FROM deliveries")}
    conn.close()
    assert ids == {"d0", "d1", "d2"}


async def test_a_store_used_from_another_loop_thread_still_records(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "perfbot.db"))
    await store.setup()
    try:
        assert await store.record_delivery("d1", "push", None, new_job(), NOW)

        def elsewhere() -> bool:
            return asyncio.run(store.record_delivery("d2", "push", None, new_job(), NOW))

        assert await asyncio.to_thread(elsewhere)
        assert await store.queue_depth(NOW) == 2
    finally:
        await store.close()


async def test_a_closed_store_records_no_delivery(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "perfbot.db"))
    await store.setup()
    await store.close()
    with pytest.raises(RuntimeError, match="closed"):
        await store.record_delivery("d1", "push", None, new_job(), NOW)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        pytest.param("{tmp}/plain.db", "{tmp}/plain.db", id="absolute-path"),
        pytest.param("relative.db", "{tmp}/cwd/relative.db", id="relative-path"),
        pytest.param(
            "sqlite:///sub/relative.db", "{tmp}/cwd/sub/relative.db", id="sqlite-relative"
        ),
        pytest.param("sqlite:///{tmp}/abs.db", "{tmp}/abs.db", id="sqlite-absolute"),
    ],
)
async def test_open_store_opens_sqlite_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, expected: str
) -> None:
    (tmp_path / "cwd" / "sub").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "cwd")
    store = open_store(url.format(tmp=tmp_path))
    try:
        await store.setup()
        await enqueue(store, "d1")
    finally:
        await store.close()
    assert Path(expected.format(tmp=tmp_path)).is_file()


@pytest.mark.parametrize(
    ("url", "where"),
    [
        ("postgresql://perfbot:pw@db/perfbot", "perfbot@db/perfbot"),
        ("postgres://db:6432/perfbot", "db:6432/perfbot"),
        ("POSTGRESQL+psycopg://app@x/y?sslmode=require", "app@x/y"),
    ],
)
def test_open_store_chooses_postgresql_by_scheme(url: str, where: str) -> None:
    store = open_store(url)  # connects only in setup()
    assert isinstance(store, PostgresStore)
    assert store.where == where


@pytest.mark.parametrize("url", ["", "mysql://db/perfbot", "sqlite://relative.db", "sqlite:///"])
def test_open_store_names_the_accepted_forms(url: str) -> None:
    with pytest.raises(ValueError, match=r"sqlite:////absolute/path\.db") as raised:
        open_store(url)
    assert "postgresql://user:password@host:port/database" in str(raised.value)


def test_an_unsupported_url_is_named_without_its_password() -> None:
    with pytest.raises(ValueError, match="unsupported database URL") as raised:
        open_store("mysql://perfbot:hunter2-secret@db/perfbot")
    assert "hunter2-secret" not in str(raised.value)
    assert "mysql://perfbot:***@db/perfbot" in str(raised.value)


async def test_suspension_is_recorded_and_lifted(store: Store) -> None:
    assert not await store.is_suspended(7)
    await store.set_suspended(7, True, 1.0)
    await store.set_suspended(7, True, 2.0)  # a repeated delivery changes nothing
    assert await store.is_suspended(7)
    assert not await store.is_suspended(8)
    await store.set_suspended(7, False, 3.0)
    assert not await store.is_suspended(7)


# GitHub's times of a suspension and its lifting (``updated_at`` of each payload).
SUSPENDED_AT = 1_619_663_570.0
UNSUSPENDED_AT = SUSPENDED_AT + 3600.0


async def test_a_suspend_arriving_after_its_unsuspend_leaves_the_installation_active(
    store: Store,
) -> None:
    # The suspend's delivery failed; the unsuspend arrived; the sweep redelivers the suspend.
    assert not await store.set_suspended(7, False, NOW, UNSUSPENDED_AT)
    assert not await store.set_suspended(7, True, NOW + 300, SUSPENDED_AT)
    assert not await store.is_suspended(7)
    # In GitHub's order the same two events do suspend and lift it (the control).
    assert await store.set_suspended(8, True, NOW, SUSPENDED_AT)
    assert await store.is_suspended(8)
    assert not await store.set_suspended(8, False, NOW + 300, UNSUSPENDED_AT)
    assert not await store.is_suspended(8)


async def test_an_unsuspend_arriving_after_a_newer_suspend_leaves_it_suspended(
    store: Store,
) -> None:
    # Suspended, lifted (delivery lost), suspended again; then the lifting is redelivered.
    assert await store.set_suspended(7, True, NOW, SUSPENDED_AT)
    assert await store.set_suspended(7, True, NOW + 1, UNSUSPENDED_AT + 60)
    assert await store.set_suspended(7, False, NOW + 2, UNSUSPENDED_AT)
    assert await store.is_suspended(7)


async def test_a_suspend_and_an_unsuspend_of_the_same_second_leave_it_active(
    store: Store,
) -> None:
    assert not await store.set_suspended(7, False, NOW, SUSPENDED_AT)
    assert not await store.set_suspended(7, True, NOW + 1, SUSPENDED_AT)
    assert not await store.is_suspended(7)
    assert await store.set_suspended(8, True, NOW, SUSPENDED_AT)
    assert not await store.set_suspended(8, False, NOW + 1, SUSPENDED_AT)


async def test_a_deleted_installation_stays_suspended_whatever_arrives_later(
    store: Store,
) -> None:
    # A deleted payload's updated_at is the installation's last change, not the deletion:
    # a deletion is final by itself (GitHub never reuses an installation id).
    assert await store.set_suspended(7, True, NOW, SUSPENDED_AT - 10, final=True)
    assert await store.set_suspended(7, False, NOW + 1, UNSUSPENDED_AT)
    assert await store.is_suspended(7)
    # Even when the deletion arrives after a newer unsuspend.
    assert not await store.set_suspended(8, False, NOW, UNSUSPENDED_AT)
    assert await store.set_suspended(8, False, NOW + 1, SUSPENDED_AT, final=True)
    assert await store.is_suspended(8)


async def test_without_github_s_time_the_later_arrival_wins(store: Store) -> None:
    assert await store.set_suspended(7, True, NOW)
    assert not await store.set_suspended(7, False, NOW + 1)
    assert await store.set_suspended(7, True, NOW + 2)
    assert await store.is_suspended(7)


async def test_a_claim_with_nothing_due_takes_no_write_lock(tmp_path: Path) -> None:
    # An idle worker asks twice a second: a read answers it, never SQLite's write lock.
    path = str(tmp_path / "perfbot.db")
    store = SQLiteStore(path)
    await store.setup()
    await enqueue(store, "later", now=NOW + 60)  # queued, but not due yet
    other_process = sqlite3.connect(path, isolation_level=None)
    try:
        other_process.execute("BEGIN IMMEDIATE")  # hold the write lock throughout
        # Were it a write, it would wait out the busy timeout and fail: "database is locked".
        assert await within(store.claim("w", LEASE, NOW), 30) is None
        other_process.execute("COMMIT")
        claimed = await store.claim("w", LEASE, NOW + 61)  # once due, it is claimed
        assert claimed is not None
        assert claimed.delivery_id == "later"
    finally:
        other_process.close()
        await store.close()
