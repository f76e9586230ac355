"""Benchmark: the measurement store's read for the noise model, with a long history stored.

One repository measures M metrics on one platform; R runs are stored, both sides each
(every base commit measured by 5 PR runs, as when several PRs target one commit), plus a
second repository of the same size to share the table. Then, on SQLite and on PostgreSQL
(a private cluster on 127.0.0.1, started as the tests start theirs):

  * the history of one report: every metric's samples grouped by commit, in one call
    (``Store.measurement_history``, bounded per metric), the run being judged excluded;
  * one metric's (``perfbot.store.measurements.commit_samples``);
  * recording one report's rows (2 × M, ``Store.record_measurements``);
  * a purge with nothing to purge (the hourly case);
  * baseline, in the same run: reading every row of the repository's platform, which is
    what a query without a per-metric bound reads.

Medians of several calls, in milliseconds. Figures only: nothing is asserted about them.

Run: .venv/bin/python bench/measurements.py [--runs 1000] [--metrics 100] [--no-postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from perfbot.model import Better, Scale
from perfbot.store import PostgresStore, SQLiteStore, Store
from perfbot.store.measurements import MeasurementRecord, SeriesKey, commit_samples
from tests.pg import PrivateCluster, find_bindir

REPO = 500
OTHER_REPO = 501
PLATFORM = "lab"
SETTINGS = (("protocol", "tcp"), ("streams", "1"))
T0 = 1_700_000_000.0
LOAD_BATCH = 4000


def record(repo: int, run: int, side: str, metric: str, at: float) -> MeasurementRecord:
    sha = f"{run // 5:040x}" if side == "base" else f"{run:039x}h"
    return MeasurementRecord(
        repo_id=repo,
        repo_full_name=f"acme/r{repo}",
        installation_id=7,
        platform=PLATFORM,
        metric=metric,
        unit="Mbps",
        better=Better.HIGHER,
        scale=Scale.RATIO,
        side="base" if side == "base" else "head",
        sha=sha,
        run_id=run,
        run_attempt=1,
        workflow_id=11,
        workflow_name="iperf3",
        event="pull_request",
        branch="main" if side == "base" else f"feature-{run}",
        pr_number=run,
        samples=(941.0 + run % 7, 940.5, 942.25),
        settings=SETTINGS,
        recorded_at=at,
    )


def report(repo: int, run: int, metrics: list[str]) -> list[MeasurementRecord]:
    at = T0 + run * 60
    return [record(repo, run, side, m, at) for side in ("base", "head") for m in metrics]


async def load(store: Store, runs: int, metrics: list[str]) -> float:
    started = time.perf_counter()
    pending: list[MeasurementRecord] = []
    for repo in (REPO, OTHER_REPO):
        for run in range(1, runs + 1):
            pending += report(repo, run, metrics)
            if len(pending) >= LOAD_BATCH:
                await store.record_measurements(pending)
                pending = []
    await store.record_measurements(pending)
    return time.perf_counter() - started


async def median_ms(call: Callable[[], Awaitable[Any]], times: int) -> float:
    await call()  # warm: caches, prepared plans
    took = []
    for _ in range(times):
        started = time.perf_counter()
        await call()
        took.append(time.perf_counter() - started)
    return statistics.median(took) * 1000


async def bench(
    name: str,
    store: Store,
    scan: Callable[[], Awaitable[int]],
    size: Callable[[], Awaitable[int]],
    args: Any,
) -> None:
    metrics = [f"case{n}.receiver_mbps" for n in range(args.metrics)]
    await store.setup()
    loaded = await load(store, args.runs, metrics)
    rows = 2 * 2 * args.runs * args.metrics
    keys = [SeriesKey(PLATFORM, metric, SETTINGS) for metric in metrics]
    judged = args.runs  # the newest run, as if being judged now

    async def history() -> int:
        answer = await store.measurement_history(
            REPO, keys, exclude_run_id=judged, max_commits=20, max_rows=100
        )
        return sum(len(group.runs) for groups in answer.values() for group in groups)

    async def one() -> int:
        groups = await commit_samples(
            store,
            REPO,
            PLATFORM,
            metrics[0],
            SETTINGS,
            exclude_run_id=judged,
            max_commits=20,
            max_rows=100,
        )
        return sum(len(group.runs) for group in groups)

    new_run = iter(range(args.runs + 1, args.runs + 10_000))

    async def record_one() -> int:
        return await store.record_measurements(report(REPO, next(new_run), metrics))

    returned = await history()
    per_row = await size() / rows
    print(f"{name}: {rows:,} rows stored (loaded in {loaded:.1f} s), {per_row:.0f} bytes a row")
    print(
        f"  report history, {len(keys)} metrics, ≤100 rows and ≤20 commits each:"
        f" {await median_ms(history, 20):.1f} ms ({returned:,} rows returned)"
    )
    print(f"  one metric's history: {await median_ms(one, 20):.2f} ms ({await one()} rows)")
    print(
        f"  recording one report ({2 * len(metrics)} rows): "
        f"{await median_ms(record_one, 10):.1f} ms"
    )
    print(
        f"  purge with nothing to purge: "
        f"{await median_ms(lambda: store.purge_measurements(T0 - 1), 10):.2f} ms"
    )
    print(
        f"  baseline, every row of the repository's platform: "
        f"{await median_ms(scan, 5):.1f} ms ({await scan():,} rows)"
    )
    await store.close()


async def sqlite_bench(args: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder, "bench.db"))
        store = SQLiteStore(path)

        async def scan() -> int:
            def read() -> int:
                conn = sqlite3.connect(path)
                try:
                    return len(
                        conn.execute(
                            "SELECT sha, samples, recorded_at FROM measurements"
                            " WHERE repo_id = ? AND platform = ?",
                            (REPO, PLATFORM),
                        ).fetchall()
                    )
                finally:
                    conn.close()

            return await asyncio.to_thread(read)

        async def size() -> int:
            def checkpointed() -> int:
                conn = sqlite3.connect(path)
                try:
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                finally:
                    conn.close()
                return Path(path).stat().st_size

            return await asyncio.to_thread(checkpointed)

        await bench("SQLite", store, scan, size, args)


async def postgres_bench(args: Any) -> None:
    cluster = PrivateCluster(find_bindir())
    cluster.start()
    try:
        name = f"bench_{secrets.token_hex(4)}"
        with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        url = cluster.admin_url.rsplit("/", 1)[0] + f"/{name}"
        store = PostgresStore(url)

        async def scan() -> int:
            conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
            async with conn:
                cur = await conn.execute(
                    "SELECT sha, samples, recorded_at FROM measurements"
                    " WHERE repo_id = %s AND platform = %s",
                    (REPO, PLATFORM),
                )
                return len(await cur.fetchall())

        async def size() -> int:
            conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
            async with conn:
                cur = await conn.execute("SELECT pg_total_relation_size('measurements')")
                row = await cur.fetchone()
            assert row is not None
            return int(row[0])

        await bench("PostgreSQL", store, scan, size, args)
    finally:
        cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--metrics", type=int, default=100)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    asyncio.run(sqlite_bench(args))
    if not args.no_postgres:
        asyncio.run(postgres_bench(args))


if __name__ == "__main__":
    main()
