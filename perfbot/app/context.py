"""What every handler gets: the installation's GitHub calls, the store, the clock, a logger.

A plain value with no I/O of its own (the GitHub calls and the store are protocols), so
any module of the App may import it; the PR lock that needs the event loop is
``perfbot.app.pulllock``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from time import monotonic
from typing import Final, Protocol

from perfbot.app.jobs import operator_refusal
from perfbot.app.repoconfig import ConfigResult, config_refusal
from perfbot.github.calls import GitHubCalls
from perfbot.github.types import PullInfo
from perfbot.store.base import Store

# How long the store's "not suspended" stands, when nothing waited since (``suspended``):
# far below the seconds GitHub takes to deliver the suspension's webhook.
SUSPENSION_FRESH_SECONDS: Final = 0.1


class FileSource(Protocol):
    async def get_file(self, owner: str, repo: str, path: str) -> str | None: ...


class Configs(Protocol):
    """Where a repository's configuration comes from (``perfbot.app.configcache``)."""

    async def get(self, source: FileSource, owner: str, repo: str) -> ConfigResult: ...


@dataclass(frozen=True, slots=True)
class JobContext:
    delivery_id: str
    installation: GitHubCalls
    store: Store
    app_id: int  # the App's: only the App runs jobs (``perfbot comment`` needs no context)
    # Asked of GitHub (once per process) only by jobs that write a comment.
    bot_login: Callable[[], Awaitable[str]]
    configs: Configs
    repo_disabled: Callable[[str], bool]
    now: Callable[[], float]
    worker: str  # this claim of the job: a stale run never shares a lock
    log: logging.LoggerAdapter[logging.Logger]
    # The operator's default for the default branch's watch (``PERFBOT_WATCH``).
    watch_by_default: bool = True
    # ``installation.calls_started`` and the monotonic time when the store last said the
    # installation is not suspended (empty: not asked since a wait); see ``suspended``.
    not_suspended_at: list[tuple[int, float]] = field(
        default_factory=list, compare=False, repr=False
    )

    @property
    def installation_id(self) -> int | None:
        return self.installation.id

    def ended(self, reason: str) -> str:
        """Log how the job ended and return it, for the handler to return."""
        self.log.info("%s", reason)
        return reason

    async def config(self, owner: str, name: str) -> ConfigResult:
        """The repository's configuration (cached: no REST call within its lifetime)."""
        return await self.configs.get(self.installation, owner, name)

    async def suspended(self) -> bool:
        """Whether the installation is suspended or uninstalled, as the store says.

        The store's "not suspended" is taken again only within ``SUSPENSION_FRESH_SECONDS``
        and with no GitHub call begun since: checks a few statements apart (the worker's
        and the first gate's, the record of the measurements and the comment's) then cost
        one read. Whatever waits (a GitHub call, a PR's lock: ``forget_suspension``, the
        store's own lock) is followed by a fresh read, during which an owner may have
        suspended perfbot. "Suspended" is never taken from memory."""
        installation_id = self.installation_id
        if installation_id is None:
            return False
        calls, asked_at = self.installation.calls_started, monotonic()
        if self.not_suspended_at:
            seen_calls, seen_at = self.not_suspended_at[0]
            if seen_calls == calls and 0 <= asked_at - seen_at <= SUSPENSION_FRESH_SECONDS:
                return False
        if await self.store.is_suspended(installation_id):
            return True
        self.not_suspended_at[:] = [(calls, asked_at)]
        return False

    def forget_suspension(self) -> None:
        """The job waited (for a PR's lock, say): the next check reads the store."""
        self.not_suspended_at.clear()

    async def write_refused(
        self, owner: str, name: str, pull: PullInfo | None = None
    ) -> str | None:
        """Why perfbot must not write to ``owner/name`` now, or None when it may.

        Asked just before every write, not only at the start of the job: the owner may
        have suspended or uninstalled perfbot, or the repository opted out, while the job
        downloaded a report. It costs no REST call: the suspension is in the store, the
        configuration in the cache. ``pull``: the PR to write on, for its mute label.
        """
        installation_id = self.installation_id
        if await self.suspended():
            return f"installation {installation_id} is suspended or uninstalled"
        refused = operator_refusal(self.repo_disabled, f"{owner}/{name}")
        if refused is not None:
            return refused
        return config_refusal(await self.config(owner, name), owner, name, pull)
