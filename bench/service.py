"""Benchmark of the App end to end against the fake GitHub.

  * events/s: N completed measurement runs are delivered to perfbot (its HTTP endpoint,
    its SQLite queue, its workers); the clock stops when every run's comment has landed.
    By default (``--shape update``) each is a steady-state update: a new run of one of the
    warm-up's PRs (600 by default, perfbot's comment on each and one untimed update of
    it), its comment edited in place. ``--shape first``: each is a first comment on a PR
    of its own. Run with 0 ms and with 50 ms added to every GitHub API response, in three
    rounds on the same processes, the PRs spread over many installations (GitHub's pace,
    one write a second per installation and a notifying one every three, is kept as in
    production, and is not what is measured); each process's RSS at the end.
  * CPU per event: perfbot's processes' CPU from a round's first delivery until its last
    job has ended (each update's check run goes a second behind its comment, at GitHub's
    pace), over the round's events. Each round starts on an idle service and is waited
    out before the next, so a round is charged all of its own work and none of another's
    (until 2026-12-04 the CPU stopped with the last comment: a round was charged the
    previous round's check runs instead of its own, and the first round the warm-up's).
    The deliveries are sent by a few lines of asyncio (bench/rawhttp.py), not an HTTP
    library: on this 2-core machine the load generator's CPU is taken from what it
    measures.
  * SQLite writes per event, as perfbot's /metrics counts them
    (perfbot_sqlite_loop_writes_total): the small writes tried on the event loop's
    connection, and the share that met another process's write lock and waited for it
    (a pause or two on the loop, then on the store's thread; with one process, none should).
  * REST calls per event, as counted by the fake (calls that count against the
    installation's rate limit; the token exchange and a 304 to a conditional read do
    not): a first comment on a cold repository, a first comment once the configuration is
    cached, the first update after a first comment, and a steady-state update of an
    existing comment.

Run: .venv/bin/python bench/service.py [--events N] [--rounds N] [--warmup N]
     [--workers N] [--installations N] [--processes 1,2] [--shape update|first]

Why updates by default: with first comments, each installation got one new comment a
round, and a new comment waits three seconds after the installation's last one; 300
installations then capped a round of 300 at 98 events/s (300 / 3.05 s), whatever perfbot
did (2026-12-02: 98.4, 98.2 and 98.7 events/s in three rounds, at 0 and 50 ms alike).
A PR's steady state is updates; its first comment is once. Why 600 installations and
warm-up PRs: an update writes twice, a second apart, so one installation takes an update
at most every 2.1 s (its next comment a second after its check run): 300 installations
updated every round would cap the bench at 143 events/s, under the target. With 600 and
300 updates a round, each installation is updated every other round.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakeprocess import fake_github, post_all, wait_commented, warm_up
from procstat import process_cpu, rss_kib, serving

from perfbot.sandbox.fakegithub import Pull
from tests.harness import (
    World,
    in_process_service,
    perfbot_process,
    settings_env,
    wait_idle,
    wait_until,
)


@dataclass(frozen=True)
class Round:
    rate: float  # events per second
    cpu: float  # perfbot's CPU seconds per event, ingest included
    fake_cpu: float  # the fake GitHub's
    load_cpu: float  # this process's: the deliveries sent and the comments awaited
    writes: float  # small SQLite writes per event on the loop's connection
    held: float  # the share of them that met another connection's write lock
    counted: float  # REST calls per event that GitHub's rate limit counts
    tokens: float  # token exchanges per event (a process's first call of an installation)
    not_modified: float  # conditional reads answered 304 per event (not counted)


def events_per_second(
    events: int,
    latency: float,
    *,
    workers: int,
    processes: int,
    warmup: int,
    rounds: int,
    installations: int,
    updates: bool,
) -> tuple[list[Round], list[int], int]:
    """perfbot serve and the fake GitHub as separate processes, as in production: each
    round's events/s and CPU per event, each serving process's RSS (KiB) at the end, and
    the RSS of the process ``perfbot serve`` itself (its supervisor, when it serves in
    several).

    ``warmup`` runs (for PRs of their own) go first, untimed: what a process does once
    (imports, schemas, tokens, connections, configuration) is not charged to the events.
    The PRs are spread over ``installations`` installations (GitHub's pace is per
    installation: with enough of them it is not what is measured).
    """
    with (
        tempfile.TemporaryDirectory() as tmp,
        fake_github(
            events * rounds, latency, Path(tmp), warmup, installations, updates=updates
        ) as setup,
    ):
        database = Path(tmp) / "perfbot.db"
        env = settings_env(
            setup.api_url,
            database,
            PERFBOT_WORKERS=str(workers),
            PERFBOT_PROCESSES=str(processes),
            PERFBOT_PRIVATE_KEY=setup.private_key,  # the key this fake trusts
            PERFBOT_WRITE_PACE_SECONDS="1",  # GitHub's pace, as in production
        )
        results = []
        with perfbot_process(env, Path(tmp) / "perfbot.log") as bot:
            warm_up(setup, [str(bot.client.base_url)])
            # The settling updates' check runs, a second behind their comments, are
            # written before the first round: none of their work is charged to it.
            wait_idle(bot.client.get, 600, database=database)
            for number in range(rounds):
                batch = setup.deliveries[number * events : (number + 1) * events]
                writes_before = _sqlite_writes(bot.client)
                requests_before = _requests(setup.api_url)
                cpu_before = process_cpu(bot.process.pid)
                fake_cpu_before = process_cpu(setup.fake_pid)
                load_cpu_before = time.process_time()
                start = time.perf_counter()
                asyncio.run(post_all([str(bot.client.base_url)], batch))
                try:
                    wait_commented(setup.api_url, events * (number + 1), 600, "every comment")
                except AssertionError:
                    print((Path(tmp) / "perfbot.log").read_text()[-3000:], file=sys.stderr)
                    raise
                elapsed = time.perf_counter() - start
                # Each round's CPU is all of its own work: its check runs (each a second
                # behind its comment, GitHub's pace) and its jobs' ends, and nothing of
                # the next round's. Asked for every 0.1 s: each ask is perfbot's CPU too.
                wait_idle(bot.client.get, 600, database=database, poll=0.1)
                cpu = process_cpu(bot.process.pid) - cpu_before
                fake_cpu = process_cpu(setup.fake_pid) - fake_cpu_before
                load_cpu = time.process_time() - load_cpu_before
                requests = {
                    kind: (count - requests_before[kind]) / events
                    for kind, count in _requests(setup.api_url).items()
                }
                at_once, held = (
                    after - before
                    for after, before in zip(_sqlite_writes(bot.client), writes_before, strict=True)
                )
                results.append(
                    Round(
                        events / elapsed,
                        cpu / events,
                        fake_cpu / events,
                        load_cpu / events,
                        (at_once + held) / events,
                        held / max(at_once + held, 1),
                        requests["counted"],
                        requests["tokens"],
                        requests["not_modified"],
                    )
                )
            rss = _rss_kib(bot.process.pid)
            top = rss_kib(bot.process.pid)
    return results, rss, top


def _sqlite_writes(client: httpx.Client) -> tuple[float, float]:
    """perfbot_sqlite_loop_writes_total of every serving process: (at_once, lock_held)."""
    found = {"at_once": 0.0, "lock_held": 0.0}
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("perfbot_sqlite_loop_writes_total{"):
            labels, _, value = line.rpartition(" ")
            outcome = labels.split('outcome="', 1)[1].split('"', 1)[0]
            found[outcome] = float(value)
    return found["at_once"], found["lock_held"]


def _requests(api_url: str) -> dict[str, int]:
    """The fake GitHub's API requests so far, by kind (bench/fakeserver.py)."""
    answer: dict[str, int] = httpx.get(f"{api_url}/__bench/requests", timeout=10).json()
    return answer


def _rss_kib(pid: int) -> list[int]:
    """The resident set of each serving process: the children of ``pid`` when it started
    several, else ``pid`` itself."""
    return [rss_kib(process) for process in serving(pid) or [pid]]


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
    parser.add_argument("--events", type=int, default=300, help="per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=64, help="per process")
    parser.add_argument(
        "--warmup",
        type=int,
        default=600,
        help="untimed runs (first comments) before the timed ones (0: none)",
    )
    parser.add_argument(
        "--installations",
        type=int,
        default=600,
        help="installations the PRs are spread over (see the docstring for why 600)",
    )
    parser.add_argument(
        "--processes",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[2],
        help="PERFBOT_PROCESSES values to measure, comma-separated (default 2)",
    )
    parser.add_argument(
        "--shape",
        choices=("update", "first"),
        default="update",
        help="timed runs: steady-state updates of the warm-up PRs' comments (default), or "
        "first comments on PRs of their own",
    )
    args = parser.parse_args()
    updates = args.shape == "update"
    if updates and args.warmup < args.events:
        parser.error(
            f"--shape update needs --warmup of at least --events ({args.events}): each "
            "round updates that many warm-up PRs, each once"
        )

    print("REST calls per event (counted by the fake GitHub):")
    counts = calls_per_event()
    print(
        f"  targets: steady-state update {counts['steady-state update']} (<= 4), first comment "
        f"{counts['first comment, configuration cached']} (<= 5)"
    )
    for processes in args.processes:
        for latency in (0.0, 0.05):
            rounds, rss, top = events_per_second(
                args.events,
                latency,
                workers=args.workers,
                processes=processes,
                warmup=args.warmup,
                rounds=args.rounds,
                installations=args.installations,
                updates=updates,
            )
            kind = "steady-state updates" if updates else "first comments"
            label = (
                f"{processes} process(es) x {args.workers} workers, {latency * 1000:.0f} ms API "
                f"latency, {args.installations} installations, {args.events} {kind} a round "
                f"after {args.warmup} untimed" + (" and their settling updates" if updates else "")
            )
            print(f"end to end, {label}:")
            for number, measured in enumerate(rounds, 1):
                print(
                    f"  round {number}: {measured.rate:.1f} events/s; perfbot used "
                    f"{measured.cpu * 1000:.1f} ms of CPU per event, the fake GitHub "
                    f"{measured.fake_cpu * 1000:.1f} ms on the same machine "
                    f"(perfbot/fake {measured.cpu / measured.fake_cpu:.2f}), the load "
                    f"{measured.load_cpu * 1000:.2f} ms; "
                    f"{measured.writes:.1f} SQLite writes per event, {measured.held:.0%} of "
                    "them waited for another process's write lock; "
                    f"{measured.counted:.2f} counted REST calls, {measured.tokens:.2f} token "
                    f"exchanges and {measured.not_modified:.2f} answers 304 per event"
                )
            rate = statistics.median(r.rate for r in rounds)
            cpu = statistics.median(r.cpu for r in rounds)
            target = " (target >= 150 at 50 ms)" if latency else ""
            print(
                f"  median: {rate:.1f} events/s{target}; {cpu * 1000:.1f} ms of perfbot CPU per "
                f"event (target <= 5); RSS per serving process after "
                f"{args.warmup * (2 if updates else 1) + args.rounds * args.events} events: "
                + ", ".join(f"{kib / 1024:.0f} MiB" for kib in rss)
                + (f" (the supervisor: {top / 1024:.0f} MiB)" if processes > 1 else "")
            )


if __name__ == "__main__":
    main()
