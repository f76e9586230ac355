"""Benchmark: two ``perfbot serve`` replicas on one PostgreSQL against one process on SQLite.

Both set-ups run on this machine, in this run, against the same fake GitHub (its own
process, bench/fakeserver.py): N pull requests with one finished measurement run each, whose
signed deliveries are posted concurrently; the clock stops when every PR has its comment.
Untimed warm-up runs (200 by default, for PRs of their own) go first.

  (1) one ``perfbot serve`` on a SQLite file;
  (2) two ``perfbot serve`` replicas sharing one PostgreSQL database (a private cluster on
      127.0.0.1, started as the tests start theirs), the deliveries split between them.

Reported for 0 ms and 50 ms added to every GitHub API answer: events/s, the CPU per event of
perfbot's processes, of PostgreSQL's processes (postmaster and backends, including backends
that have exited) and of the fake GitHub, and the ratio (2)/(1). Figures only: nothing is
asserted about them.

Run: .venv/bin/python bench/replicas.py [--events N] [--warmup N] [--workers N]
     [--latencies 0,50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakeprocess import Setup, fake_github, post_all, warm_up
from procstat import CLK_TCK, process_cpu, stat_fields

from tests.harness import RunningPerfbot, perfbot_process, settings_env, wait_until
from tests.pg import PrivateCluster, find_bindir


@dataclass(frozen=True)
class Result:
    events: int
    seconds: float
    posted_seconds: float
    perfbot_cpu: float  # seconds, all perfbot processes
    postgres_cpu: float  # seconds, the cluster's processes (0 for SQLite)
    fake_cpu: float

    @property
    def rate(self) -> float:
        return self.events / self.seconds

    def per_event_ms(self, cpu: float) -> float:
        return cpu / self.events * 1000


# -- CPU accounting ------------------------------------------------------------------------------


def postgres_cpu(postmaster: int) -> float:
    """CPU seconds of the cluster: the postmaster, its live processes, and the reaped ones.

    Backends come and go with connections; once the postmaster has reaped one, its time is
    in the postmaster's cutime and cstime.
    """
    fields = stat_fields(postmaster)
    reaped = (int(fields[13]) + int(fields[14])) / CLK_TCK  # cutime, cstime
    return process_cpu(postmaster) + reaped


# -- the pieces ----------------------------------------------------------------------------------


def new_database(cluster: PrivateCluster) -> str:
    """A new, empty database on the cluster; its URL."""
    name = f"perfbot_bench_{secrets.token_hex(4)}"
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return cluster.admin_url.rsplit("/", 1)[0] + f"/{name}"


def run_once(
    setup: Setup,
    bots: list[RunningPerfbot],
    events: int,
    postmaster: int | None,
    log_tail: Callable[[], str],
) -> Result:
    urls = [str(bot.client.base_url) for bot in bots]
    warm_up(setup, urls)  # untimed: what each process does once is not charged
    pids = [bot.process.pid for bot in bots]
    perfbot_before = sum(process_cpu(pid) for pid in pids)
    pg_before = postgres_cpu(postmaster) if postmaster else 0.0
    fake_before = process_cpu(setup.fake_pid)
    start = time.perf_counter()
    asyncio.run(post_all(urls, setup.deliveries))
    posted = time.perf_counter() - start
    with httpx.Client(base_url=setup.api_url, timeout=10) as control:
        try:
            wait_until(
                lambda: control.get("/__bench/commented").json()["commented"] == events,
                600,
                "every comment",
            )
        except RuntimeError:
            print(log_tail(), file=sys.stderr)
            raise
    elapsed = time.perf_counter() - start
    return Result(
        events=events,
        seconds=elapsed,
        posted_seconds=posted,
        perfbot_cpu=sum(process_cpu(pid) for pid in pids) - perfbot_before,
        postgres_cpu=(postgres_cpu(postmaster) - pg_before) if postmaster else 0.0,
        fake_cpu=process_cpu(setup.fake_pid) - fake_before,
    )


def sqlite_single(events: int, latency: float, workers: int, warmup: int) -> Result:
    with (
        tempfile.TemporaryDirectory() as tmp,
        fake_github(events, latency, Path(tmp), warmup) as setup,
    ):
        env = settings_env(
            setup.api_url,
            Path(tmp) / "perfbot.db",
            PERFBOT_WORKERS=str(workers),
            PERFBOT_PRIVATE_KEY=setup.private_key,  # the key this fake trusts
        )
        log = Path(tmp) / "perfbot.log"
        with perfbot_process(env, log) as bot:
            return run_once(setup, [bot], events, None, lambda: log.read_text()[-3000:])


def postgres_replicas(
    events: int,
    latency: float,
    workers: int,
    warmup: int,
    *,
    cluster: PrivateCluster,
    replicas: int,
) -> Result:
    assert cluster.pid is not None
    database_url = new_database(cluster)
    with (
        tempfile.TemporaryDirectory() as tmp,
        fake_github(events, latency, Path(tmp), warmup) as setup,
        ExitStack() as stack,
    ):
        env = settings_env(
            setup.api_url,
            Path(tmp) / "unused.db",
            PERFBOT_DATABASE_URL=database_url,
            PERFBOT_WORKERS=str(workers),
            PERFBOT_PRIVATE_KEY=setup.private_key,
        )
        logs = [Path(tmp) / f"replica-{i}.log" for i in range(replicas)]
        # Started one after the other: the first creates the schema.
        bots = [stack.enter_context(perfbot_process(env, log)) for log in logs]

        def tails() -> str:
            return "\n".join(log.read_text()[-1500:] for log in logs)

        return run_once(setup, bots, events, cluster.pid, tails)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--workers", type=int, default=64, help="per perfbot process")
    parser.add_argument(
        "--warmup", type=int, default=200, help="untimed runs before the timed ones (0: none)"
    )
    parser.add_argument("--replicas", type=int, default=2, help="perfbot processes on PostgreSQL")
    parser.add_argument(
        "--latencies",
        type=lambda text: [float(ms) / 1000 for ms in text.split(",")],
        default=[0.0, 0.05],
        help="added GitHub API latencies in ms, comma-separated (default 0,50)",
    )
    args = parser.parse_args()

    print(
        f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start;"
        f" {args.events} events, {args.workers} workers per perfbot process"
    )
    cluster = PrivateCluster(find_bindir())
    try:
        cluster.start()
        for latency in args.latencies:
            ms = f"{latency * 1000:.0f} ms API latency"
            single = sqlite_single(args.events, latency, args.workers, args.warmup)
            replicated = postgres_replicas(
                args.events,
                latency,
                args.workers,
                args.warmup,
                cluster=cluster,
                replicas=args.replicas,
            )
            for label, r in (
                ("(1) 1 process, SQLite    ", single),
                (f"(2) {args.replicas} replicas, PostgreSQL", replicated),
            ):
                postgres = (
                    f", PostgreSQL {r.per_event_ms(r.postgres_cpu):.1f} ms"
                    if r.postgres_cpu
                    else ""
                )
                print(
                    f"{ms}, {label}: {r.rate:6.1f} events/s (accepted in"
                    f" {r.posted_seconds:.2f} s); CPU per event: perfbot"
                    f" {r.per_event_ms(r.perfbot_cpu):.1f} ms{postgres},"
                    f" fake GitHub {r.per_event_ms(r.fake_cpu):.1f} ms"
                )
            print(f"{ms}, ratio (2)/(1): {replicated.rate / single.rate:.2f}")
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
