"""Two ``perfbot serve`` replicas sharing one PostgreSQL database, against one fake GitHub.

20 pull requests, 8 measurement runs each with successive head commits. Step by step the
PRs' heads move forward and the runs' deliveries go, concurrently, to either replica: some
arrive late (after the head moved on, or after a newer run's delivery), some twice (the same
delivery id, once to both replicas at the same moment). The replicas drain each of the first
steps before the next one, so every PR's comment is created by one replica and edited by
either. The newest runs are delivered while the jobs of the runs before them, proven against
the then-current heads, still hang on their report downloads: the replicas must neither run
two jobs of one PR side by side nor let the older result overwrite the newer one.
Once the shared queue is empty, every PR must have exactly one perfbot comment showing its
newest run, and the replicas must have shared the work without any job being run twice or
failing.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx
import psycopg
import pytest

from perfbot.sandbox.fakegithub import FakeGitHub, Pull, Run, serve
from tests.harness import (
    ZPERF_BASE,
    RunningPerfbot,
    World,
    perfbot_process,
    report_zip,
    settings_env,
    wait_until,
)
from tests.pg import pg_database, pg_server, pg_url

__all__ = ["pg_database", "pg_server", "pg_url"]  # fixtures, used by name

pytestmark = pytest.mark.slow

PULLS = 20
RUNS_PER_PULL = 8  # successive heads of each PR
REPEATS_PER_PULL = 2  # the same delivery id sent again
POSTS_PER_PULL = RUNS_PER_PULL + REPEATS_PER_PULL
SEED = 20240611
# The report download of each PR's next-to-newest run hangs this long, so that the newest
# run arrives while a job proven against the previous head is still in flight.
SLOW_DOWNLOAD_SECONDS = 0.5
API_LATENCY_SECONDS = 0.01  # added to every GitHub answer, so that jobs overlap
_JOBS_RE = re.compile(r'^perfbot_jobs_total\{event="workflow_run",outcome="(\w+)"\} ([0-9.e+]+)$')
_DELIVERIES_RE = re.compile(
    r'^perfbot_deliveries_total\{event="workflow_run",outcome="(\w+)"\} ([0-9.e+]+)$'
)


def _sha(number: int, step: int) -> str:
    """Head commit ``step`` of PR ``number``: its first 7 characters (as shown) are unique."""
    return f"{number:04d}{step:03d}".ljust(40, "e")


def _run_id(number: int, step: int) -> int:
    return 100_000 + number * 100 + step


@dataclass(frozen=True)
class Post:
    number: int
    step: int  # which run of the PR
    delivery_id: str
    body: bytes
    headers: dict[str, str]
    replica: int


def _schedule(
    world: World, pulls: dict[int, Pull], rng: random.Random
) -> list[tuple[dict[int, str], list[Post]]]:
    """Steps: the heads to set first, then the deliveries to send at once.

    A run's delivery normally goes in the step that moved the head to it; some go one or two
    steps later (out of order: after newer runs' deliveries, and after the head moved on). The
    two newest runs always go on time: the newest because GitHub only sends it once that run
    exists, the one before it because the test holds its jobs in flight.
    """
    steps: list[tuple[dict[int, str], list[Post]]] = [({}, []) for _ in range(RUNS_PER_PULL)]
    for number, pull in pulls.items():
        originals: list[Post] = []
        for step in range(RUNS_PER_PULL):
            sha = _sha(number, step)
            run = _measured(world, pull, number, step, sha)
            delivery_id = f"replicas-{number}-{step}"
            body, headers = world.delivery(run, delivery_id=delivery_id)
            post = Post(number, step, delivery_id, body, headers, rng.randrange(2))
            originals.append(post)
            steps[step][0][number] = sha
            late = rng.random() < 0.3 and step < RUNS_PER_PULL - 2
            at = min(step + rng.randint(1, 2), RUNS_PER_PULL - 1) if late else step
            steps[at][1].append(post)
        for i in range(REPEATS_PER_PULL):
            original = rng.choice(originals)
            if i == 0:
                # At the same time as the original, to the other replica: both race to record it.
                at = next(k for k, (_, posts) in enumerate(steps) if original in posts)
                replica = 1 - original.replica
            else:
                at = rng.randint(original.step, RUNS_PER_PULL - 1)
                replica = rng.randrange(2)
            steps[at][1].append(
                Post(number, original.step, original.delivery_id, original.body,
                     original.headers, replica)
            )  # fmt: skip
    for _, posts in steps:
        rng.shuffle(posts)
    return steps


def _measured(world: World, pull: Pull, number: int, step: int, sha: str) -> Run:
    # Numbers differ from run to run, like real measurements.
    head = {name: value * (1 + 0.01 * step) for name, value in ZPERF_BASE.items()}
    return world.measured_run(pull, _run_id(number, step), head_sha=sha, report=report_zip(head))


def _report_id(world: World, number: int, step: int) -> int:
    run_id = _run_id(number, step)
    (found,) = (
        a.id
        for a in world.fake.artifacts.values()
        if a.run_id == run_id and a.name == "perf-report"
    )
    return found


def _all_requested(fake: FakeGitHub, paths: list[str]) -> bool:
    seen = {r.path for r in list(fake.requests)}
    return all(any(path in s for s in seen) for path in paths)


def _post(client: httpx.Client, post: Post) -> str:
    response = client.post("/webhook", content=post.body, headers=post.headers)
    assert response.status_code == 202, response.text
    status: str = response.json()["status"]
    return status


def _counters(text: str, pattern: re.Pattern[str]) -> Counter[str]:
    found: Counter[str] = Counter()
    for line in text.splitlines():
        match = pattern.match(line)
        if match:
            found[match.group(1)] += int(float(match.group(2)))
    return found


def _drained(bots: list[RunningPerfbot]) -> bool:
    return all(bot.client.get("/healthz").json()["queue_depth"] == 0 for bot in bots)


def _deliver(
    world: World,
    pulls: dict[int, Pull],
    steps: list[tuple[dict[int, str], list[Post]]],
    bots: list[RunningPerfbot],
) -> Counter[str]:
    """Play the steps against the replicas; perfbot's answers ("queued", "duplicate")."""
    answers: Counter[str] = Counter()
    with ThreadPoolExecutor(max_workers=16) as pool:
        for step, (heads, posts) in enumerate(steps):
            # GitHub's side first: the PRs' heads move, then the runs' deliveries arrive.
            for number, sha in heads.items():
                pulls[number].head_sha = sha
            held = [f"/actions/artifacts/{_report_id(world, n, step)}/zip" for n in pulls]
            if step == RUNS_PER_PULL - 2:
                for path in held:
                    world.fake.hang_next(1, SLOW_DOWNLOAD_SECONDS, path_contains=path)
            futures: list[Future[str]] = [
                pool.submit(_post, bots[p.replica].client, p) for p in posts
            ]
            answers.update(f.result() for f in futures)
            if step < RUNS_PER_PULL - 2:
                wait_until(partial(_drained, bots), 30, f"both replicas to finish step {step}")
            elif step == RUNS_PER_PULL - 2:
                # Each PR's job of this step is proven (its head is current) and now hangs on
                # its download: the newest runs are delivered while those jobs are running.
                downloads = partial(_all_requested, world.fake, held)
                wait_until(downloads, 30, "the next-to-newest runs' downloads")
    return answers


def _assert_each_pull_shows_its_newest_run(world: World, pulls: dict[int, Pull]) -> None:
    """One perfbot comment per PR, showing its newest run (head and run link), no older one."""
    all_bot_comments = [c for c in world.fake.comments.values() if c.app_id == world.fake.app_id]
    assert len(all_bot_comments) == PULLS
    assert not any(c.deleted for c in all_bot_comments)
    newest = RUNS_PER_PULL - 1
    for number in pulls:
        comments = world.bot_comments(number)
        assert len(comments) == 1, f"PR {number}: {len(comments)} perfbot comments"
        body = comments[0]
        shown = [s for s in range(RUNS_PER_PULL) if f"runs/{_run_id(number, s)})" in body]
        assert shown == [newest], f"PR {number} shows run(s) {shown}, not {newest}"
        assert _sha(number, newest)[:7] in body
        # Older pushes appear only in the comment's history of them, never as the report.
        report = re.split(
            r"<details><summary>(?:This PR's pushes|Recent values|\d+ charts? )", body
        )
        assert f"Compared <code>{_sha(number, newest)[:7]}</code>" in report[0]
        assert not any(_sha(number, s)[:7] in report[0] for s in range(newest)), body
        checks = world.fake.check_runs_for(world.repo, _sha(number, newest))
        assert [c.name for c in checks] == ["perfbot"], f"PR {number}: {checks}"


def test_two_replicas_on_postgresql_show_each_pr_its_newest_result_once(
    tmp_path: Path, pg_url: str
) -> None:
    rng = random.Random(SEED)
    world = World.create()
    pulls = {n: world.pull(n, _sha(n, 0)) for n in range(1, PULLS + 1)}
    steps = _schedule(world, pulls, rng)
    assert sum(len(posts) for _, posts in steps) == PULLS * POSTS_PER_PULL == 200

    world.fake.latency = API_LATENCY_SECONDS
    with serve(world.fake) as fake, ExitStack() as stack:
        env = settings_env(
            fake.api_url,
            tmp_path / "unused.db",
            PERFBOT_DATABASE_URL=pg_url,
            PERFBOT_WORKERS="8",
        )
        replica_logs = [tmp_path / "replica-0.log", tmp_path / "replica-1.log"]
        bots: list[RunningPerfbot] = [
            stack.enter_context(perfbot_process(env, log)) for log in replica_logs
        ]

        answers = _deliver(world, pulls, steps, bots)
        unique = PULLS * RUNS_PER_PULL
        assert answers == {"queued": unique, "duplicate": PULLS * REPEATS_PER_PULL}
        wait_until(lambda: _drained(bots), 45, "both replicas to see an empty queue")

        def finished_jobs() -> int:
            return sum(
                sum(_counters(bot.client.get("/metrics").text, _JOBS_RE).values()) for bot in bots
            )

        # A job's counter moves just after the job is settled in the database.
        wait_until(lambda: finished_jobs() >= unique, 10, "every job's metric")
        metrics = [bot.client.get("/metrics").text for bot in bots]
        pids = {str(bot.process.pid) for bot in bots}

    with psycopg.connect(pg_url) as conn:
        jobs = conn.execute(
            "SELECT status, attempts, count(*) FROM jobs GROUP BY status, attempts"
        ).fetchall()
        # A claim's owner is host:pid:worker:claim; it stays on a finished job.
        owners = conn.execute("SELECT DISTINCT lease_owner FROM jobs").fetchall()
        deliveries = conn.execute("SELECT count(*) FROM deliveries").fetchone()

    # Every delivery recorded once, every job run exactly once, none failed or retried.
    assert deliveries == (unique,)
    assert jobs == [("done", 1, unique)], jobs
    claimed_by = {owner.rsplit(":", 3)[1] for (owner,) in owners}
    assert claimed_by == pids, f"jobs claimed by processes {claimed_by}, replicas are {pids}"
    per_replica = [_counters(text, _JOBS_RE) for text in metrics]
    assert all(set(counts) <= {"done"} for counts in per_replica), per_replica
    assert sum(counts["done"] for counts in per_replica) == unique, per_replica
    assert all(counts["done"] > 0 for counts in per_replica), per_replica
    recorded = [_counters(text, _DELIVERIES_RE) for text in metrics]
    assert sum(r["queued"] for r in recorded) == unique, recorded
    assert sum(r["duplicate"] for r in recorded) == PULLS * REPEATS_PER_PULL, recorded

    _assert_each_pull_shows_its_newest_run(world, pulls)
    for log in replica_logs:
        assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


def test_a_killed_replicas_job_is_taken_over_by_the_other_within_its_lease(
    tmp_path: Path, pg_url: str
) -> None:
    """SIGKILL the replica running a job (its report download hangs): the other replica
    takes the job over once the default lease (20 s) has run out, and posts its comment."""
    world = World.create()
    run = world.measured_run(world.pull(7, _sha(7, 0)), _run_id(7, 0))
    with serve(world.fake) as fake, ExitStack() as stack:
        env = settings_env(fake.api_url, tmp_path / "unused.db", PERFBOT_DATABASE_URL=pg_url)
        bots = [
            stack.enter_context(perfbot_process(env, tmp_path / f"replica-{n}.log")) for n in (0, 1)
        ]
        fake.hang_next(1, 60, path_contains="/zip")  # the first download never answers
        body, headers = world.delivery(run, delivery_id="guid-replica-kill")
        assert bots[0].client.post("/webhook", content=body, headers=headers).status_code == 202
        wait_until(lambda: any(r.path.endswith("/zip") for r in fake.requests), 30, "the download")
        with psycopg.connect(pg_url) as conn:
            (owner,) = conn.execute("SELECT lease_owner FROM jobs").fetchone() or (None,)
        assert owner is not None
        (holder,) = [bot for bot in bots if str(bot.process.pid) == owner.rsplit(":", 3)[1]]
        (other,) = [bot for bot in bots if bot is not holder]
        holder.process.kill()  # SIGKILL, to the process this test started
        holder.process.wait(timeout=10)
        killed = time.monotonic()
        # Bounded by the lease, plus a claim poll and the job itself.
        wait_until(lambda: len(world.bot_comments(7)) == 1, 30, "the other replica's comment")
        print(f"kill to comment on the other replica: {time.monotonic() - killed:.1f} s")
        wait_until(lambda: other.client.get("/healthz").json()["queue_depth"] == 0, 15)
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT status, attempts, lease_owner FROM jobs").fetchall()
    ((status, attempts, finisher),) = rows
    assert (status, attempts) == ("done", 2)
    assert finisher.rsplit(":", 3)[1] == str(other.process.pid)
    assert len(world.bot_comments(7)) == 1
