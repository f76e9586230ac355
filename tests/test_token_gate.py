"""An installation's calls wait while the first one fetches its token, then run together."""

from __future__ import annotations

import asyncio

import pytest

from perfbot.github import GitHubError, GitHubUnavailable, RateLimited, TokenGate


class Calls:
    """Calls that answer only when released, and record how many ran at once."""

    def __init__(self) -> None:
        self.running = 0
        self.most_at_once = 0
        self.release = asyncio.Event()

    async def call(self, error: GitHubError | None = None) -> str:
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        try:
            await self.release.wait()
            if error is not None:
                raise error
            return "answer"
        finally:
            self.running -= 1


async def test_the_first_call_goes_alone_then_all_go_together() -> None:
    gate, calls = TokenGate(), Calls()
    first = [asyncio.create_task(gate.call(calls.call)) for _ in range(10)]
    await asyncio.sleep(0.01)
    assert calls.running == 1  # the others wait for the first one's token
    calls.release.set()
    assert await asyncio.gather(*first) == ["answer"] * 10
    assert calls.most_at_once == 1  # a released call finishes before the next starts

    calls.release.clear()
    later = [asyncio.create_task(gate.call(calls.call)) for _ in range(10)]
    await asyncio.sleep(0.01)
    assert calls.running == 10  # open now: nobody waits
    calls.release.set()
    await asyncio.gather(*later)


@pytest.mark.parametrize(
    "error",
    [
        GitHubUnavailable("GitHub answered 502", 502),
        RateLimited("GitHub rate limit", 60),
        GitHubError("GitHub answered 404", 404),
    ],
    ids=["unavailable", "rate-limited", "not-found"],
)
async def test_after_a_failed_first_call_the_others_go_together(error: GitHubError) -> None:
    # Not one by one: behind a GitHub that does not answer, each would wait its timeout.
    gate, first_call, others = TokenGate(), Calls(), Calls()
    first = asyncio.create_task(gate.call(lambda: first_call.call(error)))
    await asyncio.sleep(0.01)
    waiting = [asyncio.create_task(gate.call(others.call)) for _ in range(3)]
    await asyncio.sleep(0.01)
    assert others.running == 0  # waiting for the first call
    first_call.release.set()
    with pytest.raises(type(error)):
        await first
    await asyncio.sleep(0.01)
    assert others.running == 3
    others.release.set()
    await asyncio.gather(*waiting)


async def test_the_gate_closes_again_when_the_token_may_have_expired() -> None:
    now = [0.0]
    gate, calls = TokenGate(open_seconds=100, clock=lambda: now[0]), Calls()
    calls.release.set()
    await gate.call(calls.call)
    now[0] = 101
    calls.release.clear()
    waiting = [asyncio.create_task(gate.call(calls.call)) for _ in range(3)]
    await asyncio.sleep(0.01)
    assert calls.running == 1
    calls.release.set()
    await asyncio.gather(*waiting)
