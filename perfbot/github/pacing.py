"""GitHub's limits kept per installation: its writes paced, shared by every replica through
the store, its reads slowed when its rate limit runs low.

GitHub's secondary limits (its REST documentation, 2026): no more than 80 content-generating
requests a minute and 500 an hour, 900 points a minute (a write costs 5), no more than 100
requests at once; its best practice: writes one after another, at least a second apart.
octokit's throttling plugin keeps writes a second apart and requests that notify people
(a new comment, a new issue) three seconds apart. perfbot keeps the same, per installation
(and for the App's own writes, the redeliveries, under a key of their own):

* **writes** (``write``): each books a slot in the key's record in the store (``Pacing``,
  compare and swap), at least ``interval`` after the previous slot, ``3 × interval`` after
  the previous notifying one, never an 81st in a minute or a 501st in an hour, never before
  GitHub's ``Retry-After`` or rate-limit reset; then it waits for its slot and is sent.
  Every process and replica books in the same record, so the pace holds across them. A
  write GitHub refuses for a rate limit was not carried out: it blocks the key until
  GitHub's time, books a slot after it and is sent again (up to ``MAX_HELD`` times, then
  the job is retried), and the writes already booked behind it look at the block before
  they are sent: delayed, never dropped.
* **reads** (``read``): the newest ``x-ratelimit-remaining`` and ``x-ratelimit-reset`` of the
  key's answers (in this process) space its reads out once fewer than ``LOW_REMAINING``
  are left, so that the rest lasts until the reset; none is left, they wait for the reset.
* **jobs** (``admission``): a job of an installation starts only while fewer than
  ``JOBS_AT_ONCE`` of its jobs run in this process and its booked writes reach less than
  ``HORIZON`` seconds ahead; else it goes back to the durable queue, due when its turn
  may come, its attempt not counted. So one installation's burst waits in the queue, not
  in the workers, and another installation's job finds a worker free. A job waiting for
  its slot lends its worker to another meanwhile (``perfbot.support.lending``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import zlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field, replace
from typing import Final, Protocol, TypeVar

import orjson
from prometheus_client import Gauge, Histogram

from perfbot.github.errors import GitHubUnavailable, RateLimited, WaitForTurn
from perfbot.store.base import PaceRecord
from perfbot.support.lending import lent
from perfbot.support.metrics import Metrics

T = TypeVar("T")
log = logging.getLogger("perfbot.github.pacing")

# The seconds between two writes of one key, and between two notifying ones (octokit's).
WRITE_INTERVAL: Final = 1.0
NOTIFY_FACTOR: Final = 3.0
# Booked slots are this much further apart than the interval: a write is sent a little
# after its slot (its process wakes, reads the block), and another replica's next one may
# be sent right on its own; the margin keeps them the interval apart where GitHub sees them.
SLOT_MARGIN: Final = 0.05
PER_MINUTE: Final = 80
PER_HOUR: Final = 500
MINUTE: Final = 60.0
HOUR: Final = 3600.0
# A job starts only while its installation's booked writes reach less than this far ahead.
HORIZON: Final = 10.0
# Jobs of one installation running at once in one process (each has a request or two in
# flight): the rest wait in the durable queue.
JOBS_AT_ONCE: Final = 3
# Rate-limit answers one write waits out in place before its job is retried instead.
MAX_HELD: Final = 3
# Below this many requests left in its window, an installation's reads are spaced out
# (what is left spread until the reset, at most this many seconds apart).
LOW_REMAINING: Final = 100
MAX_READ_SPACING: Final = 2.0
# Tries at booking a slot against other processes booking the same key at once.
BOOKING_TRIES: Final = 50
_STRIPES: Final = 64
# A booking starts from the record this process last read or wrote of its key, when that
# is this recent (far below the day after which the store purges an idle record, which
# could then be created again with the same version), instead of reading it first; of
# this many keys at most.
RECALL_SECONDS: Final = 600.0
RECALLED_KEYS: Final = 4096


class PaceBook(Protocol):
    """Where the records live: the store's ``Pacing`` role (or ``MemoryBook``)."""

    async def pace_record(self, key: str) -> PaceRecord | None: ...

    async def swap_pace(self, key: str, version: int | None, state: str, now: float) -> bool:
        """Replace ``key``'s record of ``version`` (None: create it) with ``state``, as
        version ``(version or 0) + 1``; False when its version is not ``version``."""
        ...


class MemoryBook:
    """A ``PaceBook`` of one process, for a path without a store (``perfbot comment``)."""

    def __init__(self) -> None:
        self._records: dict[str, PaceRecord] = {}

    async def pace_record(self, key: str) -> PaceRecord | None:
        return self._records.get(key)

    async def swap_pace(self, key: str, version: int | None, state: str, now: float) -> bool:
        current = self._records.get(key)
        if (current.version if current else None) != version:
            return False
        self._records[key] = PaceRecord((version or 0) + 1, state)
        return True


@dataclass(frozen=True, slots=True)
class PaceState:
    """A key's pace: no write before ``next_at``, no notifying one before ``notify_at``,
    none at all before ``blocked_until`` (GitHub said so); the slots of the last hour."""

    next_at: float = 0.0
    notify_at: float = 0.0
    blocked_until: float = 0.0
    recent: tuple[float, ...] = ()

    def slot(self, notify: bool, now: float, *, capped: bool = True) -> float:
        """The earliest slot a write may take (each slot is at or after the one before);
        ``capped``: GitHub's minute's and hour's caps hold too."""
        at = max(now, self.next_at, self.blocked_until)
        if notify:
            at = max(at, self.notify_at)
        if not capped:
            return at
        if len(self.recent) >= PER_MINUTE:
            at = max(at, self.recent[-PER_MINUTE] + MINUTE)
        if len(self.recent) >= PER_HOUR:
            at = max(at, self.recent[-PER_HOUR] + HOUR)
        return at

    def booked(self, at: float, notify: bool, interval: float) -> PaceState:
        """This state with the slot ``at`` taken."""
        recent = tuple(t for t in self.recent[-PER_HOUR:] if t > at - HOUR)
        margin = SLOT_MARGIN if interval > 0 else 0.0
        return PaceState(
            next_at=at + interval + margin,
            notify_at=at + interval * NOTIFY_FACTOR + margin if notify else self.notify_at,
            blocked_until=self.blocked_until,
            recent=(*recent, at),
        )

    def blocked(self, until: float) -> PaceState:
        return replace(
            self,
            blocked_until=max(self.blocked_until, until),
            next_at=max(self.next_at, until),
        )

    # orjson, not json: a key's record is read and written at every write it makes.
    def dump(self) -> str:
        return orjson.dumps(
            [self.next_at, self.notify_at, self.blocked_until, [round(t, 3) for t in self.recent]]
        ).decode()

    @classmethod
    def load(cls, text: str) -> PaceState:
        next_at, notify_at, blocked_until, recent = orjson.loads(text)
        return cls(float(next_at), float(notify_at), float(blocked_until), tuple(recent))


@dataclass(slots=True)
class _Window:
    """What this process last heard of a key's rate limit, and when it may read next."""

    remaining: int | None = None
    reset_at: float = 0.0
    blocked_until: float = 0.0
    last_read: float = float("-inf")


@dataclass(slots=True)
class _Turn:
    """A key's writes in this process: one on the wire at a time, and when the last was
    answered (a notifying one too)."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    answered: float = float("-inf")
    notified: float = float("-inf")
    users: int = 0


@dataclass(slots=True)
class _Lowest:
    """The lowest ``remaining`` of any key whose window has not reset (for the metric)."""

    key: str = ""
    remaining: int | None = None
    reset_at: float = 0.0


class Pacer:
    """The pace of every key's GitHub requests in this process (see the module docstring).

    ``interval`` is the seconds between two writes of a key (``PERFBOT_WRITE_PACE_SECONDS``;
    0 only against a server without secondary limits: then neither the interval nor the
    minute's and the hour's caps hold, only GitHub's own ``Retry-After`` and resets, and
    jobs are not held back).
    """

    def __init__(
        self,
        book: PaceBook,
        *,
        interval: float = WRITE_INTERVAL,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        metrics: Metrics | None = None,
    ) -> None:
        self._book = book
        self.interval = interval
        self._clock = clock
        self._sleep = sleep
        self._metrics = metrics
        self._stripes = [asyncio.Lock() for _ in range(_STRIPES)]
        self._windows: dict[str, _Window] = {}
        self._lowest = _Lowest()
        self._running: dict[str, int] = {}
        self._turns: dict[str, _Turn] = {}
        # The record of each key this process last wrote, and when (``_record``).
        self._known: OrderedDict[str, tuple[float, PaceRecord]] = OrderedDict()
        self._waits: dict[str, tuple[Gauge, Histogram]] = {}

    # -- writes ------------------------------------------------------------------------------

    async def write(self, key: str, notify: bool, send: Callable[[], Awaitable[T]]) -> T:
        """``send`` (a write) in its slot; sent again after a rate limit it met."""
        held = 0
        for _ in range(2 * MAX_HELD + 2):
            at = await self._book_slot(key, notify)
            if await self._wait(key, at, "notify" if notify else "write"):
                # Booked before a block another write met meanwhile: book again after it.
                state = await self._state(key)
                if state.blocked_until > self._clock():
                    continue
            try:
                async with self._turn(key, notify):
                    return await self._observed(key, send)
            except RateLimited as exc:
                held += 1
                log.warning("%s: a write met GitHub's rate limit: %s", key, exc)
                await self.block(key, self._until(exc))
                if held >= MAX_HELD:
                    raise
        raise RateLimited(f"{key}: writes held back by GitHub's rate limit", HORIZON)

    async def block(self, key: str, until: float) -> None:
        """No request of ``key`` before ``until`` (GitHub's ``Retry-After`` or reset)."""
        window = self._window(key)
        window.blocked_until = max(window.blocked_until, until)
        async with self._stripe(key):
            for attempt in range(BOOKING_TRIES):
                record = await self._record(key, recalled=attempt == 0)
                state = PaceState.load(record.state) if record else PaceState()
                version = record.version if record else None
                blocked = state.blocked(until).dump()
                if await self._swap(key, version, blocked, self._clock()):
                    return
        raise GitHubUnavailable(f"{key}: GitHub's block could not be recorded")

    def _until(self, exc: RateLimited) -> float:
        """When GitHub lets ``key`` write again: its window's reset when it named one (on
        this pacer's clock, not the adapter's), else ``Retry-After`` from now."""
        now = self._clock()
        if exc.reset is not None and exc.reset > now:
            return min(exc.reset, now + HOUR)
        return now + exc.retry_after

    async def backlog(self, key: str) -> float:
        """How many seconds ahead ``key``'s booked writes (or GitHub's block) reach."""
        state = await self._state(key)
        return max(0.0, max(state.next_at, state.blocked_until) - self._clock())

    async def _state(self, key: str) -> PaceState:
        record = await self._record(key, recalled=False)
        return PaceState.load(record.state) if record else PaceState()

    async def _record(self, key: str, *, recalled: bool) -> PaceRecord | None:
        """``key``'s record: ``recalled``, the one this process last wrote when it is
        recent (a swap from it fails if another process changed it since), else the book's.

        Only a write is remembered, never a read: the book purges a record idle for a day,
        and another process may then create it again at version 1; a record this process
        wrote within ``RECALL_SECONDS`` cannot have been purged, so a swap from it cannot
        succeed against a newer record that happens to carry the same version."""
        if recalled:
            known = self._known.get(key)
            if known is not None and known[0] > self._clock() - RECALL_SECONDS:
                return known[1]
        return await self._book.pace_record(key)

    async def _swap(self, key: str, version: int | None, state: str, now: float) -> bool:
        if await self._book.swap_pace(key, version, state, now):
            self._remember(key, PaceRecord((version or 0) + 1, state))
            return True
        self._remember(key, None)
        return False

    def _remember(self, key: str, record: PaceRecord | None) -> None:
        known = self._known
        if record is None:
            known.pop(key, None)
            return
        known[key] = (self._clock(), record)
        known.move_to_end(key)
        if len(known) > RECALLED_KEYS:
            known.popitem(last=False)

    async def _book_slot(self, key: str, notify: bool) -> float:
        # One booking at a time per stripe in this process: only other processes race.
        async with self._stripe(key):
            for attempt in range(BOOKING_TRIES):
                now = self._clock()
                record = await self._record(key, recalled=attempt == 0)
                state = PaceState.load(record.state) if record else PaceState()
                at = state.slot(notify, now, capped=self.interval > 0)
                taken = state.booked(at, notify, self.interval).dump()
                if await self._swap(key, record.version if record else None, taken, now):
                    return at
        raise GitHubUnavailable(f"{key}: no write slot could be booked (contention)")

    async def _wait(self, key: str, at: float, kind: str, *, lend: bool = True) -> bool:
        """Wait for the slot ``at``; whether there was anything to wait for. ``lend``: the
        job's worker slot serves another job meanwhile (never while a lock is held that
        such a job may wait for, holding the slot the waiter needs back)."""
        delay = at - self._clock()
        if delay <= 0:
            return False
        waits = self._wait_metrics(kind)
        if waits is not None:
            waits[0].inc()
        try:
            # The job's worker slot serves another job meanwhile (``perfbot.support.lending``).
            async with lent(delay) if lend else contextlib.nullcontext():
                await self._sleep(delay)
        finally:
            if waits is not None:
                waits[0].dec()
                waits[1].observe(delay)
        return True

    def _wait_metrics(self, kind: str) -> tuple[Gauge, Histogram] | None:
        """The waiting gauge and the wait histogram of ``kind``, looked up once."""
        metrics, waits = self._metrics, self._waits
        if metrics is not None and kind not in waits:
            waits[kind] = (metrics.github_waiting.labels(kind), metrics.github_wait.labels(kind))
        return waits.get(kind)

    @asynccontextmanager
    async def _turn(self, key: str, notify: bool) -> AsyncIterator[None]:
        """One write of ``key`` on the wire at a time in this process, each sent at least
        ``interval`` after the one before was answered: the slots space the writes as
        booked, this spaces them as they reach GitHub (a write sent late is not followed
        closely by the next one's slot)."""
        turn = self._turns.get(key)
        if turn is None:
            turn = self._turns[key] = _Turn()
        turn.users += 1
        try:
            async with turn.lock:
                start = turn.answered + self.interval
                if notify:
                    start = max(start, turn.notified + self.interval * NOTIFY_FACTOR)
                # Not lent: the key's other jobs wait for this lock holding their slots,
                # and with every slot so held this one could never take its own back.
                await self._wait(key, start, "notify" if notify else "write", lend=False)
                try:
                    yield
                finally:
                    turn.answered = self._clock()
                    if notify:
                        turn.notified = turn.answered
        finally:
            turn.users -= 1
            if not turn.users and turn.answered + HOUR < self._clock():
                del self._turns[key]

    def _stripe(self, key: str) -> asyncio.Lock:
        return self._stripes[zlib.crc32(key.encode()) % _STRIPES]

    # -- reads -------------------------------------------------------------------------------

    async def read(self, key: str, send: Callable[[], Awaitable[T]]) -> T:
        """``send`` (a read), spaced out when ``key``'s rate limit runs low."""
        delay = self._read_delay(key)
        if delay > HORIZON:
            raise WaitForTurn(f"{key}: GitHub's rate limit is spent until its reset", delay)
        if delay > 0:
            await self._wait(key, self._clock() + delay, "read")
        try:
            return await self._observed(key, send)
        except RateLimited as exc:
            await self.block(key, self._until(exc))
            raise
        finally:
            window = self._windows.get(key)
            if window is not None:
                window.last_read = max(window.last_read, self._clock())

    def _read_delay(self, key: str) -> float:
        window = self._windows.get(key)
        if window is None:
            return 0.0
        now = self._clock()
        if window.blocked_until > now:
            return window.blocked_until - now
        if window.remaining is None or window.reset_at <= now:
            return 0.0
        if window.remaining <= 0:
            return window.reset_at - now
        at = now
        if window.remaining < LOW_REMAINING:
            # What is left, spread evenly until the reset (a read waits in its job, briefly).
            spacing = min((window.reset_at - now) / window.remaining, MAX_READ_SPACING)
            at = max(now, window.last_read + spacing)
        # Kept as a read in flight: the next one counts from it (and from its answer).
        window.last_read = at
        return at - now

    async def _observed(self, key: str, send: Callable[[], Awaitable[T]]) -> T:
        result = await send()
        headers = getattr(result, "headers", None)
        if isinstance(headers, Mapping):
            self.observe(key, headers)
        return result

    def observe(self, key: str, headers: Mapping[str, str]) -> None:
        """Keep what an answer's headers say of ``key``'s rate limit (its core window)."""
        remaining, reset = headers.get("x-ratelimit-remaining"), headers.get("x-ratelimit-reset")
        if (
            remaining is None
            or reset is None
            or headers.get("x-ratelimit-resource", "core") != ("core")
        ):
            return
        try:
            left, reset_at = int(remaining), float(reset)
        except ValueError:
            return
        window = self._window(key)
        window.remaining, window.reset_at = left, reset_at
        self._report_lowest(key, left, reset_at)

    def _report_lowest(self, key: str, remaining: int, reset_at: float) -> None:
        lowest = self._lowest
        stale = lowest.remaining is None or lowest.reset_at <= self._clock()
        if stale or key == lowest.key or remaining < (lowest.remaining or 0):
            lowest.key, lowest.remaining, lowest.reset_at = key, remaining, reset_at
            if self._metrics is not None:
                self._metrics.github_remaining.set(remaining)

    def _window(self, key: str) -> _Window:
        window = self._windows.get(key)
        if window is None:
            window = self._windows[key] = _Window()
        return window

    # -- jobs --------------------------------------------------------------------------------

    async def admission(self, key: str) -> float | None:
        """None when a job of ``key`` may start now; else the seconds it should wait (in the
        queue) before it asks again."""
        if self.interval <= 0:
            return None
        backlog = await self.backlog(key)
        if self._running.get(key, 0) >= JOBS_AT_ONCE:
            return max(self.interval, backlog)
        if backlog > HORIZON:
            return backlog - HORIZON / 2
        return None

    @contextmanager
    def running(self, key: str) -> Iterator[None]:
        """Counts a job of ``key`` running in this process while inside."""
        self._running[key] = self._running.get(key, 0) + 1
        try:
            yield
        finally:
            left = self._running[key] - 1
            if left:
                self._running[key] = left
            else:
                del self._running[key]


def installation_key(installation_id: int) -> str:
    return f"installation:{installation_id}"


APP_KEY: Final = "app"
