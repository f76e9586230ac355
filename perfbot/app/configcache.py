"""Repository configuration read from GitHub, cached briefly per repository and per owner."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Protocol

from perfbot.app.configfile import resolve_config
from perfbot.app.repoconfig import ConfigResult
from perfbot.github.errors import GitHubError
from perfbot.support.shared import SharedCalls

CONFIG_PATH = ".github/perfbot.yml"
ORG_CONFIG_REPO = ".github"
DEFAULT_TTL_SECONDS = 60.0


class FileSource(Protocol):
    async def get_file(self, owner: str, repo: str, path: str) -> str | None: ...


class ConfigCache:
    """``.github/perfbot.yml`` of the default branch merged over the owner's defaults.

    Files are cached for ``ttl`` seconds: a burst of runs costs one read, and a change
    to the configuration is seen within a minute. Jobs asking for a file that is being
    read wait for that read rather than starting their own: after a restart, every
    worker asks at once.
    """

    def __init__(
        self, ttl: float = DEFAULT_TTL_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ttl = ttl
        self._clock = clock
        self._files: dict[tuple[str, str], tuple[float, str | None]] = {}
        self._reading: SharedCalls[tuple[str, str], str | None] = SharedCalls()

    async def get(self, source: FileSource, owner: str, repo: str) -> ConfigResult:
        org_text = await self._file(source, owner, ORG_CONFIG_REPO)
        # The owner's .github repository is configured by the owner's file itself.
        repo_text = None if repo == ORG_CONFIG_REPO else await self._file(source, owner, repo)
        return resolve_config(
            repo_text,
            org_text,
            repo,
            org_path=f"{owner}/{ORG_CONFIG_REPO}: {CONFIG_PATH}",
        )

    async def _file(self, source: FileSource, owner: str, repo: str) -> str | None:
        key = (owner.lower(), repo.lower())
        cached = self._files.get(key)
        if cached is not None and cached[0] > self._clock():
            return cached[1]
        return await self._reading.call(key, partial(self._read, source, owner, repo, key))

    async def _read(
        self, source: FileSource, owner: str, repo: str, key: tuple[str, str]
    ) -> str | None:
        try:
            text = await source.get_file(owner, repo, CONFIG_PATH)
        except GitHubError as exc:
            if exc.retryable:
                raise
            # No access to the owner's .github repository (403) means no defaults there.
            text = None
        self._files[key] = (self._clock() + self._ttl, text)
        return text
