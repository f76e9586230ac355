"""Benchmark of the App end to end against the fake GitHub.

  * events/s: N completed measurement runs for N pull requests are delivered to perfbot
    (its HTTP endpoint, its SQLite queue, its workers); the clock stops when every PR has
    its comment. Run with 0 ms and with 50 ms added to every GitHub API response, after
    untimed warm-up runs (200 by default) for other PRs.
  * REST calls per event, as counted by the fake (calls that count against the
    installation's rate limit; the token exchange and a 304 to a conditional read do
    not): a first comment on a cold repository, a first comment once the configuration is
    cached, the first update after a first comment, and a steady-state update of an
    existing comment.

Run: .venv/bin/python bench/service.py [--events N] [--warmup N] [--workers N]
     [--processes 1,2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakeprocess import fake_github, post_all, warm_up

from tests.fakegithub import Pull
from tests.harness import (
    World,
    in_process_service,
    perfbot_process,
    settings_env,
    wait_idle,
    wait_until,
)


def events_per_second(
    events: int, latency: float, workers: int, processes: int, warmup: int
) -> tuple[float, float, float, float]:
    """perfbot serve and the fake GitHub as separate processes, as in production.

    ``warmup`` runs (for PRs of their own) go first, untimed: what a process does once
    (imports, schemas, tokens, connections, configuration) is not charged to the events.
    """
    with (
        tempfile.TemporaryDirectory() as tmp,
        fake_github(events, latency, Path(tmp), warmup) as setup,
    ):
        env = settings_env(
            setup.api_url,
            Path(tmp) / "perfbot.db",
            PERFBOT_WORKERS=str(workers),
            PERFBOT_PROCESSES=str(processes),
            PERFBOT_PRIVATE_KEY=setup.private_key,  # the key this fake trusts
        )
        with perfbot_process(env, Path(tmp) / "perfbot.log") as bot:
            warm_up(setup, [str(bot.client.base_url)])
            cpu_before = _cpu_seconds(bot.process.pid)
            fake_cpu_before = _cpu_seconds(setup.fake_pid)
            start = time.perf_counter()
            asyncio.run(post_all([str(bot.client.base_url)], setup.deliveries))
            posted = time.perf_counter() - start
            with httpx.Client(base_url=setup.api_url, timeout=10) as control:
                try:
                    wait_until(
                        lambda: control.get("/__bench/commented").json()["commented"] == events,
                        timeout=600,
                        what="every comment",
                    )
                except AssertionError:
                    print((Path(tmp) / "perfbot.log").read_text()[-3000:], file=sys.stderr)
                    raise
            elapsed = time.perf_counter() - start
            cpu = _cpu_seconds(bot.process.pid) - cpu_before
            fake_cpu = _cpu_seconds(setup.fake_pid) - fake_cpu_before
    return events / elapsed, posted, cpu / events, fake_cpu / events


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its live children, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    children = [
        int(child)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]
    return ticks / os.sysconf("SC_CLK_TCK") + sum(_cpu_seconds(child) for child in children)


def calls_per_event() -> dict[str, int]:
    world = World.create()
    counts: dict[str, int] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        in_process_service(world, Path(tmp) / "perfbot.db") as client,
    ):
        steps = [
            ("first comment, cold configuration", 1, "a" * 40, 7001),
            ("first comment, configuration cached", 2, "b" * 40, 7002),
            # perfbot's new comment changed the PR (its comment count): the PR is read anew.
            ("first update after the first comment", 1, "a" * 40, 7003),
            ("steady-state update", 1, "a" * 40, 7004),
        ]
        pulls: dict[int, Pull] = {}
        for label, number, sha, run_id in steps:
            pull = pulls.get(number) or world.pull(number, sha)
            pulls[number] = pull
            before = len(world.fake.rate_limited_calls())
            body, headers = world.delivery(world.measured_run(pull, run_id))
            client.post("/webhook", content=body, headers=headers)
            wait_until(partial(_shows_run, world, number, run_id), 30, f"the comment ({label})")
            wait_idle(client.get, 30)  # the job has ended (its check run written)
            calls = world.fake.rate_limited_calls()[before:]
            counts[label] = len(calls)
            print(
                f"  {label}: {len(calls)} calls: "
                + ", ".join(f"{c.method} {_shape(c.path)}" for c in calls)
            )
    return counts


def _shows_run(world: World, number: int, run_id: int) -> bool:
    comments = world.bot_comments(number)
    return bool(comments) and f"runs/{run_id})" in comments[0]


def _shape(path: str) -> str:
    parts = path.split("/")
    return "/".join(p if not p.isdigit() else "N" for p in parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--workers", type=int, default=64, help="per process")
    parser.add_argument(
        "--warmup", type=int, default=200, help="untimed runs before the timed ones (0: none)"
    )
    parser.add_argument(
        "--processes",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[1, 2],
        help="PERFBOT_PROCESSES values to measure, comma-separated (default 1,2)",
    )
    args = parser.parse_args()

    print("REST calls per event (counted by the fake GitHub):")
    calls_per_event()
    for processes in args.processes:
        for latency in (0.0, 0.05):
            rate, posted, cpu, fake_cpu = events_per_second(
                args.events, latency, args.workers, processes, args.warmup
            )
            print(
                f"end to end, {args.events} events after {args.warmup} untimed, "
                f"{latency * 1000:.0f} ms API latency, "
                f"{processes} process(es) x {args.workers} workers: {rate:.1f} events/s "
                f"(deliveries accepted in {posted:.2f} s); perfbot used {cpu * 1000:.1f} ms "
                f"of CPU per event; the fake GitHub used {fake_cpu * 1000:.1f} ms per event "
                "on the same machine"
            )


if __name__ == "__main__":
    main()
