"""Missed deliveries: ask GitHub which webhook deliveries never reached perfbot, and
have each of them sent again, once.

GitHub does not retry a delivery that failed (perfbot was down, restarting, or
unreachable); it only keeps a log of the attempts for three days. A sweep reads that
log with the App's JWT and asks for a redelivery of every event that

* has no successful attempt (status ``OK`` and a 2xx code) — an event that later
  succeeded, or that a person redelivered by hand, is left alone;
* perfbot never recorded (``Store.delivery_seen``) — a delivery perfbot stored but
  answered too late still shows as failed in GitHub's log;
* was never redelivered by perfbot before (``Store.claim_redelivery``) — at most once
  per event, ever, so that a delivery perfbot keeps refusing (a wrong secret) is not
  sent again every few hours.

The claim is taken before GitHub is asked: a process that dies between the two, or a
request GitHub refuses, costs that one redelivery (the log names it, and the App's
settings page can still redeliver it by hand) but never causes a second one. One
replica sweeps at a time (a store lock); a sweep that fails is logged and the next
one comes at its usual time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from perfbot.github import GitHubApp, GitHubError, HookDelivery, RateLimited
from perfbot.metrics import Metrics
from perfbot.store.base import Store

log = logging.getLogger("perfbot.redeliver")

# GitHub keeps an App's delivery log for three days: nothing older can be redelivered.
LOOKBACK_SECONDS = 3 * 24 * 3600.0
# The first sweep waits this long after start-up, so that a process that crashes at once
# (a crash loop) does not list the log at every start.
FIRST_SWEEP_DELAY_SECONDS = 60.0
LOCK_KEY = "redelivery-sweep"
# Longer than any sweep should take; refreshed before every redelivery.
LOCK_SECONDS = 600.0
# Between two redelivery requests: GitHub's guidance for writes by an integration.
REDELIVERY_PAUSE_SECONDS = 1.0
# 300 pages of 100 attempts; a busier App loses only its oldest attempts to the limit.
MAX_PAGES = 300


@dataclass(frozen=True, slots=True)
class SweepResult:
    """What one sweep did: ``ran`` is False when another replica held the sweep's lock."""

    ran: bool
    attempts_read: int = 0
    redelivered: list[str] = field(default_factory=list)  # guids, in the order asked


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


async def sweep(
    github: GitHubApp,
    store: Store,
    *,
    owner: str,
    clock: Callable[[], float] = time.time,
    metrics: Metrics | None = None,
    pause: float | None = None,
) -> SweepResult:
    """Redeliver the events of the last three days that never reached perfbot.

    Raises GitHubError when GitHub cannot be read or refuses a redelivery for a reason
    that may pass (5xx, rate limit): the rest waits for the next sweep.
    """
    if not await store.try_lock(LOCK_KEY, owner, LOCK_SECONDS, clock()):
        log.info("redelivery sweep skipped: another process is sweeping")
        return SweepResult(ran=False)
    try:
        attempts = await github.list_hook_deliveries(clock() - LOOKBACK_SECONDS, MAX_PAGES)
        redelivered: list[str] = []
        for attempt in missed(attempts):
            if await store.delivery_seen(attempt.guid):
                continue
            if not await store.try_lock(LOCK_KEY, owner, LOCK_SECONDS, clock()):
                log.warning("redelivery sweep stopped: its lock expired and was taken over")
                break
            if not await store.claim_redelivery(attempt.guid, clock()):
                continue  # redelivered once already (by this or another process)
            if redelivered and (pause := REDELIVERY_PAUSE_SECONDS if pause is None else pause):
                # GitHub asks integrations to space out their writes (secondary rate limits).
                await asyncio.sleep(pause)
            await _redeliver(github, store, attempt)
            redelivered.append(attempt.guid)
            if metrics is not None:
                metrics.redeliveries.labels(attempt.event).inc()
        log.info(
            "redelivery sweep: %d attempts read, %d deliveries redelivered",
            len(attempts),
            len(redelivered),
        )
        return SweepResult(ran=True, attempts_read=len(attempts), redelivered=redelivered)
    finally:
        with contextlib.suppress(Exception):
            await store.unlock(LOCK_KEY, owner)


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
    """Sweeps ``first_delay`` seconds after ``start()``, then every ``interval`` seconds."""

    def __init__(
        self,
        github: GitHubApp,
        store: Store,
        *,
        interval: float,
        first_delay: float = FIRST_SWEEP_DELAY_SECONDS,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._github = github
        self._store = store
        self._interval = interval
        self._first_delay = first_delay
        self._metrics = metrics
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        # The lock's owner: unique per process and per sweeper.
        self.name = f"{socket.gethostname()}:{os.getpid()}:redeliver:{id(self):x}"

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
        delay = self._first_delay
        while True:
            await asyncio.sleep(delay)
            delay = self._interval
            try:
                await sweep(
                    self._github,
                    self._store,
                    owner=self.name,
                    clock=self._clock,
                    metrics=self._metrics,
                )
            except GitHubError as exc:
                log.error("redelivery sweep failed, next in %.0f s: %s", delay, exc)
            except Exception:
                # Never let the sweep take the service down: the next period tries again.
                log.exception("redelivery sweep failed unexpectedly, next in %.0f s", delay)
