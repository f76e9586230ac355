"""Awaiting with a bound, without asyncio.wait_for (see the ruff ban in pyproject.toml)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float) -> T:
    """``await awaitable``, raising TimeoutError after ``seconds``; a cancellation of the
    caller is never lost, unlike Python 3.11's asyncio.wait_for."""
    async with asyncio.timeout(seconds):
        return await awaitable
