"""One request in flight per key, its outcome shared by every caller that asked meanwhile."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine, Hashable
from functools import partial
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SharedCalls(Generic[K, V]):
    """Jobs asking for the same thing at once wait for the one call already asking.

    After a restart every worker starts a job together, and each would read the same
    file or ask the same question of GitHub. Every waiter gets the call's result, or
    its error; the next caller after it ends calls again (caching is the caller's job).
    """

    def __init__(self) -> None:
        self._calls: dict[K, asyncio.Task[V]] = {}

    async def call(self, key: K, start: Callable[[], Coroutine[Any, Any, V]]) -> V:
        running = self._calls.get(key)
        if running is None:
            # A context of its own: the caller's holds the HTTP client of its job, which
            # closes when that job ends or is cancelled, maybe before this call is done.
            running = asyncio.get_running_loop().create_task(start(), context=contextvars.Context())
            self._calls[key] = running
            running.add_done_callback(partial(self._ended, key))
        # Shielded: a waiting job that is cancelled does not cancel the others' call.
        return await asyncio.shield(running)

    def _ended(self, key: K, task: asyncio.Task[V]) -> None:
        del self._calls[key]
        if not task.cancelled():
            task.exception()  # each waiter has it; retrieved here for when none is left
