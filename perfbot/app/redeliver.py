"""Missed deliveries: ask GitHub which webhook deliveries never reached perfbot, and
have each of them sent again, once.

GitHub does not retry a delivery that failed (perfbot was down, restarting, or
unreachable, or a request timed out during a deploy); it only keeps a log of the
attempts for three days. A sweep reads that log with the App's JWT and asks for a
redelivery of every event that

* has no successful attempt (status ``OK`` and a 2xx code) — an event that later
  succeeded, or that a person redelivered by hand, is left alone;
* perfbot never recorded (``Store.delivery_seen``) — a delivery perfbot stored but
  answered too late still shows as failed in GitHub's log;
* was never redelivered by perfbot before (``Store.claim_redelivery``) — at most once
  per event, ever, so that a delivery perfbot keeps refusing (a wrong secret) is not
  sent again at every sweep.

The claim is taken before GitHub is asked: a process that dies between the two, or a
request GitHub refuses, costs that one redelivery (the log names it, and the App's
settings page can still redeliver it by hand) but never causes a second one. One
replica sweeps at a time (a store lock); a sweep that fails is logged and the next
one comes at its usual time. The lock is short-lived and kept alive while the sweep
runs, and its owner is announced like a worker's (``Store.announce``): the lock of a
process killed mid-sweep is freed as soon as another process on a SQLite file sees it
gone, and otherwise expires within ``LOCK_SECONDS``, never holding the sweeps back long.

Sweeps are frequent (every few minutes) and cheap: the store keeps a record of the
newest sweep any process started, and a cursor, the time of the newest attempt the last
complete sweep read. A sweep reads the log (newest first) only down to that cursor, less
a small overlap, so a quiet sweep is one request; only the first sweep of a database
reads the whole three days. The record also spaces the sweeps of all processes and
replicas: a process starting right after another one swept (a restart, a crash loop,
a second replica) waits for the period to pass instead of sweeping at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from perfbot.github.app import GitHubApp
from perfbot.github.errors import GitHubError, RateLimited
from perfbot.github.types import HookDelivery
from perfbot.store.base import Store
from perfbot.support.keepalive import Lost, kept
from perfbot.support.metrics import Metrics

log = logging.getLogger("perfbot.redeliver")

# GitHub keeps an App's delivery log for three days: nothing older can be redelivered.
LOOKBACK_SECONDS = 3 * 24 * 3600.0
# The first sweep after start-up: soon, so that what failed while perfbot was down is
# sent again within seconds; not at once, so that a process that crashes right after
# starting never sweeps. One that lives a little longer is held back by the store's
# record of its last sweep (``next_delay``): crash loops sweep once a period.
FIRST_SWEEP_DELAY_SECONDS = 10.0
# A sweep reads the log down to the newest attempt the last complete sweep read, less this
# much: an attempt GitHub logs a little late (its delivered_at is when it started, and a
# delivery may take 10 s to time out) is still seen.
OVERLAP_SECONDS = 120.0
LOCK_KEY = "redelivery-sweep"
# The lock's life unless refreshed: a process that dies mid-sweep holds the sweeps of the
# others back this long at most (less on SQLite, where its departure is seen). A sweep
# refreshes it every LOCK_REFRESH_SECONDS while it runs, and before every redelivery.
LOCK_SECONDS = 60.0
LOCK_REFRESH_SECONDS = 15.0
# Between two redelivery requests: GitHub's guidance for writes by an integration.
REDELIVERY_PAUSE_SECONDS = 1.0
# 300 pages of 100 attempts; a busier App loses only its oldest attempts to the limit.
MAX_PAGES = 300

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class SweepResult:
    """What one sweep did: ``ran`` is False when another replica held the sweep's lock.

    ``complete``: every attempt read was dealt with (its cursor was kept for the next sweep).
    """

    ran: bool
    attempts_read: int = 0
    redelivered: list[str] = field(default_factory=list)  # guids, in the order asked
    complete: bool = False


def missed(attempts: list[HookDelivery]) -> list[HookDelivery]:
    """Per event (guid) with no successful attempt, its newest attempt; oldest event first."""
    succeeded = {a.guid for a in attempts if a.ok}
    newest: dict[str, HookDelivery] = {}
    for attempt in attempts:
        if attempt.guid in succeeded:
            continue
        known = newest.get(attempt.guid)
        if known is None or (attempt.delivered_at, attempt.id) > (known.delivered_at, known.id):
            newest[attempt.guid] = attempt
    return sorted(newest.values(), key=lambda a: (a.delivered_at, a.id))


def read_since(now: float, cursor: float | None) -> float:
    """The oldest attempt time a sweep at ``now`` reads: three days back at most, and
    without a cursor (the first sweep of a database); else just before the cursor."""
    oldest = now - LOOKBACK_SECONDS
    return oldest if cursor is None else max(oldest, cursor - OVERLAP_SECONDS)


def next_delay(now: float, last_started: float | None, *, interval: float, soonest: float) -> float:
    """Seconds to wait before the next sweep: at least ``soonest``, and until ``interval``
    has passed since the newest sweep any process started (``last_started``).

    A ``last_started`` in the future (another host's clock runs ahead) delays by at most
    one period.
    """
    wait = soonest if last_started is None else max(soonest, last_started + interval - now)
    return min(wait, max(soonest, interval))


async def sweep(
    github: GitHubApp,
    store: Store,
    *,
    owner: str,
    clock: Callable[[], float] = time.time,
    metrics: Metrics | None = None,
    pause: float | None = None,
    sleep: Sleep = asyncio.sleep,
) -> SweepResult:
    """Redeliver the events since the last complete sweep (at most three days back) that
    never reached perfbot.

    Raises GitHubError when GitHub cannot be read or refuses a redelivery for a reason
    that may pass (5xx, rate limit): the rest waits for the next sweep, which reads from
    the same cursor again.
    """
    started = clock()
    if not await store.try_lock(LOCK_KEY, owner, LOCK_SECONDS, started):
        log.info("redelivery sweep skipped: another process is sweeping")
        return SweepResult(ran=False)
    attempts: list[HookDelivery] = []
    redelivered: list[str] = []  # guids, kept here so that a lost lock still reports them
    lock = kept(
        lambda: store.try_lock(LOCK_KEY, owner, LOCK_SECONDS, clock()),
        every=LOCK_REFRESH_SECONDS,
        # A refresh that fails is tried again while the lock is surely still ours.
        grace=LOCK_SECONDS - 2 * LOCK_REFRESH_SECONDS,
        clock=clock,
        what="the redelivery sweep's lock",
        log=log,
    )
    try:
        async with lock:
            attempts, complete = await _sweep_locked(
                github,
                store,
                owner=owner,
                started=started,
                clock=clock,
                metrics=metrics,
                pause=pause,
                sleep=sleep,
                redelivered=redelivered,
            )
    except Lost:
        log.warning("redelivery sweep stopped: its lock was lost (another process may sweep)")
        complete = False
    finally:
        with contextlib.suppress(Exception):
            await store.unlock(LOCK_KEY, owner)
    log.info(
        "redelivery sweep: %d attempts read, %d deliveries redelivered",
        len(attempts),
        len(redelivered),
    )
    return SweepResult(
        ran=True, attempts_read=len(attempts), redelivered=redelivered, complete=complete
    )


async def _sweep_locked(
    github: GitHubApp,
    store: Store,
    *,
    owner: str,
    started: float,
    clock: Callable[[], float],
    metrics: Metrics | None,
    pause: float | None,
    sleep: Sleep,
    redelivered: list[str],
) -> tuple[list[HookDelivery], bool]:
    """The sweep under its lock: the attempts read, and whether all were dealt with."""
    record = await store.last_sweep()
    # Recorded before GitHub is asked, so that a process that crashes in a sweep still
    # holds back the next start's (crash loops); read under the lock, so the cursor is
    # that of the newest complete sweep.
    await store.sweep_started(started)
    since = read_since(started, None if record is None else record.cursor)
    attempts = await github.list_hook_deliveries(since, MAX_PAGES)
    complete = True
    for attempt in missed(attempts):
        if await store.delivery_seen(attempt.guid):
            continue
        if not await store.try_lock(LOCK_KEY, owner, LOCK_SECONDS, clock()):
            log.warning("redelivery sweep stopped: its lock expired and was taken over")
            complete = False
            break
        if not await store.claim_redelivery(attempt.guid, clock()):
            continue  # redelivered once already (by this or another process)
        if redelivered and (pause := REDELIVERY_PAUSE_SECONDS if pause is None else pause):
            # GitHub asks integrations to space out their writes (secondary rate limits).
            await sleep(pause)
        await _redeliver(github, store, attempt)
        if github.dry_run is not None:
            # Held back, not asked for: the claim is handed back and the cursor stays, so
            # the sweep after --dry-run is turned off still finds the delivery missed.
            await store.release_redelivery(attempt.guid)
            complete = False
        redelivered.append(attempt.guid)
        if metrics is not None:
            metrics.redeliveries.labels(attempt.event).inc()
    if complete and attempts:
        await store.sweep_finished(max(a.delivered_at for a in attempts))
    return attempts, complete


async def _redeliver(github: GitHubApp, store: Store, attempt: HookDelivery) -> None:
    extra = {"delivery": attempt.guid, "event": attempt.event}
    try:
        await github.redeliver(attempt.id)
    except RateLimited:
        # GitHub turned the request down without acting on it: the next sweep may ask.
        await store.release_redelivery(attempt.guid)
        log.warning(
            "redelivery of %s attempt %s was rate-limited; the next sweep asks again",
            attempt.event,
            attempt.id,
            extra=extra,
        )
        raise
    except GitHubError as exc:
        # Claimed already: this event will not be asked for again.
        log.error(
            "redelivery of %s attempt %s failed and will not be asked again (the App's "
            "settings page can still redeliver it): %s",
            attempt.event,
            attempt.id,
            exc,
            extra=extra,
        )
        if exc.retryable:
            raise  # GitHub is unwell: leave the rest for the next sweep
        return
    log.info("asked GitHub to redeliver %s attempt %s", attempt.event, attempt.id, extra=extra)


class Redeliverer:
    """Sweeps about ``first_delay`` seconds after ``start()``, then every ``interval``
    seconds, counting the sweeps of every process sharing the store (``next_delay``).

    ``clock`` and ``sleep`` are the loop's time: tests pass their own.
    """

    def __init__(
        self,
        github: GitHubApp,
        store: Store,
        *,
        interval: float,
        first_delay: float = FIRST_SWEEP_DELAY_SECONDS,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._github = github
        self._store = store
        self._interval = interval
        self._first_delay = first_delay
        self._metrics = metrics
        self._clock = clock
        self._sleep = sleep
        self._task: asyncio.Task[None] | None = None
        # Unique per sweeper, ever (a random part: a restarted process may get the same
        # PID). Announced as the prefix of the lock's owner, so that a process that dies
        # mid-sweep has its lock freed with its workers' claims (``release_departed``).
        self.name = f"{socket.gethostname()}:{os.getpid()}:redeliver:{secrets.token_hex(4)}"
        self.owner = f"{self.name}:sweep"

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        """Cancel the loop, a sweep in progress included (its lock is released)."""
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def _loop(self) -> None:
        try:
            await self._store.announce(f"{self.name}:")
        except Exception:
            log.exception("announcing the sweeper failed: its lock is left to expire")
        delay = await self._delay(self._first_delay)
        if delay > self._first_delay:
            log.info("first redelivery sweep in %.0f s: another one started recently", delay)
        while True:
            await self._sleep(delay)
            try:
                await sweep(
                    self._github,
                    self._store,
                    owner=self.owner,
                    clock=self._clock,
                    metrics=self._metrics,
                    sleep=self._sleep,
                )
            except GitHubError as exc:
                log.error("redelivery sweep failed, next in about %.0f s: %s", self._interval, exc)
            except Exception:
                # Never let the sweep take the service down: the next period tries again.
                log.exception(
                    "redelivery sweep failed unexpectedly, next in about %.0f s", self._interval
                )
            # Never sooner than a tenth of the period: a sweep that found the lock taken by
            # a replica that has not recorded its sweep yet must not spin.
            delay = await self._delay(self._interval / 10)

    async def _delay(self, soonest: float) -> float:
        try:
            record = await self._store.last_sweep()
        except Exception:
            # The store is unwell (the sweep will fail too): keep to this process's period.
            log.exception("the record of the last redelivery sweep could not be read")
            return max(soonest, self._interval)
        last = None if record is None else record.started_at
        return next_delay(self._clock(), last, interval=self._interval, soonest=soonest)
