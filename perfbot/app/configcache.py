"""Repository configuration read from GitHub, cached briefly per repository and per owner,
and shared through the store with the other processes and replicas."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Final, Protocol

from perfbot.app.configfile import resolve_config
from perfbot.app.repoconfig import ConfigResult
from perfbot.github.errors import GitHubError
from perfbot.store.base import ConfigFiles
from perfbot.support.shared import SharedCalls

log = logging.getLogger("perfbot.configcache")

CONFIG_PATH = ".github/perfbot.yml"
ORG_CONFIG_REPO = ".github"
DEFAULT_TTL_SECONDS = 60.0
# Configurations resolved (parsed, validated and merged) kept per process: far more than
# the repositories one process serves in a minute; past it, all are forgotten at once.
MAX_RESOLVED: Final = 1024


class FileSource(Protocol):
    async def get_file(self, owner: str, repo: str, path: str) -> str | None: ...


Resolved = tuple[str | None, str | None, str, str]


class ConfigCache:
    """``.github/perfbot.yml`` of the default branch merged over the owner's defaults.

    Files are cached for ``ttl`` seconds: a burst of runs costs one read, and a change
    to the configuration is seen within a minute. Jobs asking for a file that is being
    read wait for that read rather than starting their own: after a restart, every
    worker asks at once. With ``shared`` (the store), a read is shared with the other
    processes for the rest of its ``ttl`` (by the ``wall`` clock, which all of them
    share): a process that has no read of its own takes another's before asking GitHub.
    The same texts are resolved once per process.
    """

    def __init__(
        self,
        ttl: float = DEFAULT_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        *,
        shared: ConfigFiles | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._ttl = ttl
        self._clock = clock
        self._shared = shared
        self._wall = wall
        self._files: dict[tuple[str, str], tuple[float, str | None]] = {}
        self._reading: SharedCalls[tuple[str, str], str | None] = SharedCalls()
        self._resolved: dict[Resolved, ConfigResult] = {}

    async def get(self, source: FileSource, owner: str, repo: str) -> ConfigResult:
        org_text = await self._file(source, owner, ORG_CONFIG_REPO)
        # The owner's .github repository is configured by the owner's file itself.
        repo_text = None if repo == ORG_CONFIG_REPO else await self._file(source, owner, repo)
        key = (repo_text, org_text, repo, owner)
        result = self._resolved.get(key)
        if result is None:
            result = resolve_config(
                repo_text,
                org_text,
                repo,
                org_path=f"{owner}/{ORG_CONFIG_REPO}: {CONFIG_PATH}",
            )
            if len(self._resolved) >= MAX_RESOLVED:
                self._resolved.clear()
            self._resolved[key] = result
        return result

    async def _file(self, source: FileSource, owner: str, repo: str) -> str | None:
        key = (owner.lower(), repo.lower())
        cached = self._files.get(key)
        if cached is not None and cached[0] > self._clock():
            return cached[1]
        return await self._reading.call(key, partial(self._read, source, owner, repo, key))

    async def _read(
        self, source: FileSource, owner: str, repo: str, key: tuple[str, str]
    ) -> str | None:
        shared = await self._shared_read(owner, repo, key)
        if shared is not None:
            return shared[0]
        try:
            text = await source.get_file(owner, repo, CONFIG_PATH)
        except GitHubError as exc:
            if exc.retryable:
                raise
            # No access to the owner's .github repository (403) means no defaults there.
            text = None
        read_at = self._wall()
        self._files[key] = (self._clock() + self._ttl, text)
        await self._share(owner, repo, text, read_at)
        return text

    async def _shared_read(
        self, owner: str, repo: str, key: tuple[str, str]
    ) -> tuple[str | None] | None:
        """Another process's read of the file while it is still trusted (cached here for
        the rest of its time), or None. A store that cannot be read costs a GitHub read."""
        if self._shared is None:
            return None
        try:
            found = await self._shared.config_file(owner, repo)
        except Exception as exc:
            log.warning("shared configuration of %s/%s not read: %s", owner, repo, exc)
            return None
        left = None if found is None else found.read_at + self._ttl - self._wall()
        if found is None or left is None or not 0 < left <= self._ttl:
            return None
        self._files[key] = (self._clock() + left, found.text)
        return (found.text,)

    async def _share(self, owner: str, repo: str, text: str | None, read_at: float) -> None:
        if self._shared is None:
            return
        try:
            await self._shared.save_config_file(owner, repo, text, read_at)
        except Exception as exc:
            log.warning("configuration of %s/%s not shared: %s", owner, repo, exc)
