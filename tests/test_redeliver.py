"""Missed deliveries: the App's delivery log is swept and each lost event redelivered once."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from perfbot.app import redeliver
from perfbot.app.redeliver import (
    FIRST_SWEEP_DELAY_SECONDS,
    LOCK_KEY,
    OVERLAP_SECONDS,
    Redeliverer,
    missed,
    next_delay,
    read_since,
    sweep,
)
from perfbot.app.server import create_app
from perfbot.app.settings import DEFAULT_REDELIVERY_MINUTES, Settings
from perfbot.github.app import GitHubApp
from perfbot.github.dryrun import DryRun
from perfbot.github.errors import GitHubUnavailable, RateLimited
from perfbot.github.types import HookDelivery
from perfbot.sandbox.fakegithub import Delivery, FakeGitHub, rsa_keypair
from perfbot.store import SQLiteStore, Store
from perfbot.support.metrics import Metrics
from tests.deadline import within
from tests.harness import INSTALLATION, REPO_ID, World, settings_env

HEAD = "a" * 40
DAY = timedelta(days=1)
# The period the service sweeps at unless told otherwise.
PERIOD = DEFAULT_REDELIVERY_MINUTES * 60


@pytest.fixture(autouse=True)
def no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    """No second between redeliveries here, except where a test sets one."""
    monkeypatch.setattr(redeliver, "REDELIVERY_PAUSE_SECONDS", 0.0)


@pytest.fixture
def fake() -> FakeGitHub:
    return FakeGitHub()


@pytest.fixture
async def github(fake: FakeGitHub) -> AsyncIterator[GitHubApp]:
    app = GitHubApp(
        fake.app_id, rsa_keypair().private_pem, fake.api_url, transport=fake.transport()
    )
    yield app
    await app.close()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = SQLiteStore(str(tmp_path / "perfbot.db"))
    await opened.setup()
    yield opened
    await opened.close()


def failed(fake: FakeGitHub, guid: str, *, ago: timedelta, status: int = 502) -> Delivery:
    return fake.add_delivery(
        "workflow_run",
        "completed",
        status_code=status,
        guid=guid,
        installation_id=INSTALLATION,
        repository_id=REPO_ID,
        delivered_at=fake.now() - ago,
    )


def succeeded(fake: FakeGitHub, guid: str | None = None, *, ago: timedelta) -> Delivery:
    return fake.add_delivery("check_suite", "completed", guid=guid, delivered_at=fake.now() - ago)


def listing_calls(fake: FakeGitHub) -> list[Mapping[str, str]]:
    return [r.query for r in fake.requests if r.path == "/app/hook/deliveries"]


async def remember(store: Store, guid: str) -> None:
    """perfbot received ``guid`` (GitHub's log may still say it failed: answered too late)."""
    await store.record_delivery(guid, "workflow_run", "completed", None, time.time())


async def build_log(fake: FakeGitHub, store: Store) -> dict[str, Delivery]:
    """Three and a half days of deliveries, oldest first (the fake lists by id, newest first),
    across three pages of 100, with every case the sweep must tell apart; three are missed."""
    cases: dict[str, Delivery] = {}
    cases["too-old"] = failed(fake, "guid-too-old", ago=3 * DAY + timedelta(hours=4))
    for n in range(20):  # more attempts beyond the horizon: never read
        succeeded(fake, ago=3 * DAY + timedelta(hours=3, minutes=n))
    cases["missed-early"] = failed(fake, "guid-missed-early", ago=2 * DAY, status=504)
    cases["twice-1"] = failed(fake, "guid-twice", ago=DAY + timedelta(hours=5), status=0)
    cases["later-ok-1"] = failed(fake, "guid-later-ok", ago=DAY + timedelta(hours=4))
    for n in range(150):  # page fillers between the two ends
        succeeded(fake, ago=DAY + timedelta(hours=3) - timedelta(minutes=n))
    cases["later-ok-2"] = fake.add_delivery(
        "workflow_run",
        "completed",
        guid="guid-later-ok",
        redelivery=True,
        delivered_at=fake.now() - DAY,
    )
    cases["twice-2"] = failed(fake, "guid-twice", ago=timedelta(hours=20), status=500)
    fake.deliveries[-1].redelivery = True
    cases["seen"] = failed(fake, "guid-seen", ago=timedelta(hours=2))
    for n in range(50):
        succeeded(fake, ago=timedelta(hours=1) - timedelta(minutes=n))
    cases["missed-late"] = failed(fake, "guid-missed-late", ago=timedelta(minutes=5), status=503)
    cases["ok"] = succeeded(fake, "guid-ok", ago=timedelta(minutes=1))
    await remember(store, "guid-seen")
    return cases


async def test_redeliveries_are_spaced_out(
    fake: FakeGitHub, github: GitHubApp, store: Store
) -> None:
    await build_log(fake, store)
    pauses: list[tuple[float, int]] = []  # (seconds, redeliveries asked so far)

    async def pause(seconds: float) -> None:
        pauses.append((seconds, len(fake.redeliveries)))

    result = await sweep(github, store, owner="replica-a", pause=0.3, sleep=pause)
    assert len(result.redelivered) == 3
    assert pauses == [(0.3, 1), (0.3, 2)]  # one pause between each two requests


async def test_exactly_the_lost_events_are_redelivered_once(
    fake: FakeGitHub, github: GitHubApp, store: Store
) -> None:
    cases = await build_log(fake, store)
    metrics = Metrics()

    result = await sweep(github, store, owner="replica-a", metrics=metrics)

    # One POST each: the newest attempt of a guid that failed twice, oldest event first.
    assert fake.redeliveries == [
        cases["missed-early"].id,
        cases["twice-2"].id,
        cases["missed-late"].id,
    ]
    assert result.redelivered == ["guid-missed-early", "guid-twice", "guid-missed-late"]
    # The log was read as the App, 100 at a time, following the cursor, and no further than
    # the first attempt older than three days (on the third page).
    queries = listing_calls(fake)
    assert [q.get("per_page") for q in queries] == ["100", "100", "100"]
    assert "cursor" not in queries[0]
    assert all(q["cursor"] for q in queries[1:])
    assert all(r.auth == "jwt" for r in fake.requests)
    assert result.attempts_read == len(fake.deliveries) - 21
    sample = metrics.registry.get_sample_value(
        "perfbot_redeliveries_total", {"event": "workflow_run"}
    )
    assert sample == 3.0


async def test_a_second_sweep_and_another_replica_redeliver_nothing_more(
    fake: FakeGitHub, github: GitHubApp, store: Store, tmp_path: Path
) -> None:
    await build_log(fake, store)
    await sweep(github, store, owner="replica-a")
    first = list(fake.redeliveries)
    assert len(first) == 3

    # GitHub's redeliveries failed too (perfbot still down): new attempts, same guids.
    for delivery in [d for d in fake.deliveries if d.id in first]:
        failed(fake, delivery.guid, ago=timedelta(seconds=1)).redelivery = True
    again = await sweep(github, store, owner="replica-a")
    assert again.ran
    assert again.redelivered == []

    # A second replica (its own store connection and GitHub client), and a restart.
    other_store = SQLiteStore(str(tmp_path / "perfbot.db"))
    await other_store.setup()
    other = GitHubApp(
        fake.app_id, rsa_keypair().private_pem, fake.api_url, transport=fake.transport()
    )
    try:
        assert (await sweep(other, other_store, owner="replica-b")).redelivered == []
    finally:
        await other.close()
        await other_store.close()
    assert fake.redeliveries == first


async def test_a_dry_runs_sweep_leaves_the_missed_deliveries_for_the_real_one(
    fake: FakeGitHub, store: Store
) -> None:
    await build_log(fake, store)
    dry = GitHubApp(
        fake.app_id,
        rsa_keypair().private_pem,
        fake.api_url,
        transport=fake.transport(),
        dry_run=DryRun(),
    )
    try:
        held = await sweep(dry, store, owner="replica-a")
    finally:
        await dry.close()
    assert len(held.redelivered) == 3
    assert fake.redeliveries == []  # held back: GitHub was not asked
    # --dry-run off, the same store: the three are still missed, and asked for now.
    real = GitHubApp(
        fake.app_id, rsa_keypair().private_pem, fake.api_url, transport=fake.transport()
    )
    try:
        result = await sweep(real, store, owner="replica-a")
    finally:
        await real.close()
    assert result.redelivered == held.redelivered
    assert len(fake.redeliveries) == 3


async def test_replicas_sweeping_together_ask_once_per_event(
    fake: FakeGitHub, github: GitHubApp, store: Store, tmp_path: Path
) -> None:
    await build_log(fake, store)
    fake.latency = 0.01  # so the sweeps overlap
    others = [SQLiteStore(str(tmp_path / "perfbot.db")) for _ in range(2)]
    for opened in others:
        await opened.setup()
    try:
        results = await asyncio.gather(
            *(sweep(github, s, owner=f"replica-{n}") for n, s in enumerate([store, *others]))
        )
    finally:
        for opened in others:
            await opened.close()
    assert sorted(fake.redeliveries) == sorted(set(fake.redeliveries))
    assert len(fake.redeliveries) == 3
    assert sum(r.ran for r in results) >= 1


async def test_a_held_lock_means_no_sweep(
    fake: FakeGitHub, github: GitHubApp, store: Store
) -> None:
    await build_log(fake, store)
    assert await store.try_lock(LOCK_KEY, "replica-a", 600, time.time())
    result = await sweep(github, store, owner="replica-b")
    assert not result.ran
    assert fake.requests == []
    assert fake.redeliveries == []
    await store.unlock(LOCK_KEY, "replica-a")
    assert (await sweep(github, store, owner="replica-b")).ran
    assert len(fake.redeliveries) == 3


async def test_the_claim_is_once_per_guid_ever(store: Store, tmp_path: Path) -> None:
    assert await store.claim_redelivery("guid-1", 1.0)
    assert not await store.claim_redelivery("guid-1", 2.0)
    assert await store.claim_redelivery("guid-2", 2.0)
    # Claims are not deliveries, and survive a reopened database.
    assert not await store.delivery_seen("guid-1")
    reopened = SQLiteStore(str(tmp_path / "perfbot.db"))
    await reopened.setup()
    try:
        assert not await reopened.claim_redelivery("guid-1", 1e9)
        results = await asyncio.gather(
            *(s.claim_redelivery("guid-race", 3.0) for s in (store, reopened) for _ in range(5))
        )
        assert results.count(True) == 1
    finally:
        await reopened.close()


def test_missed_groups_attempts_by_guid() -> None:
    def attempt(n: int, guid: str, ok: bool, at: float) -> HookDelivery:
        return HookDelivery(
            id=n, guid=guid, delivered_at=at, ok=ok, event="workflow_run", action=None
        )

    attempts = [
        attempt(6, "c", False, 60.0),
        attempt(5, "b", True, 50.0),  # a later success
        attempt(4, "a", False, 40.0),  # the newest attempt of a
        attempt(3, "b", False, 30.0),
        attempt(2, "a", False, 20.0),
        attempt(1, "d", True, 10.0),
    ]
    assert [a.id for a in missed(attempts)] == [4, 6]
    assert missed([]) == []


async def test_a_failing_sweep_is_logged_and_the_next_one_runs(
    fake: FakeGitHub, github: GitHubApp, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    cases = await build_log(fake, store)
    fake.fail_next(3, status=502, path_contains="/app/hook/deliveries")  # GETs retry twice
    sweeper = Redeliverer(github, store, interval=0.05, first_delay=0)
    with caplog.at_level(logging.INFO, logger="perfbot.redeliver"):
        sweeper.start()
        try:
            await _until(lambda: len(fake.redeliveries) == 3, "the next sweep")
        finally:
            await sweeper.stop()
    assert "redelivery sweep failed" in caplog.text
    assert "GitHub answered 502" in caplog.text
    assert sorted(fake.redeliveries) == sorted(
        cases[k].id for k in ("missed-early", "twice-2", "missed-late")
    )
    # The loop is gone, and it let go of the lock.
    assert await store.try_lock(LOCK_KEY, "someone-else", 60, time.time())


async def test_a_refused_redelivery_is_not_asked_again_and_the_rest_follow(
    fake: FakeGitHub, github: GitHubApp, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    cases = await build_log(fake, store)
    fake.fail_next(1, status=502, path_contains=f"/{cases['missed-early'].id}/attempts")
    with caplog.at_level(logging.INFO, logger="perfbot.redeliver"):
        with pytest.raises(GitHubUnavailable):
            await sweep(github, store, owner="replica-a")
        assert fake.redeliveries == []  # GitHub is unwell: the sweep stopped at once
        assert "will not be asked again" in caplog.text
        assert "guid-missed-early" in caplog.records[-1].__dict__["delivery"]
        result = await sweep(github, store, owner="replica-a")
    assert result.redelivered == ["guid-twice", "guid-missed-late"]
    assert fake.redeliveries == [cases["twice-2"].id, cases["missed-late"].id]

    # A 404 (the attempt left the log) is skipped and the sweep goes on.
    late = failed(fake, "guid-gone", ago=timedelta(seconds=30))
    newest = failed(fake, "guid-newest", ago=timedelta(seconds=10))
    fake.fail_next(1, status=404, path_contains=f"/{late.id}/attempts")
    result = await sweep(github, store, owner="replica-a")
    assert result.redelivered == ["guid-gone", "guid-newest"]
    assert fake.redeliveries[-1] == newest.id


async def test_a_rate_limited_redelivery_is_asked_again_next_sweep(
    fake: FakeGitHub, github: GitHubApp, store: Store
) -> None:
    cases = await build_log(fake, store)
    fake.secondary_rate_limit_next(1, path_contains=f"/{cases['missed-early'].id}/attempts")
    with pytest.raises(RateLimited):
        await sweep(github, store, owner="replica-a")
    assert fake.redeliveries == []  # GitHub turned it down without acting on it
    result = await sweep(github, store, owner="replica-a")
    assert result.redelivered == ["guid-missed-early", "guid-twice", "guid-missed-late"]
    assert (await sweep(github, store, owner="replica-a")).redelivered == []


async def test_a_secondary_rate_limit_waits_for_the_next_sweep(
    fake: FakeGitHub, github: GitHubApp, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    await build_log(fake, store)
    fake.secondary_rate_limit_next(1, path_contains="/app/hook/deliveries")
    sweeper = Redeliverer(github, store, interval=0.05, first_delay=0)
    with caplog.at_level(logging.ERROR, logger="perfbot.redeliver"):
        sweeper.start()
        try:
            await _until(lambda: len(fake.redeliveries) == 3, "the sweep after the limit")
        finally:
            await sweeper.stop()
    assert "rate limit" in caplog.text
    assert "Traceback" not in caplog.text


async def test_stopping_cancels_a_sweep_stuck_on_github(
    fake: FakeGitHub, github: GitHubApp, store: Store
) -> None:
    await build_log(fake, store)
    fake.hang_next(1, 30, path_contains="/app/hook/deliveries")
    sweeper = Redeliverer(github, store, interval=3600, first_delay=0)
    sweeper.start()
    await _until(lambda: bool(listing_calls(fake)), "the sweep to start")
    # Far sooner than the 30 s GitHub takes to answer: stop() does not wait for it.
    await within(sweeper.stop(), 5)
    assert fake.redeliveries == []
    assert await store.try_lock(LOCK_KEY, "someone-else", 60, time.time())


async def _until(condition: Callable[[], bool], what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


# The cursor: a sweep reads only what is new since the last one --------------------------------


async def test_a_quiet_sweep_reads_one_page(
    fake: FakeGitHub, github: GitHubApp, store: Store
) -> None:
    await build_log(fake, store)
    first = await sweep(github, store, owner="replica-a")
    assert first.complete
    assert len(listing_calls(fake)) == 3  # the first sweep of a database: three days
    record = await store.last_sweep()
    assert record is not None
    newest = max(d.delivered_at for d in fake.deliveries).replace(microsecond=0)
    assert record.cursor == newest.timestamp()  # GitHub's time (whole seconds)

    for _ in range(3):
        before = len(listing_calls(fake))
        quiet = await sweep(github, store, owner="replica-a")
        assert quiet.ran
        assert quiet.redelivered == []
        assert len(listing_calls(fake)) - before == 1
        # Only the overlap before the cursor is read again: the newest two minutes.
        assert quiet.attempts_read == 1
    assert len(fake.redeliveries) == 3


async def test_a_sweep_after_new_failures_reads_only_the_new_pages(
    fake: FakeGitHub, github: GitHubApp, store: Store
) -> None:
    await build_log(fake, store)
    await sweep(github, store, owner="replica-a")
    full_read = len(listing_calls(fake))
    assert len(fake.redeliveries) == 3

    # 250 new attempts (two and a half pages), three of them failed and never received.
    new_failures = []
    for n in range(250):
        ago = timedelta(seconds=50) - timedelta(milliseconds=190 * n)
        if n in (10, 125, 240):
            new_failures.append(failed(fake, f"guid-new-{n}", ago=ago, status=504))
        else:
            succeeded(fake, ago=ago)
    before = len(listing_calls(fake))
    result = await sweep(github, store, owner="replica-a")

    new_calls = listing_calls(fake)[before:]
    assert len(new_calls) == 3  # the 250, then the page that reaches the cursor
    assert len(new_calls) < full_read + 2  # a full read would now take six pages
    assert "cursor" not in new_calls[0]
    assert result.attempts_read == 251  # the new ones and the one in the overlap
    assert result.redelivered == [d.guid for d in new_failures]
    assert fake.redeliveries[3:] == [d.id for d in new_failures]


async def test_an_attempt_logged_late_is_seen_within_the_overlap(
    fake: FakeGitHub, github: GitHubApp, store: Store
) -> None:
    """GitHub may list an attempt after newer ones were read (it timed out, or its log
    lagged): the next sweep reads the two minutes before its cursor again."""
    await build_log(fake, store)
    await sweep(github, store, owner="replica-a")
    record = await store.last_sweep()
    assert record is not None
    assert record.cursor is not None
    # Listed now, but started 90 s before the newest attempt the last sweep read.
    late = failed(fake, "guid-logged-late", ago=timedelta(minutes=1, seconds=90))
    assert late.delivered_at.timestamp() < record.cursor
    result = await sweep(github, store, owner="replica-a")
    assert result.redelivered == ["guid-logged-late"]
    assert fake.redeliveries[-1] == late.id


async def test_an_unfinished_sweep_keeps_the_cursor_where_it_was(
    fake: FakeGitHub, github: GitHubApp, store: Store
) -> None:
    await build_log(fake, store)
    await sweep(github, store, owner="replica-a")
    record = await store.last_sweep()
    assert record is not None
    late = failed(fake, "guid-late", ago=timedelta(seconds=5))
    fake.secondary_rate_limit_next(1, path_contains=f"/{late.id}/attempts")
    with pytest.raises(RateLimited):
        await sweep(github, store, owner="replica-a")
    after = await store.last_sweep()
    assert after is not None
    assert after.cursor == record.cursor  # not moved past the request GitHub turned down
    assert (await sweep(github, store, owner="replica-a")).redelivered == ["guid-late"]


def test_read_since_is_the_cursor_less_the_overlap_within_three_days() -> None:
    now = 1_000_000.0
    assert read_since(now, None) == now - 3 * 86_400
    assert read_since(now, now - 60) == now - 60 - OVERLAP_SECONDS
    assert read_since(now, now - 5 * 86_400) == now - 3 * 86_400  # perfbot was off a week
    assert 0 < OVERLAP_SECONDS <= 300


# When sweeps run: soon after start-up, then every few minutes, counted across processes ------


class Timer:
    """The clock and ``asyncio.sleep`` of a Redeliverer: records every delay its loop asks
    for, and lets it pass (moving the clock on by it) only when the test calls ``elapse``."""

    def __init__(self) -> None:
        self.now = time.time()
        self.delays: list[float] = []
        self._waiting: asyncio.Future[None] | None = None

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.delays.append(seconds)
        self._waiting = asyncio.get_running_loop().create_future()
        await self._waiting

    def elapse(self) -> None:
        assert self._waiting is not None
        assert not self._waiting.done()
        self.now += self.delays[-1]
        self._waiting.set_result(None)

    async def asked(self, count: int) -> None:
        """Until the loop has asked for ``count`` delays (so it ran up to the next wait)."""
        await _until(lambda: len(self.delays) >= count, f"delay {count} to be asked for")


def sweeper_on(github: GitHubApp, store: Store, timer: Timer) -> Redeliverer:
    return Redeliverer(github, store, interval=PERIOD, clock=timer.clock, sleep=timer.sleep)


def test_the_default_period_is_at_most_ten_minutes() -> None:
    assert 0 < PERIOD <= 600
    assert FIRST_SWEEP_DELAY_SECONDS <= 15


async def test_the_first_sweep_is_within_15_s_and_the_next_within_10_min(
    fake: FakeGitHub, github: GitHubApp, store: Store
) -> None:
    await build_log(fake, store)
    timer = Timer()
    sweeper = sweeper_on(github, store, timer)
    sweeper.start()
    try:
        await timer.asked(1)
        assert 0 < timer.delays[0] <= 15
        assert listing_calls(fake) == []  # nothing before that delay has passed
        timer.elapse()
        await timer.asked(2)
        assert len(fake.redeliveries) == 3  # the first sweep ran
        assert timer.delays[1] == PERIOD  # from the start of the sweep before
        timer.elapse()
        await timer.asked(3)
        assert timer.delays[2] == PERIOD
        assert len(listing_calls(fake)) == 3 + 1  # a full read, then a quiet one
    finally:
        await sweeper.stop()


async def test_a_failure_while_perfbot_runs_is_redelivered_by_the_next_periodic_sweep(
    fake: FakeGitHub, github: GitHubApp, store: Store
) -> None:
    await build_log(fake, store)
    timer = Timer()
    sweeper = sweeper_on(github, store, timer)
    sweeper.start()
    try:
        await timer.asked(1)
        timer.elapse()
        await timer.asked(2)  # the start-up sweep is done
        assert len(fake.redeliveries) == 3
        calls = len(listing_calls(fake))
        # A deploy: a delivery timed out while perfbot was up.
        lost = failed(fake, "guid-during-deploy", ago=timedelta(seconds=2), status=0)
        timer.elapse()  # at most ten minutes later
        await timer.asked(3)
        assert fake.redeliveries[-1] == lost.id
        assert len(fake.redeliveries) == 4
        assert len(listing_calls(fake)) - calls == 1
    finally:
        await sweeper.stop()


async def test_a_sweep_by_another_process_minutes_ago_holds_back_the_first(
    fake: FakeGitHub, github: GitHubApp, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    await build_log(fake, store)
    timer = Timer()
    await store.sweep_started(timer.now - 120)  # another replica, two minutes ago
    sweeper = sweeper_on(github, store, timer)
    with caplog.at_level(logging.INFO, logger="perfbot.redeliver"):
        sweeper.start()
        try:
            await timer.asked(1)
            assert timer.delays[0] == PERIOD - 120  # one period after the other's sweep
            assert listing_calls(fake) == []
            assert "another one started recently" in caplog.text
            timer.elapse()
            await timer.asked(2)
            assert len(fake.redeliveries) == 3  # then it sweeps as usual
        finally:
            await sweeper.stop()


async def test_a_sweep_longer_ago_than_the_period_does_not_hold_back_the_first(
    fake: FakeGitHub, github: GitHubApp, store: Store
) -> None:
    timer = Timer()
    await store.sweep_started(timer.now - PERIOD - 1)
    sweeper = sweeper_on(github, store, timer)
    sweeper.start()
    try:
        await timer.asked(1)
        assert timer.delays[0] == FIRST_SWEEP_DELAY_SECONDS
    finally:
        await sweeper.stop()


async def test_a_crash_loop_sweeps_once_per_period(
    fake: FakeGitHub, github: GitHubApp, store: Store
) -> None:
    """A process that starts, lives 12 s and crashes, over and over, for two periods."""
    await build_log(fake, store)
    timer = Timer()
    started = timer.now
    sweeps = 0
    for _ in range(int(2 * PERIOD / 12)):
        sweeper = sweeper_on(github, store, timer)  # a new process on the same database
        born = timer.now
        sweeper.start()
        try:
            await timer.asked(len(timer.delays) + 1)
            if timer.delays[-1] <= 12:
                before = len(listing_calls(fake))
                timer.elapse()
                await timer.asked(len(timer.delays) + 1)  # swept, and waiting again
                sweeps += 1
                assert len(listing_calls(fake)) > before
        finally:
            await sweeper.stop()  # the crash
        timer.now = born + 12  # and the restart
    # The first start, then once per period: never at every start.
    assert sweeps == 2
    assert timer.now - started >= 2 * PERIOD - 12
    assert len(fake.redeliveries) == 3


async def test_a_sweep_that_fails_still_holds_back_the_next_start(
    fake: FakeGitHub, github: GitHubApp, store: Store
) -> None:
    """A process that dies in its sweep (here GitHub fails it) has recorded it all the same:
    the restart does not sweep again at once."""
    await build_log(fake, store)
    timer = Timer()
    fake.fail_next(3, status=502, path_contains="/app/hook/deliveries")  # GETs retry twice
    with pytest.raises(GitHubUnavailable):
        await sweep(github, store, owner="replica-a", clock=timer.clock)
    record = await store.last_sweep()
    assert record is not None
    assert record.started_at == timer.now
    assert record.cursor is None  # nothing was read: the next sweep reads three days
    timer.now += 30
    sweeper = sweeper_on(github, store, timer)
    sweeper.start()
    try:
        await timer.asked(1)
        assert timer.delays[0] == PERIOD - 30
    finally:
        await sweeper.stop()


class KilledBeforeUnlocking(SQLiteStore):
    """The store of a process killed mid-sweep: its lock is never let go."""

    async def unlock(self, key: str, owner: str) -> None:
        raise RuntimeError("the process was killed")


async def test_a_sweep_killed_midway_holds_the_next_one_back_a_minute_at_most(
    fake: FakeGitHub, github: GitHubApp, store: Store, tmp_path: Path
) -> None:
    timer = Timer()
    dead = KilledBeforeUnlocking(str(tmp_path / "perfbot.db"))
    await dead.setup()
    try:
        hold = fake.hold_next("/app/hook/deliveries")
        killed = asyncio.create_task(
            sweep(github, dead, owner="host:1:redeliver:dead:sweep", clock=timer.clock)
        )
        await _until(hold.reached.is_set, "the sweep to read the log")
        killed.cancel()
        with pytest.raises(asyncio.CancelledError):
            await killed
        hold.release()
    finally:
        await dead.close()
    # Its lock is still there for a while (the control)...
    timer.now += 30
    assert not (await sweep(github, store, owner="next:sweep", clock=timer.clock)).ran
    # ...but not for ten minutes: about a minute after the kill, the next process sweeps.
    timer.now += 35
    assert (await sweep(github, store, owner="next:sweep", clock=timer.clock)).ran


def lock_expiry(database: Path) -> float | None:
    with sqlite3.connect(database) as conn:
        row = conn.execute("SELECT expires_at FROM locks WHERE key = ?", (LOCK_KEY,)).fetchone()
    conn.close()
    return None if row is None else float(row[0])


async def test_a_sweep_keeps_its_lock_alive_while_it_runs(
    fake: FakeGitHub,
    github: GitHubApp,
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(redeliver, "LOCK_REFRESH_SECONDS", 0.01)  # the keeper's real pace
    timer = Timer()
    hold = fake.hold_next("/app/hook/deliveries")
    slow = asyncio.create_task(sweep(github, store, owner="slow:sweep", clock=timer.clock))
    try:
        await _until(hold.reached.is_set, "the sweep to read the log")
        # GitHub takes long to answer: far longer than the lock lives unless refreshed.
        timer.now += 700
        database = tmp_path / "perfbot.db"
        await _until(lambda: (lock_expiry(database) or 0) > timer.now, "the lock to be refreshed")
        assert not (await sweep(github, store, owner="other:sweep", clock=timer.clock)).ran
    finally:
        hold.release()
    result = await within(slow, 10)
    assert result.ran
    assert result.complete
    assert lock_expiry(tmp_path / "perfbot.db") is None  # let go at the end


# Another process that sweeps on the database and hangs reading GitHub's log, until killed.
STUCK_SWEEPER = """
import asyncio, sys
from perfbot.app.redeliver import Redeliverer
from perfbot.store import SQLiteStore

class StuckGitHub:
    async def list_hook_deliveries(self, since, pages):
        print("sweeping", flush=True)
        await asyncio.Event().wait()

async def main():
    store = SQLiteStore(sys.argv[1])
    await store.setup()
    Redeliverer(StuckGitHub(), store, interval=3600, first_delay=0).start()
    await asyncio.Event().wait()

asyncio.run(main())
"""


async def test_the_lock_of_a_sweeper_killed_on_sqlite_is_freed_at_once(
    store: Store, tmp_path: Path
) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", STUCK_SWEEPER, str(tmp_path / "perfbot.db")],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    ) as process:
        try:
            assert process.stdout is not None
            line = await within(asyncio.to_thread(process.stdout.readline), 30)
            assert line.strip() == "sweeping"
            # Alive: its lock holds, and nothing is freed (the control).
            assert await store.release_departed() == []
            assert not await store.try_lock(LOCK_KEY, "next:sweep", 60, time.time())
        finally:
            process.kill()  # the process this test started
            process.wait(timeout=10)
    (freed,) = await store.release_departed()
    assert f":{process.pid}:redeliver:" in freed
    # Its lock was freed with its departure, not when it expires.
    assert await store.try_lock(LOCK_KEY, "next:sweep", 60, time.time())


async def test_replicas_together_sweep_about_once_per_period(
    fake: FakeGitHub, github: GitHubApp, store: Store, tmp_path: Path
) -> None:
    """Two replicas on one database: the second's next sweep is one period after the
    first's, not one of its own."""
    await build_log(fake, store)
    timer = Timer()
    other_store = SQLiteStore(str(tmp_path / "perfbot.db"))
    await other_store.setup()
    first = sweeper_on(github, store, timer)
    second = sweeper_on(github, other_store, timer)
    try:
        first.start()
        await timer.asked(1)
        timer.elapse()
        await timer.asked(2)  # the first replica swept
        assert timer.delays[1] == PERIOD
        timer.now += 60  # the second replica starts a minute later
        second.start()
        await timer.asked(3)
        assert timer.delays[2] == PERIOD - 60
        assert len(listing_calls(fake)) == 3  # the first replica's sweep only
    finally:
        await first.stop()
        await second.stop()
        await other_store.close()


@pytest.mark.parametrize(
    ("last", "soonest", "expected"),
    [
        (None, 10.0, 10.0),  # no sweep ever: soon
        (1_000.0 - 120, 10.0, 180.0),  # another process two minutes ago
        (1_000.0 - 299, 10.0, 10.0),  # one second short of a period ago: not sooner
        (1_000.0 - 3_600, 10.0, 10.0),  # long ago
        (1_000.0 + 86_400, 10.0, 300.0),  # a clock far ahead delays by one period at most
        (1_000.0, 30.0, 300.0),  # just swept
    ],
)
def test_next_delay(last: float | None, soonest: float, expected: float) -> None:
    assert next_delay(1_000.0, last, interval=300.0, soonest=soonest) == expected


# The service --------------------------------------------------------------------------------


@asynccontextmanager
async def service(
    settings: Settings, fake: FakeGitHub, timer: Timer | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """perfbot's app with its lifespan (workers, sweeps) in this test's event loop."""
    sleep = asyncio.sleep if timer is None else timer.sleep
    app = create_app(settings, github_transport=fake.transport(), redelivery_sleep=sleep)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://perfbot") as client:
            yield client


async def test_the_service_sweeps_soon_after_start_up_and_the_redelivery_becomes_the_comment(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    world = World.create()
    pull = world.pull(7, HEAD)
    run = world.measured_run(pull, 1001)
    body, headers = world.delivery(run, delivery_id="guid-lost")
    # GitHub sent it while perfbot was down; the log says so.
    world.fake.add_delivery(
        "workflow_run",
        "completed",
        status_code=502,
        guid="guid-lost",
        installation_id=INSTALLATION,
        repository_id=REPO_ID,
        delivered_at=world.fake.now() - timedelta(minutes=3),
    )
    sent = {"guid-lost": (body, headers)}  # what GitHub would send again
    settings = Settings.from_env(
        settings_env(
            world.fake.api_url,
            tmp_path / "db",
            PERFBOT_REDELIVERY_MINUTES=str(DEFAULT_REDELIVERY_MINUTES),
        )
    )
    timer = Timer()  # its delays only: the service keeps its own clock
    async with service(settings, world.fake, timer) as client:
        await timer.asked(1)
        assert timer.delays[0] <= 15
        timer.elapse()
        await _until(lambda: bool(world.fake.redeliveries), "the start-up sweep")
        await timer.asked(2)
        assert 0 < timer.delays[1] <= 600  # the next one, from the service's settings
        # The fake only records the request: here GitHub's redelivery is played by the test.
        for delivery_id in world.fake.redeliveries:
            guid = next(d.guid for d in world.fake.deliveries if d.id == delivery_id)
            raw, signed = sent[guid]
            response = await client.post("/webhook", content=raw, headers=signed)
            assert response.status_code == 202
        await _until(lambda: len(world.bot_comments(7)) == 1, "the comment")
        metrics = (await client.get("/metrics")).text
        # A period later the next sweep finds nothing more to do.
        with caplog.at_level(logging.INFO, logger="perfbot.redeliver"):
            timer.elapse()
            await timer.asked(3)
    assert 'perfbot_redeliveries_total{event="workflow_run"} 1.0' in metrics
    assert "1 regression" in world.bot_comments(7)[0]
    assert len(listing_calls(world.fake)) == 2
    assert "0 deliveries redelivered" in caplog.text
    assert len(world.fake.redeliveries) == 1


async def test_a_zero_period_starts_no_sweep(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    world = World.create()
    world.fake.add_delivery("workflow_run", "completed", status_code=502)
    env = settings_env(world.fake.api_url, tmp_path / "db", PERFBOT_REDELIVERY_MINUTES="0")
    settings = Settings.from_env(env)
    assert settings.redelivery_minutes == 0
    timer = Timer()
    with caplog.at_level(logging.INFO, logger="perfbot.app"):
        async with service(settings, world.fake, timer) as client:
            assert (await client.get("/healthz")).status_code == 200
    assert "the sweep for missed deliveries is off" in caplog.text
    assert timer.delays == []  # no sweeper was started to wait for anything
    assert listing_calls(world.fake) == []


async def test_the_former_hours_variable_is_logged_as_deprecated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    world = World.create()
    env = settings_env(world.fake.api_url, tmp_path / "db", PERFBOT_REDELIVERY_HOURS="0")
    settings = Settings.from_env(env)
    assert settings.redelivery_minutes == 0  # its 0 still turns the sweep off
    with caplog.at_level(logging.INFO, logger="perfbot.app"):
        async with service(settings, world.fake, Timer()) as client:
            assert (await client.get("/healthz")).status_code == 200
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.name == "perfbot.app" and r.levelno == logging.WARNING
    ]
    assert warnings == [
        "PERFBOT_REDELIVERY_HOURS is deprecated (its 0 still turns the sweep off): set "
        "PERFBOT_REDELIVERY_MINUTES instead (0 turns the sweep off, else 1 to 10)."
    ]
