"""Calls made with a plain token (a workflow's ``GITHUB_TOKEN``) instead of as the App."""

from __future__ import annotations

import httpx
from githubkit import TokenAuthStrategy

from perfbot.github.httpx_edge import HttpxWire
from perfbot.github.installation import Installation
from perfbot.github.pacing import MemoryBook, Pacer
from perfbot.github.transport import _client
from perfbot.github.wire import API_VERSION, ApiVersioned, Metered


class TokenSession:
    """Calls made with a plain token (a workflow's ``GITHUB_TOKEN``) instead of as the App.

    ``perfbot comment`` uses it so that the Actions-only path runs the App's own handler;
    artifact downloads still reach the storage host without any credential.
    """

    def __init__(
        self,
        token: str,
        base_url: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        api_version: str = API_VERSION,
    ) -> None:
        self._wire = Metered(
            HttpxWire(transport or httpx.AsyncHTTPTransport(retries=0)), metrics=None
        )
        api = ApiVersioned(self._wire, api_version)
        github = _client(TokenAuthStrategy(token), base_url, api)
        # A workflow's token has GitHub's limits too: its writes are paced in this process.
        self.installation = Installation(
            github, api, self._wire, app_id=None, pacer=Pacer(MemoryBook()), pace_key="token"
        )

    async def close(self) -> None:
        await self._wire.close()
