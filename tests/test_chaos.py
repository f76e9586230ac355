"""Chaos: GitHub misbehaving at random while perfbot is killed and restarted mid-job.

``perfbot serve`` runs as a real process against the fake GitHub on loopback. A fifth of
the API requests fail (5xx), are rate limited (403/429 with Retry-After), are slow, or
hang beyond perfbot's timeout, while pull requests get several measurement runs each.
Once GitHub is healthy again, every delivery must have been handled, and every pull
request must show exactly one comment with its newest head's result.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import time
from pathlib import Path

import httpx
import pytest

from perfbot.github.errors import RateLimited
from perfbot.github.transport import CALL_TIMEOUT
from perfbot.sandbox.fakegithub import (
    CHAOS_KINDS,
    ChaosKind,
    FakeGitHub,
    Pull,
    Run,
    serve,
)
from tests.harness import (
    ZPERF_BASE,
    World,
    perfbot_process,
    report_zip,
    settings_env,
    wait_until,
)

PULLS = range(1, 9)
ROUNDS = 3  # measurement runs per pull request, each for a newer head
SEED = 20240611


def head_sha(number: int, round_: int) -> str:
    return f"{number:02d}{round_:02d}".ljust(40, "c")


def run_id(number: int, round_: int) -> int:
    return 1000 * number + round_


def guid(number: int, round_: int, action: str = "completed") -> str:
    return f"chaos-pr{number}-run{round_}-{action}"


def head_values(number: int, round_: int) -> dict[str, float]:
    """A result that names its run: tcp4 moves by a percentage unique to (PR, round)."""
    change = 1 + (10 * round_ + number) / 100
    return {**ZPERF_BASE, "tcp4_mbps": ZPERF_BASE["tcp4_mbps"] * change}


def expected_change(number: int, round_: int) -> str:
    return f"+{10 * round_ + number}.00 %"


def jobs(database: Path) -> dict[str, tuple[str, int, str | None]]:
    """Each delivery's newest job: (status, attempts, last error), read beside perfbot."""
    with sqlite3.connect(database, timeout=10) as conn:
        rows = conn.execute(
            "SELECT delivery_id, status, attempts, last_error FROM jobs ORDER BY id"
        ).fetchall()
    return {delivery: (status, attempts, error) for delivery, status, attempts, error in rows}


def claims(database: Path) -> dict[str, str]:
    """The running jobs' deliveries and who holds their lease."""
    with sqlite3.connect(database, timeout=10) as conn:
        rows = conn.execute(
            "SELECT delivery_id, lease_owner FROM jobs WHERE status = 'running'"
        ).fetchall()
    return dict(rows)


def running(database: Path) -> int:
    return sum(status == "running" for status, _, _ in jobs(database).values())


def mid_job(database: Path) -> bool:
    """A job is running (claimed, perhaps holding its PR's lock)."""
    return running(database) > 0


def build(world: World) -> tuple[dict[int, Pull], dict[tuple[int, int], Run]]:
    """Every PR and run up front: the fake's state is only read while it serves."""
    pulls = {n: world.pull(n, head_sha(n, 1)) for n in PULLS}
    runs = {
        (n, r): world.measured_run(
            pulls[n],
            run_id(n, r),
            head_sha=head_sha(n, r),
            report=report_zip(head_values(n, r)),
        )
        for n in PULLS
        for r in range(1, ROUNDS + 1)
    }
    return pulls, runs


def send_round(
    client: httpx.Client,
    world: World,
    pulls: dict[int, Pull],
    runs: dict[tuple[int, int], Run],
    r: int,
) -> None:
    """Every PR is pushed (its head moves to round ``r``), its run starts, then completes."""
    for n in PULLS:
        pulls[n].head_sha = head_sha(n, r)
    for action in ("requested", "completed"):
        for n in PULLS:
            body, headers = world.delivery(runs[n, r], action, delivery_id=guid(n, r, action))
            assert client.post("/webhook", content=body, headers=headers).status_code == 202


def commented(world: World) -> int:
    return sum(bool(world.bot_comments(n)) for n in PULLS)


@pytest.mark.slow
def test_chaos_and_a_kill_lose_nothing_and_duplicate_nothing(  # noqa: PLR0915 one story
    tmp_path: Path,
) -> None:
    world = World.create()
    pulls, runs = build(world)
    database = tmp_path / "perfbot.db"
    wanted = {
        guid(n, r, action)
        for n in PULLS
        for r in range(1, ROUNDS + 1)
        for action in ("requested", "completed")
    }
    started = time.monotonic()
    with serve(world.fake) as fake:
        env = settings_env(
            fake.api_url,
            database,
            PERFBOT_WORKERS="4",
            PERFBOT_REDELIVERY_MINUTES="0",
        )
        # Past perfbot's read timeout, so a hang is a timeout on perfbot's side.
        hang = float(CALL_TIMEOUT.read or 15) + 1
        fake.chaos(0.2, seed=SEED, slow_seconds=0.5, hang_seconds=hang)
        with perfbot_process(env, tmp_path / "first.log") as bot:
            send_round(bot.client, world, pulls, runs, 1)
            wait_until(lambda: commented(world) >= 3, 20, "some first comments")
            send_round(bot.client, world, pulls, runs, 2)
            wait_until(lambda: mid_job(database), 20, "a job to be running")
            bot.process.send_signal(signal.SIGKILL)  # the process this test started
            bot.process.wait(timeout=10)
        held = claims(database)
        killed_mid_job = len(held)
        # A PR lock the killed process held expires within app.context.LOCK_TTL_SECONDS.
        budget = 60
        restarted = time.monotonic()
        with perfbot_process(env, tmp_path / "second.log") as bot:

            def resumed() -> bool:
                """Every job the killed process held was taken over (or has ended)."""
                now = claims(database)
                return all(now.get(delivery) != owner for delivery, owner in held.items())

            # With the default lease, within 30 s of the restart, chaos and all.
            wait_until(resumed, 30 - (time.monotonic() - restarted), "the killed jobs to resume")
            resumed_after = time.monotonic() - restarted
            send_round(bot.client, world, pulls, runs, 3)
            # Someone redelivers part of the first round by hand: the same guids again.
            for n in (1, 2):
                body, headers = world.delivery(runs[n, 1], delivery_id=guid(n, 1))
                reply = bot.client.post("/webhook", content=body, headers=headers)
                assert reply.json() == {"status": "duplicate"}
            # perfbot keeps working while GitHub misbehaves: a few more failures first.
            misbehaved = sum(fake.chaos_injected.values())
            wait_until(
                lambda: sum(fake.chaos_injected.values()) >= misbehaved + 5, 30, "more chaos"
            )
            fake.calm()
            calm_at = time.monotonic()

            def settled() -> bool:
                found = jobs(database)
                return wanted <= found.keys() and all(
                    found[g][0] in ("done", "failed") for g in wanted
                )

            wait_until(settled, budget, "every job to finish")
            metrics = bot.client.get("/metrics").text
    elapsed = time.monotonic() - started

    found = jobs(database)
    not_done = {g: found[g] for g in sorted(wanted) if found[g][0] != "done"}
    assert not_done == {}, f"jobs not done: {not_done}"
    assert len(found) == len(wanted)  # nothing lost, nothing enqueued twice
    assert killed_mid_job > 0
    assert max(attempts for _, attempts, _ in found.values()) > 1  # chaos made jobs retry
    # GitHub did misbehave, in several ways.
    injected = world.fake.chaos_injected
    assert sum(injected.values()) >= 10, injected
    assert len(+injected) >= 3, injected
    # The restarted process's metrics count its jobs (whether one of them had to be retried
    # depends on where chaos struck: GETs are retried in place, rate-limited writes resent
    # by the pacer; tests/test_errors.py counts each outcome deterministically).
    assert 'perfbot_jobs_total{event="workflow_run",outcome="done"}' in metrics

    for n in PULLS:
        comments = world.bot_comments(n)
        assert len(comments) == 1, f"PR {n} has {len(comments)} perfbot comments"
        (comment,) = comments
        newest = head_sha(n, ROUNDS)
        assert f"<code>{newest[:7]}</code> (this PR, rebased)" in comment, f"PR {n}: {comment}"
        assert expected_change(n, ROUNDS) in comment, f"PR {n} shows another run's numbers"
        assert "previous commit" not in comment, f"PR {n}: a stale notice stayed"
    assert len([c for c in world.fake.comments.values() if c.app_id == world.fake.app_id]) == 8
    assert world.fake.foreign_comment_edits == []
    for log in ("first.log", "second.log"):
        text = (tmp_path / log).read_text()
        assert "failed unexpectedly" not in text, f"{log}: an unforeseen exception"
        assert "gave up" not in text, log
    print(
        f"chaos: {dict(injected)}, kill took {killed_mid_job} running job(s), "
        f"resumed {resumed_after:.1f} s after the restart, "
        f"settled {time.monotonic() - calm_at:.1f} s after calm, total {elapsed:.1f} s"
    )


# The knob itself, and what chaos found ----------------------------------------------------


async def statuses(fake: FakeGitHub, count: int) -> list[int]:
    async with httpx.AsyncClient(transport=fake.transport(), base_url=fake.api_url) as client:
        return [(await client.get("/app")).status_code for _ in range(count)]


@pytest.mark.parametrize("kinds", [("5xx", "secondary_rate_limit"), ("5xx",)])
async def test_chaos_is_deterministic_with_a_seed(kinds: tuple[ChaosKind, ...]) -> None:
    first, second, other = FakeGitHub(), FakeGitHub(), FakeGitHub()
    for fake, seed in ((first, 7), (second, 7), (other, 8)):
        fake.chaos(0.3, seed=seed, kinds=kinds)
    answers = await statuses(first, 60)
    assert answers == await statuses(second, 60)
    assert answers != await statuses(other, 60)
    assert 5 <= sum(status != 401 for status in answers) <= 35  # about 30 % misbehave
    allowed = {401, 500, 502, 503, 504} | ({403, 429} if len(kinds) == 2 else set())
    assert set(answers) <= allowed  # 401: /app needs a JWT, none was sent
    first.calm()
    assert set(await statuses(first, 20)) == {401}


async def test_chaos_slow_and_timeout_kinds() -> None:
    fake = FakeGitHub()
    fake.chaos(1.0, kinds=("slow",), slow_seconds=0.2)
    assert await statuses(fake, 2) == [401, 401]  # slow, then answered as usual
    assert fake.chaos_injected == {"slow": 2}
    fake.chaos(1.0, kinds=("timeout",), hang_seconds=5)
    client = httpx.AsyncClient(transport=fake.transport(), base_url=fake.api_url, timeout=0.2)
    async with client:
        with pytest.raises(httpx.ReadTimeout):
            await client.get("/app")
    assert fake.chaos_injected == {"timeout": 1}
    with pytest.raises(ValueError, match="rate"):
        fake.chaos(1.5)
    assert set(CHAOS_KINDS) == {"5xx", "secondary_rate_limit", "slow", "timeout"}


async def test_a_rate_limited_token_exchange_is_retried_not_given_up() -> None:
    """Found by chaos: a secondary limit on the token exchange used to give the job up."""
    world = World.create()
    world.pull(7, "a" * 40)
    world.fake.secondary_rate_limit_next(1, retry_after=3, path_contains="access_tokens")
    github = world.github_app()
    try:
        with pytest.raises(RateLimited) as caught:
            await github.installation(1).get_pull("acme", "widget", 7)
        assert caught.value.retryable
        assert caught.value.retry_after == 3
        pull = await github.installation(1).get_pull("acme", "widget", 7)
        assert pull is not None
        assert pull.number == 7
    finally:
        await github.close()
    await asyncio.sleep(0)
