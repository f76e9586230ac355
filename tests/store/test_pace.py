"""The store's pace records (``Pacing``): created once, replaced only at the version read,
one winner among racing replicas, purged when idle; and a deferred job's attempt handed
back (``Queue.defer``). Both backends, several stores on one database as replicas are."""

from __future__ import annotations

import asyncio

from perfbot.store import NewJob, Store
from tests.store.conftest import Connect


async def test_a_record_is_created_once_and_replaced_only_at_its_version(store: Store) -> None:
    assert await store.pace_record("installation:1") is None
    assert await store.swap_pace("installation:1", None, "first", 10.0)
    assert not await store.swap_pace("installation:1", None, "again", 11.0)
    record = await store.pace_record("installation:1")
    assert record is not None
    assert record.state == "first"
    assert not await store.swap_pace("installation:1", record.version + 1, "ahead", 12.0)
    assert await store.swap_pace("installation:1", record.version, "second", 12.0)
    assert not await store.swap_pace("installation:1", record.version, "stale", 13.0)
    now = await store.pace_record("installation:1")
    assert now is not None
    assert (now.version, now.state) == (record.version + 1, "second")
    assert await store.pace_record("installation:2") is None


async def test_of_replicas_swapping_one_version_exactly_one_wins(connect: Connect) -> None:
    replicas = [await connect() for _ in range(3)]
    await replicas[0].swap_pace("k", None, "start", 1.0)
    record = await replicas[1].pace_record("k")
    assert record is not None
    won = await asyncio.gather(
        *(
            replica.swap_pace("k", record.version, f"by {n}", 2.0)
            for n, replica in enumerate(replicas * 4)
        )
    )
    assert sum(won) == 1
    created = await asyncio.gather(*(r.swap_pace("new", None, "x", 2.0) for r in replicas))
    assert sum(created) == 1


async def test_records_not_written_since_are_purged(store: Store) -> None:
    await store.swap_pace("old", None, "x", 100.0)
    await store.swap_pace("new", None, "x", 200.0)
    assert await store.purge_pace(150.0) == 1
    assert await store.pace_record("old") is None
    assert await store.pace_record("new") is not None


async def test_a_deferred_job_comes_back_when_due_its_attempt_not_counted(store: Store) -> None:
    job = NewJob("workflow_run", "{}", "pr:1", installation_id=7)
    assert await store.record_delivery("d1", "workflow_run", "completed", job, 0.0)
    claimed = await store.claim("w:1", 60.0, 1.0)
    assert claimed is not None
    assert claimed.attempts == 1
    await store.defer(claimed.id, "w:1", 30.0, "waits for installation 7's turn")
    assert await store.claim("w:2", 60.0, 29.0) is None
    again = await store.claim("w:2", 60.0, 30.0)
    assert again is not None
    assert again.id == claimed.id
    assert again.attempts == 1  # the deferred claim was handed back
    outcome = await store.job_outcome("d1")
    assert outcome is not None
    assert outcome.last_error == "waits for installation 7's turn"
