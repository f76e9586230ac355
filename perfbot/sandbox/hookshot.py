"""GitHub's webhook sender: the fake's deliveries, signed, POSTed to an App's URL."""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any

import httpx

from perfbot.sandbox.fakegithub import FakeGitHub


class Hookshot:
    """Sends deliveries to ``url`` (the App's ``/webhook``), signed with ``secret``."""

    def __init__(self, fake: FakeGitHub, url: str, secret: str, timeout: float = 10.0) -> None:
        self._fake = fake
        self._secret = secret
        self._client = httpx.AsyncClient(timeout=timeout)
        self._url = url

    async def __aenter__(self) -> Hookshot:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self._client.aclose()

    async def deliver(self, event: str, payload: dict[str, Any]) -> tuple[int, str]:
        """The App's answer (its HTTP status) and the delivery's id."""
        body = json.dumps(payload).encode()
        headers = self._fake.webhook_headers(event, body, self._secret)
        answer = await self._client.post(self._url, content=body, headers=headers)
        return answer.status_code, headers["X-GitHub-Delivery"]
