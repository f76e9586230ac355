"""One installation token fetched at a time: the other calls wait for it (``TokenGate``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class TokenGate:
    """Lets an installation's calls wait while one of them fetches its token.

    githubkit exchanges the App's JWT for an installation token on the first call that
    finds none cached, and so does every call that starts before that token arrives:
    after a restart, 64 workers meant 64 JWT signatures and 64 token exchanges for one
    installation. Here the first call goes alone and the others start once it has ended,
    however it ended: a failure leaves them to try for themselves, as they would have
    anyway, rather than queue one by one behind a GitHub that does not answer. The gate
    stays open for ``open_seconds`` (tokens live an hour). It knows nothing of the
    token's own expiry: when githubkit renews a token while the gate is open, the calls
    in flight then may each ask for one, at most once an hour.
    """

    def __init__(
        self, open_seconds: float = 30 * 60, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._open_seconds = open_seconds
        self._clock = clock
        self._open_until = float("-inf")
        self._lock = asyncio.Lock()

    async def call(self, send: Callable[[], Awaitable[T]]) -> T:
        if self._clock() >= self._open_until:
            async with self._lock:
                if self._clock() >= self._open_until:
                    try:
                        return await send()
                    finally:
                        self._open_until = self._clock() + self._open_seconds
        return await send()
