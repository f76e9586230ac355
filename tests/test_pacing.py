"""GitHub's pace, kept per installation (``perfbot.github.pacing``): the rules of a slot, two
replicas booking through one store, and the service end to end against the fake GitHub on
a clock that jumps ahead once every running job sleeps on it (``tests.virtualtime``).

Every time asserted on is the fake's record of when a request arrived, on that clock; none
is the test's own wall time."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from perfbot.app.worker import IDLE_POLL_SECONDS, IN_HAND_PER_WORKER
from perfbot.engine.show.render import MARKER
from perfbot.github.errors import RateLimited, WaitForTurn
from perfbot.github.pacing import (
    HOUR,
    JOBS_AT_ONCE,
    MAX_READ_SPACING,
    MINUTE,
    PER_HOUR,
    PER_MINUTE,
    SLOT_MARGIN,
    MemoryBook,
    Pacer,
    PaceState,
    installation_key,
)
from perfbot.sandbox.fakegithub import RecordedRequest
from perfbot.store import SQLiteStore
from perfbot.store.base import PaceRecord
from perfbot.support.metrics import Metrics
from tests.harness import World, assert_done, in_process_service_on, wait_until
from tests.virtualtime import Quiet, VirtualClock

T = TypeVar("T")
SECONDS_APART = 1.0
# GitHub's pace; leases beyond the clock's jumps (renewals run on real time).
PACED = {"PERFBOT_WRITE_PACE_SECONDS": "1", "PERFBOT_LEASE_SECONDS": "3600"}


def test_a_slot_keeps_a_second_between_writes_and_three_before_a_notifying_one() -> None:
    state = PaceState()
    at = state.slot(False, 100.0)
    assert at == 100.0
    state = state.booked(at, False, 1.0)
    assert state.slot(False, 100.2) == 101.0 + SLOT_MARGIN
    state = state.booked(101.0, True, 1.0)
    assert state.slot(False, 101.0) == 102.0 + SLOT_MARGIN
    # Three seconds after the notifying one.
    assert state.slot(True, 101.0) == 104.0 + SLOT_MARGIN
    blocked = state.blocked(150.0)
    assert blocked.slot(False, 101.0) == 150.0
    assert PaceState.load(blocked.dump()) == blocked


def test_no_81st_write_in_a_minute_nor_501st_in_an_hour() -> None:
    # No interval at all: only the caps space these writes.
    state, slots = PaceState(), []
    for _ in range(PER_HOUR + 1):
        at = state.slot(False, 0.0)
        slots.append(at)
        state = state.booked(at, False, 0.0)
    assert slots[PER_MINUTE - 1] == 0.0
    assert slots[PER_MINUTE] == MINUTE
    for first, later in zip(slots, slots[PER_MINUTE:], strict=False):
        assert later - first >= MINUTE
    for first, later in zip(slots, slots[PER_HOUR:], strict=False):
        assert later - first >= HOUR


async def test_two_replicas_booking_through_one_store_never_share_a_second(
    tmp_path: Path,
) -> None:
    clock = VirtualClock()
    stores = [SQLiteStore(str(tmp_path / "perfbot.db")) for _ in range(2)]
    for store in stores:
        await store.setup()
    sent: list[tuple[float, bool]] = []

    async def write(pacer: Pacer, notify: bool) -> None:
        async def send() -> None:
            sent.append((clock.now(), notify))

        await pacer.write("installation:1", notify, send)

    async def jumping() -> None:
        # Nothing else runs here: whenever every write sleeps, move to the next deadline.
        for _ in range(500):
            await asyncio.sleep(0.01)
            if clock.asleep and (deadline := clock.next_deadline()) is not None:
                clock.jump_to(deadline)

    try:
        replicas = [Pacer(store, clock=clock.now, sleep=clock.sleep) for store in stores]
        writes = [write(replicas[n % 2], n % 5 == 0) for n in range(20)]
        jumper = asyncio.create_task(jumping())
        await asyncio.gather(*writes)
        jumper.cancel()
    finally:
        for store in stores:
            await store.close()
    times = sorted(at for at, _ in sent)
    assert len(times) == 20
    assert min(b - a for a, b in itertools.pairwise(times)) >= SECONDS_APART
    notifying = sorted(at for at, notify in sent if notify)
    assert min(b - a for a, b in itertools.pairwise(notifying)) >= 3.0


class CountingBook(MemoryBook):
    """A book shared by two pacers (two processes), counting its reads."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def pace_record(self, key: str) -> PaceRecord | None:
        self.reads += 1
        return await super().pace_record(key)


async def test_a_booking_starts_from_the_record_it_wrote_and_rereads_it_once_changed() -> None:
    clock = VirtualClock()
    book = CountingBook()
    # No interval: no write waits for its slot (a write that waited reads the record again,
    # for a block another process met meanwhile).
    ours, theirs = (Pacer(book, interval=0.0, clock=clock.now, sleep=clock.sleep) for _ in range(2))
    key = "installation:1"
    sent: list[float] = []

    async def send() -> None:
        sent.append(clock.now())

    async def write(pacer: Pacer) -> None:
        await _settled(clock, asyncio.ensure_future(pacer.write(key, False, send)))

    for _ in range(3):
        await write(ours)
    # One read, for the first booking: the next two swapped from the record it wrote.
    assert book.reads == 1
    await write(theirs)
    await write(ours)
    # Its recalled record was stale: the swap failed, it read the record, and booked
    # beside the other process's slot instead of over it.
    assert book.reads == 3
    assert len(sent) == 5
    record = await book.pace_record(key)
    assert record is not None
    assert (record.version, len(PaceState.load(record.state).recent)) == (5, 5)


async def test_a_record_read_then_purged_and_made_again_is_not_booked_over() -> None:
    """The store purges a record idle for a day, and another process may make it again,
    at version 1: a record this process had only read (for a job's admission) must not be
    swapped from, or both processes' writes would share a second."""
    clock = VirtualClock()
    book = MemoryBook()
    ours, theirs = (Pacer(book, clock=clock.now, sleep=clock.sleep) for _ in range(2))
    key = "installation:1"
    assert await book.swap_pace(key, None, PaceState().dump(), clock.now())  # long ago
    assert await ours.backlog(key) == 0.0  # admission reads the record (version 1)
    book._records.pop(key)  # the store's purge of an idle record
    theirs_at = await theirs._book_slot(key, notify=False)  # made again, at version 1
    ours_at = await ours._book_slot(key, notify=False)
    assert ours_at - theirs_at >= SECONDS_APART


async def test_reads_are_spaced_out_once_the_rate_limit_runs_low() -> None:
    clock = VirtualClock()
    pacer = Pacer(MemoryBook(), clock=clock.now, sleep=clock.sleep)
    reset = str(int(clock.now()) + 3600)
    plenty = {"x-ratelimit-remaining": "4000", "x-ratelimit-reset": reset}
    low = {"x-ratelimit-remaining": "10", "x-ratelimit-reset": reset}
    times: list[float] = []

    class Answer:
        def __init__(self, headers: dict[str, str]) -> None:
            self.headers = headers

    async def read(headers: dict[str, str]) -> None:
        async def send() -> Answer:
            times.append(clock.now())
            return Answer(headers)

        await _settled(clock, asyncio.ensure_future(pacer.read("installation:1", send)))

    for _ in range(3):
        await read(plenty)
    assert times[-1] - times[0] < SECONDS_APART  # plenty left: no waiting
    start = len(times)
    for _ in range(4):
        await read(low)
    spaced = times[start:]
    assert min(b - a for a, b in itertools.pairwise(spaced)) >= MAX_READ_SPACING


class _Answer:
    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers


async def _settled(clock: VirtualClock, task: asyncio.Future[T]) -> T:
    """``task``'s result, the clock jumped to each deadline it sleeps on (100 at most)."""
    for _ in range(100):
        await asyncio.sleep(0)
        if task.done():
            break
        if (deadline := clock.next_deadline()) is not None:
            clock.jump_to(deadline)
    return await task


async def test_a_spent_window_holds_reads_until_its_reset() -> None:
    clock = VirtualClock()
    pacer = Pacer(MemoryBook(), clock=clock.now, sleep=clock.sleep)
    times: list[float] = []

    def answering(headers: dict[str, str]) -> Callable[[], Awaitable[_Answer]]:
        async def send() -> _Answer:
            times.append(clock.now())
            return _Answer(headers)

        return send

    soon = clock.now() + 5
    spent = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(soon)}
    await _settled(clock, asyncio.ensure_future(pacer.read("installation:1", answering(spent))))
    # The reset within the job's patience: the next read waits for it, then is sent.
    later = {"x-ratelimit-remaining": "4999", "x-ratelimit-reset": str(soon + 3600)}
    await _settled(clock, asyncio.ensure_future(pacer.read("installation:1", answering(later))))
    assert times[1] >= soon
    # Spent with the reset far ahead: the read is not sent; its job waits in the queue.
    far = clock.now() + 600
    spent_far = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(far)}
    await pacer.read("installation:2", answering(spent_far))
    with pytest.raises(WaitForTurn) as turn:
        await pacer.read("installation:2", answering(later))
    assert turn.value.retry_after == pytest.approx(600, abs=1)
    assert len(times) == 3


async def test_a_primary_limit_blocks_writes_until_its_reset_on_the_pacers_clock() -> None:
    # The pacer's clock is days from the adapter's: the reset GitHub named is the moment
    # kept, not a Retry-After worked out on another clock.
    clock = VirtualClock(jumped=3 * 86400.0)
    pacer = Pacer(MemoryBook(), clock=clock.now, sleep=clock.sleep)
    reset = clock.now() + 30
    sent: list[float] = []

    async def send() -> None:
        sent.append(clock.now())
        if len(sent) == 1:
            raise RateLimited("GitHub rate limit (PrimaryRateLimitExceeded)", 3600.0, reset)

    await _settled(clock, asyncio.ensure_future(pacer.write("installation:1", False, send)))
    assert len(sent) == 2  # refused once, sent again: not dropped
    assert reset <= sent[1] < reset + 2
    assert await pacer.backlog("installation:1") <= 2


async def test_the_pace_is_exported_as_prometheus_metrics() -> None:
    clock = VirtualClock()
    metrics = Metrics()
    pacer = Pacer(MemoryBook(), clock=clock.now, sleep=clock.sleep, metrics=metrics)
    reset = str(int(clock.now()) + 3600)

    def sample(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(name, labels)

    async def read(remaining: str) -> _Answer:
        return _Answer({"x-ratelimit-remaining": remaining, "x-ratelimit-reset": reset})

    await pacer.read("installation:1", lambda: read("4321"))
    await pacer.read("installation:2", lambda: read("4000"))
    assert sample("perfbot_github_rate_limit_remaining") == 4000  # the lowest
    waiting: list[float | None] = []

    async def write() -> None:
        waiting.append(sample("perfbot_github_requests_waiting", kind="write"))

    first = asyncio.ensure_future(pacer.write("installation:1", False, write))
    second = asyncio.ensure_future(pacer.write("installation:1", False, write))
    for _ in range(20):
        await asyncio.sleep(0)
    assert sample("perfbot_github_requests_waiting", kind="write") == 1  # the second, queued
    await _settled(clock, asyncio.gather(first, second))
    assert sample("perfbot_github_requests_waiting", kind="write") == 0
    assert sample("perfbot_github_pace_wait_seconds_count", kind="write") == 1
    assert (sample("perfbot_github_pace_wait_seconds_sum", kind="write") or 0) >= SECONDS_APART
    assert metrics.exposition().count(b"perfbot_github_rate_limit_remaining 4000.0") == 1


async def test_github_names_the_reset_of_a_spent_window_and_perfbot_keeps_it() -> None:
    world = World.create()
    world.pull(7, "a" * 40)
    app = world.github_app()
    try:
        async with app.installation(1) as installation:
            world.fake.primary_rate_limit_next(1, reset_in=30, path_contains="/comments")
            with pytest.raises(RateLimited) as primary:
                await installation.create_comment("acme", "widget", 7, "x")
            world.fake.secondary_rate_limit_next(1, retry_after=3, path_contains="/comments")
            with pytest.raises(RateLimited) as secondary:
                await installation.create_comment("acme", "widget", 7, "y")
    finally:
        await app.close()
    assert primary.value.reset == world.fake.primary_resets[0]
    assert (secondary.value.reset, secondary.value.retry_after) == (None, 3.0)


async def test_every_kind_of_write_keeps_the_pace() -> None:
    # Comments, check runs, reactions, issues and re-runs of one installation, and the
    # App's redeliveries under a key of their own, all asked for at once.
    clock = VirtualClock()
    world = World.create()
    world.fake.now = clock.datetime
    world.pull(7, "a" * 40)
    said = world.fake.add_comment(world.repo, 7, "/perfbot rerun", "bob")
    world.fake.add_run(world.repo, 4001, "a" * 40, "feature-7")
    missed = [world.fake.add_delivery("workflow_run", "completed", status_code=502) for _ in "ab"]
    app = world.github_app(pacer=Pacer(MemoryBook(), clock=clock.now, sleep=clock.sleep))

    async def jumping() -> None:
        for _ in range(500):
            await asyncio.sleep(0.01)
            if clock.asleep and (deadline := clock.next_deadline()) is not None:
                clock.jump_to(deadline)

    jumper = asyncio.create_task(jumping())
    try:
        async with app.installation(1) as gh:
            await asyncio.gather(
                gh.add_reaction("acme", "widget", said.id, "eyes"),
                gh.create_comment("acme", "widget", 7, "a report"),
                gh.create_issue("acme", "widget", "a change of level", "body"),
                gh.upsert_check_run(
                    "acme",
                    "widget",
                    check_run_id=None,
                    name="perfbot",
                    head_sha="a" * 40,
                    conclusion="success",
                    title="t",
                    summary="s",
                ),
                gh.rerun_workflow_run("acme", "widget", 4001),
                gh.update_comment("acme", "widget", said.id, "edited"),
                *(app.redeliver(delivery.id) for delivery in missed),
            )
    finally:
        jumper.cancel()
        await app.close()
    writes = writes_of(world, 1)
    assert len(writes) == 6
    assert min(b.at - a.at for a, b in itertools.pairwise(writes)) >= SECONDS_APART
    notifying = [
        w for w in writes if w.method == "POST" and w.path.endswith(("/comments", "/issues"))
    ]
    assert len(notifying) == 2
    assert notifying[1].at - notifying[0].at >= 3 * SECONDS_APART
    redeliveries = sorted(
        (w for w in world.fake.write_calls() if "/attempts" in w.path), key=lambda w: w.at
    )
    assert len(redeliveries) == 2
    assert redeliveries[1].at - redeliveries[0].at >= SECONDS_APART


async def test_a_few_jobs_of_an_installation_run_at_once_the_rest_wait_in_the_queue() -> None:
    pacer = Pacer(MemoryBook())
    busy, other = installation_key(1), installation_key(2)
    with contextlib.ExitStack() as running:
        for _ in range(JOBS_AT_ONCE - 1):
            running.enter_context(pacer.running(busy))
        assert await pacer.admission(busy) is None
        with pacer.running(busy):
            assert await pacer.admission(busy) == pacer.interval  # back to the queue
            assert await pacer.admission(other) is None  # another installation's runs
    assert await pacer.admission(busy) is None


async def test_no_interval_means_no_caps_but_a_block_still_holds() -> None:
    # PERFBOT_WRITE_PACE_SECONDS=0: a server without secondary limits (a GHES with them off,
    # a test double); more writes than a minute's cap go at once, GitHub's block still waits.
    clock = VirtualClock()
    pacer = Pacer(MemoryBook(), interval=0.0, clock=clock.now, sleep=clock.sleep)
    sent: list[float] = []

    async def send() -> None:
        sent.append(clock.now())

    start = clock.now()
    for _ in range(PER_MINUTE + 20):
        await pacer.write("installation:1", False, send)
    assert len(sent) == PER_MINUTE + 20
    assert sent[-1] - start < MINUTE  # capped, the 81st would wait out the minute
    await pacer.block("installation:1", start + 30.0)
    await _settled(clock, asyncio.ensure_future(pacer.write("installation:1", True, send)))
    assert sent[-1] >= start + 30.0


# -- the service, end to end ----------------------------------------------------------------


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


def updates(world: World, numbers: range, first_run: int) -> list[tuple[bytes, dict[str, str]]]:
    """For each PR number: the PR, perfbot's comment on it already, a finished run."""
    deliveries = []
    for number in numbers:
        pull = world.pull(number, f"{number:040x}")
        world.fake.add_bot_comment(world.repo, number, f"{MARKER}\nan older report")
        deliveries.append(world.delivery(world.measured_run(pull, first_run + number)))
    return deliveries


def writes_of(world: World, installation: int) -> list[RecordedRequest]:
    found = [r for r in world.fake.write_calls() if r.installation_id == installation]
    return sorted(found, key=lambda r: r.at)


def shows(world: World, number: int, run_id: int) -> bool:
    comments = world.bot_comments(number)
    return len(comments) == 1 and f"runs/{run_id})" in comments[0]


def run_until(quiet: Quiet, done: Iterator[bool] | None = None, *, limit: int = 400) -> None:
    """Let the service work; whenever every job sleeps on the clock, jump to the next
    moment something waits for; until nothing is left to do (or ``limit`` jumps)."""
    for _ in range(limit):
        wait_until(lambda: quiet() and quiet(), 60, "every running job asleep on the clock")
        moment = quiet.next_moment()
        if moment is None:
            # Nothing to wait for; but a job whose sleep ran out on real time since the
            # check is awake and working, not done: done is no job running nor queued.
            if quiet.idle():
                return
            continue
        quiet.clock.jump_to(moment)
    raise AssertionError(f"still busy after {limit} jumps")


def run_to_the_end(
    world: World,
    database: Path,
    clock: VirtualClock,
    deliveries: list[tuple[bytes, dict[str, str]]],
    env: dict[str, str] = PACED,
) -> None:
    """A service on ``clock`` takes ``deliveries`` and runs until nothing is left to do;
    every delivery ends DONE."""
    with in_process_service_on(world, database, clock.now, clock.sleep, env) as client:
        for body, headers in deliveries:
            assert client.post("/webhook", content=body, headers=headers).status_code == 202
        run_until(Quiet(clock, database))
        for _, headers in deliveries:
            assert_done(client.database, headers["X-GitHub-Delivery"])


def test_a_burst_in_one_installation_is_paced_and_another_is_not_held_back(
    tmp_path: Path, clock: VirtualClock
) -> None:
    busy = World.create()
    busy.fake.now = clock.datetime
    other = busy.another(2, "globex/gadget", 600)
    database = tmp_path / "perfbot.db"
    burst = updates(busy, range(1, 41), 1000)
    with in_process_service_on(busy, database, clock.now, clock.sleep, PACED) as client:
        for body, headers in burst:
            assert client.post("/webhook", content=body, headers=headers).status_code == 202
        (single,) = updates(other, range(1, 2), 5000)
        posted_at = clock.now()
        assert client.post("/webhook", content=single[0], headers=single[1]).status_code == 202
        run_until(Quiet(clock, database))
        for _, headers in [*burst, single]:
            assert_done(client.database, headers["X-GitHub-Delivery"])
    # All 40 landed, none dropped, none twice.
    assert all(shows(busy, number, 1000 + number) for number in range(1, 41))
    writes = writes_of(busy, 1)
    assert len([w for w in writes if "/issues/comments/" in w.path]) == 40
    assert min(b.at - a.at for a, b in itertools.pairwise(writes)) >= SECONDS_APART
    # The other installation's update was not queued behind the burst.
    assert shows(other, 1, 5001)
    (comment,) = [w for w in writes_of(other, 2) if "/issues/comments/" in w.path]
    assert comment.at - posted_at <= 5.0
    assert writes[-1].at - posted_at > 60.0  # while the burst took over a minute


def test_a_job_waiting_for_its_write_slot_lends_its_worker_to_another(
    tmp_path: Path, clock: VirtualClock
) -> None:
    # One worker, two installations' updates: each job's check run waits a second behind
    # its comment. Meanwhile the one worker runs the other job: the two overlap.
    first = World.create()
    first.fake.now = clock.datetime
    second = first.another(2, "globex/gadget", 600)
    database = tmp_path / "perfbot.db"
    deliveries = [*updates(first, range(1, 2), 1000), *updates(second, range(1, 2), 5000)]
    run_to_the_end(first, database, clock, deliveries, {**PACED, "PERFBOT_WORKERS": "1"})
    assert shows(first, 1, 1001)
    assert shows(second, 1, 5001)
    each = [writes_of(first, 1), writes_of(second, 2)]
    assert [len(writes) for writes in each] == [2, 2]  # a comment and a check run each
    for writes in each:
        assert writes[1].at - writes[0].at >= SECONDS_APART
    assert max(w[0].at for w in each) < min(w[1].at for w in each)


def test_a_process_holds_at_most_four_jobs_a_worker_while_they_wait(
    tmp_path: Path, clock: VirtualClock
) -> None:
    # One worker, six installations' updates, each check run 30 s behind its comment:
    # lending lets the one worker take up more jobs meanwhile, four at most (each holds
    # its reports in memory); the other two wait in the queue, and all six land.
    first = World.create()
    first.fake.now = clock.datetime
    worlds = [first] + [first.another(i, f"org{i}/gadget", 600 + i) for i in range(2, 7)]
    database = tmp_path / "perfbot.db"
    deliveries = [d for n, w in enumerate(worlds) for d in updates(w, range(1, 2), 1000 * n)]
    quiet = Quiet(clock, database)
    env = {**PACED, "PERFBOT_WRITE_PACE_SECONDS": "30", "PERFBOT_WORKERS": "1"}
    with in_process_service_on(first, database, clock.now, clock.sleep, env) as client:
        for body, headers in deliveries:
            assert client.post("/webhook", content=body, headers=headers).status_code == 202
        wait_until(lambda: clock.asleep >= IN_HAND_PER_WORKER, 60, "four jobs asleep")
        # Past the dispatcher's idle poll: had it room, it would have claimed a fifth.
        time.sleep(2 * IDLE_POLL_SECONDS)
        held = (quiet.jobs()[0], clock.asleep)
        deadline = clock.next_deadline()
        assert deadline is not None
        clock.jump_to(deadline)
        run_until(quiet)
        for _, headers in deliveries:
            assert_done(client.database, headers["X-GitHub-Delivery"])
    assert held == (IN_HAND_PER_WORKER, IN_HAND_PER_WORKER)
    assert all(shows(w, 1, 1000 * n + 1) for n, w in enumerate(worlds))


def five_updates_past_a_limit(
    world: World, database: Path, clock: VirtualClock, first_run: int
) -> tuple[list[RecordedRequest], list[RecordedRequest]]:
    """Five PRs' updates of one installation, run to the end past the rate limit the test
    set on the fake: every delivery DONE, every comment showing its run; (the
    installation's writes, those sent after the refused one)."""
    run_to_the_end(world, database, clock, updates(world, range(1, 6), first_run))
    assert all(shows(world, number, first_run + number) for number in range(1, 6))
    writes = writes_of(world, 1)
    (refused,) = [w for w in writes if w.status == 403]
    edits = [w for w in writes if "/issues/comments/" in w.path and w.status == 200]
    assert len(edits) == 5  # none lost
    later = [w for w in writes if w.at > refused.at]
    assert later  # the refused write and the ones behind it were all sent again
    return writes, later


def test_a_secondary_limit_delays_the_writes_behind_it_and_loses_none(
    tmp_path: Path, clock: VirtualClock
) -> None:
    world = World.create()
    world.fake.now = clock.datetime
    world.fake.secondary_rate_limit_next(1, retry_after=3, path_contains="/issues/comments/")
    writes, later = five_updates_past_a_limit(world, tmp_path / "perfbot.db", clock, 2000)
    (refused,) = [w for w in writes if w.status == 403]
    assert min(w.at for w in later) >= refused.at + 3.0


def test_a_spent_rate_limit_delays_the_writes_behind_it_until_its_reset(
    tmp_path: Path, clock: VirtualClock
) -> None:
    # GitHub's primary limit: no Retry-After, x-ratelimit-remaining 0, the window's reset
    # 30 s ahead. The reset is a moment, kept on perfbot's own clock.
    world = World.create()
    world.fake.now = clock.datetime
    world.fake.primary_rate_limit_next(1, reset_in=30, path_contains="/issues/comments/")
    _, later = five_updates_past_a_limit(world, tmp_path / "perfbot.db", clock, 3000)
    (reset,) = world.fake.primary_resets
    assert reset <= min(w.at for w in later) < reset + 3.0  # at the reset, not long after
