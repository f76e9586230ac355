"""What every handler gets: the installation's GitHub calls, the store, the clock, a logger."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from perfbot.app.configcache import ConfigCache
from perfbot.app.jobs import operator_refusal
from perfbot.errors import PerfbotError
from perfbot.github.installation import Installation
from perfbot.github.types import PullInfo
from perfbot.store.base import Store
from perfbot.support.keepalive import Lost, kept

# A PR's lock is refreshed while held, so it can be short: when its process dies, the
# PR waits at most this long for the next job.
LOCK_TTL_SECONDS = 15.0
LOCK_REFRESH_SECONDS = LOCK_TTL_SECONDS / 5
LOCK_WAIT_SECONDS = 20.0


class PullLocked(PerfbotError):
    """Another job holds the pull request's lock for too long, or this one lost it: the job
    is run again later (lock contention, not a GitHub outage)."""

    retryable = True


@dataclass(frozen=True, slots=True)
class JobContext:
    delivery_id: str
    installation: Installation
    store: Store
    app_id: int | None  # None: perfbot comment, running with a workflow's token
    # Asked of GitHub (once per process) only by jobs that write a comment.
    bot_login: Callable[[], Awaitable[str]]
    configs: ConfigCache
    repo_disabled: Callable[[str], bool]
    now: Callable[[], float]
    worker: str
    log: logging.LoggerAdapter[logging.Logger]

    @property
    def installation_id(self) -> int | None:
        return self.installation.id

    def ended(self, reason: str) -> str:
        """Log how the job ended and return it, for the handler to return."""
        self.log.info("%s", reason)
        return reason

    async def write_refused(
        self, owner: str, name: str, pull: PullInfo | None = None
    ) -> str | None:
        """Why perfbot must not write to ``owner/name`` now, or None when it may.

        Asked just before every write, not only at the start of the job: the owner may
        have suspended or uninstalled perfbot, or the repository opted out, while the job
        downloaded a report. It costs no REST call: the suspension is in the store, the
        configuration in the cache. ``pull``: the PR to write on, for its mute label.
        """
        full_name = f"{owner}/{name}"
        installation_id = self.installation_id
        if installation_id is not None and await self.store.is_suspended(installation_id):
            return f"installation {installation_id} is suspended or uninstalled"
        refused = operator_refusal(self.repo_disabled, full_name)
        if refused is not None:
            return refused
        config = await self.configs.get(self.installation, owner, name)
        if config.excluded_by_org:
            return f"{owner}/.github excludes {name}"
        if not config.config.enabled:
            return f"perfbot is disabled for {full_name} by its configuration"
        if pull is not None and config.config.mutes(pull.labels):
            return f"PR {pull.number} carries the mute label"
        return None

    @asynccontextmanager
    async def pull_lock(self, repo_id: int, number: int) -> AsyncIterator[None]:
        """Serialise everything that reads and writes one PR's comment and state.

        The lock is refreshed while held. Should it be lost (refreshes failing for most of
        its lifetime, or another job holding it), the block is cancelled and ``PullLocked`` is
        raised: the job goes back to the queue rather than write beside another one.
        """
        key = f"pull:{repo_id}:{number}"
        # ``worker`` names this claim of the job, so a stale run never shares the lock.
        owner = f"{self.worker}:{self.delivery_id}"
        waited = 0.0
        while not await self.store.try_lock(key, owner, LOCK_TTL_SECONDS, self.now()):
            if waited >= LOCK_WAIT_SECONDS:
                raise PullLocked(f"pull request {number} is being updated by another job")
            await asyncio.sleep(0.05)
            waited += 0.05
        lock = kept(
            lambda: self.store.try_lock(key, owner, LOCK_TTL_SECONDS, self.now()),
            every=LOCK_REFRESH_SECONDS,
            grace=LOCK_TTL_SECONDS - 2 * LOCK_REFRESH_SECONDS,
            clock=self.now,
            what=f"the lock of {key}",
            log=self.log,
        )
        try:
            async with lock:
                yield
        except Lost:
            raise PullLocked(f"lost the lock of pull request {number} while updating it") from None
        finally:
            await self.store.unlock(key, owner)
