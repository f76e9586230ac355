"""Requests several jobs would make at once are made once: the token, the App's login, a file."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from perfbot.app.configcache import ConfigCache
from perfbot.github.app import GitHubApp
from perfbot.github.errors import GitHubError, GitHubUnavailable, RateLimited
from perfbot.github.tokens import TokenGate
from perfbot.github.transport import GET_RETRIES
from perfbot.sandbox.fakegithub import rsa_keypair
from tests.harness import INSTALLATION, World


async def settle() -> None:
    """Let every task that can run, run until it waits: scheduling steps, not a timer."""
    for _ in range(50):
        await asyncio.sleep(0)


async def until(condition: Callable[[], bool], what: str) -> None:
    """Yield to the loop until ``condition`` holds; bounded in steps, not in wall time."""
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never happened: {what}")


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
    await settle()
    assert calls.running == 1  # the others wait for the first one's token
    calls.release.set()
    assert await asyncio.gather(*first) == ["answer"] * 10
    assert calls.most_at_once == 1  # a released call finishes before the next starts

    calls.release.clear()
    later = [asyncio.create_task(gate.call(calls.call)) for _ in range(10)]
    await settle()
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
    await settle()
    waiting = [asyncio.create_task(gate.call(others.call)) for _ in range(3)]
    await settle()
    assert others.running == 0  # waiting for the first call
    first_call.release.set()
    with pytest.raises(type(error)):
        await first
    await settle()
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
    await settle()
    assert calls.running == 1
    calls.release.set()
    await asyncio.gather(*waiting)


def app_on(world: World) -> GitHubApp:
    return GitHubApp(
        4242, rsa_keypair().private_pem, world.fake.api_url, transport=world.fake.transport()
    )


async def test_jobs_asking_for_the_bot_login_together_share_one_request_and_its_failure() -> None:
    world = World.create()
    app = app_on(world)
    try:
        world.fake.fail_next(GET_RETRIES + 1, 502, path_contains="/app")
        results = await asyncio.gather(*(app.bot_login() for _ in range(6)), return_exceptions=True)
        assert all(isinstance(r, GitHubUnavailable) for r in results)
        asking = sum(r.path == "/app" for r in world.fake.requests)
        assert asking == GET_RETRIES + 1  # one request and its retries, not one per job
        assert await app.bot_login() == "perfbot-test[bot]"  # a failure is not remembered
    finally:
        await app.close()


async def test_a_shared_read_outlives_the_job_that_started_it(tmp_path: Path) -> None:
    # The read runs in a context of its own: cancelling the job that started it (its
    # lease was lost) closes that job's HTTP client, not the read's.
    world = World.create(files={".github/perfbot.yml": "tolerance: 9\n"})
    app = app_on(world)
    cache = ConfigCache(ttl=60)

    async def job() -> float:
        installation = app.installation(INSTALLATION)
        async with installation:
            return (await cache.get(installation, "acme", "widget")).repo_config.tolerance

    try:
        async with app.installation(INSTALLATION) as warm:  # the token, fetched beforehand
            await warm.get_file("acme", "widget", "README")
        # The read's first answer is a 502: it asks again 0.2 s later, after the cancel.
        world.fake.fail_next(1, 502, path_contains="/contents/")
        first = asyncio.create_task(job())
        # The first read got its 502 and waits to ask again: the others join it.
        await until(
            lambda: any("/contents/" in r.path for r in world.fake.requests), "the first read"
        )
        others = [asyncio.create_task(job()) for _ in range(3)]
        await settle()
        first.cancel()
        assert await asyncio.gather(*others) == [9, 9, 9]
    finally:
        await app.close()
