"""Benchmark of the SQLite statements of a steady-state update: which, how many, and how
long each takes in ``perfbot serve``'s own processes.

``--events`` PRs (one installation each, so that GitHub's pace holds nothing back) get
their first comment and a settling update, untimed; then one more update each is
delivered, and every statement the serving processes run until the last job has ended is
timed (bench/sql_probe/sitecustomize.py: each with the fetching of its rows, by its text
and by the thread that ran it, the event loop's or the store's). Beside them, the same
processes' CPU per update, and in this process the cost that makes a statement dear with
two processes: a point read by primary key alone, and just after another connection's
write (SQLite then drops its page cache and reads the pages again).

A statement's figure is its thread's CPU time in it (``time.thread_time``); its wall time,
printed beside, also counts waiting for the disk, a lock, the GIL (sqlite3 lets go of it
while a statement runs) and a core. The bench asks ``/healthz`` every 0.25 s whether the
last job has ended: its ``SELECT COUNT(*) FROM jobs`` on the store's thread is the
bench's, not an update's.

Run: .venv/bin/python bench/statements.py [--events N] [--processes N] [--top N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakeprocess import fake_github, post_all, wait_commented, warm_up
from procstat import process_cpu, serving

from tests.harness import perfbot_process, settings_env, wait_idle, wait_until

PROBE = Path(__file__).resolve().parent / "sql_probe"


@dataclass(frozen=True)
class Timed:
    thread: str  # "loop" or "thread"
    sql: str
    cpu: float  # seconds of its thread's CPU
    wall: float  # seconds
    statements: int


def measure(events: int, processes: int) -> tuple[list[Timed], float]:
    """The statements of ``events`` steady-state updates, and the serving processes' CPU
    seconds meanwhile."""
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        out = scratch / "sql"
        with fake_github(
            events, 0.0, scratch, warmup=events, installations=events, updates=True
        ) as setup:
            env = settings_env(
                setup.api_url,
                scratch / "perfbot.db",
                PERFBOT_PROCESSES=str(processes),
                PERFBOT_PRIVATE_KEY=setup.private_key,
                PERFBOT_WRITE_PACE_SECONDS="1",
                # First on the path, before whatever perfbot the caller put there.
                PYTHONPATH=os.pathsep.join(
                    part for part in (str(PROBE), os.environ.get("PYTHONPATH", "")) if part
                ),
                PERFBOT_BENCH_SQL_OUT=str(out),
            )
            with perfbot_process(env, scratch / "perfbot.log") as bot:
                url = str(bot.client.base_url)
                warm_up(setup, [url])
                wait_idle(bot.client.get, 300, database=scratch / "perfbot.db")
                probed = serving(bot.process.pid) or [bot.process.pid]
                cpu_before = process_cpu(bot.process.pid)  # the supervisor's too
                for pid in probed:
                    os.kill(pid, signal.SIGUSR1)
                time.sleep(0.2)  # the handlers start the count from a thread of their own
                asyncio.run(post_all([url], setup.deliveries[:events]))
                wait_commented(setup.api_url, events, 600, "every update's comment")
                wait_idle(bot.client.get, 300, database=scratch / "perfbot.db", poll=0.25)
                cpu = process_cpu(bot.process.pid) - cpu_before
                for pid in probed:
                    os.kill(pid, signal.SIGUSR2)
                files = [Path(f"{out}.{pid}") for pid in probed]
                # Each appears whole (written aside, then renamed).
                wait_until(lambda: all(f.exists() for f in files), 30, "the probe's files")
                return _merged(files), cpu


def _merged(files: list[Path]) -> list[Timed]:
    sums: defaultdict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for file in files:
        for line in file.read_text(encoding="utf-8").splitlines():
            cpu, wall, count, thread, sql = line.split("\t", 4)
            for place, value in enumerate((cpu, wall, count)):
                sums[thread, sql][place] += float(value)
    return sorted(
        (
            Timed(thread, sql, cpu, wall, int(count))
            for (thread, sql), (cpu, wall, count) in sums.items()
        ),
        key=lambda timed: -timed.cpu,
    )


def point_reads(reads: int = 3000) -> tuple[float, float]:
    """Seconds per point read by primary key on a file, alone and just after another
    connection's write (two connections, as two perfbot processes have)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "reads.db")
        reader = sqlite3.connect(path, isolation_level=None)
        writer = sqlite3.connect(path, isolation_level=None)
        try:
            reader.execute("PRAGMA journal_mode = WAL")
            writer.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT)")
            writer.execute("CREATE TABLE other (id INTEGER PRIMARY KEY, n INTEGER)")
            writer.executemany(
                "INSERT INTO rows VALUES (?, ?)", ((n, "x" * 300) for n in range(20_000))
            )
            timings = []
            for write_between in (False, True):
                took = 0.0
                for n in range(reads):
                    if write_between:
                        writer.execute("INSERT OR REPLACE INTO other VALUES (?, ?)", (n % 50, n))
                    start = time.perf_counter()
                    reader.execute(
                        "SELECT body FROM rows WHERE id = ?", (n * 7 % 20_000,)
                    ).fetchall()
                    took += time.perf_counter() - start
                timings.append(took / reads)
        finally:
            reader.close()
            writer.close()
    return timings[0], timings[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=300, help="updates timed")
    parser.add_argument("--processes", type=int, default=2, help="PERFBOT_PROCESSES")
    parser.add_argument("--top", type=int, default=25, help="statements listed")
    args = parser.parse_args()

    timed, cpu = measure(args.events, args.processes)
    per = args.events
    print(
        f"SQLite statements of {per} steady-state updates, {args.processes} serving "
        "process(es), timed in them:"
    )
    for thread, name in (("loop", "the event loop's connection"), ("thread", "the store's thread")):
        mine = [t for t in timed if t.thread == thread]
        print(
            f"  on {name}: {sum(t.statements for t in mine) / per:.1f} statements, "
            f"{sum(t.cpu for t in mine) / per * 1000:.2f} ms of CPU an update "
            f"({sum(t.wall for t in mine) / per * 1000:.2f} ms of wall time)"
        )
    loop_cpu = sum(t.cpu for t in timed if t.thread == "loop")
    print(
        f"  perfbot's CPU (all its processes, the probe's own cost included): "
        f"{cpu / per * 1000:.2f} ms an update; the loop's statements are {loop_cpu / cpu:.0%} "
        "of it"
    )
    print(
        f"  the {args.top} dearest in CPU (µs an update, statements an update, µs each, "
        "wall µs each, thread):"
    )
    for t in timed[: args.top]:
        each = max(t.statements, 1)
        print(
            f"    {t.cpu / per * 1e6:7.1f} {t.statements / per:5.2f} {t.cpu / each * 1e6:7.1f} "
            f"{t.wall / each * 1e6:7.1f}  {t.thread:6} {t.sql[:90]}"
        )
    alone, after_write = point_reads()
    print(
        f"a point read by primary key, in this process: {alone * 1e6:.1f} µs alone, "
        f"{after_write * 1e6:.1f} µs just after another connection's write "
        f"({after_write / alone:.1f}x: the page cache is dropped and read again)"
    )


if __name__ == "__main__":
    main()
