"""bench/statements.py's probe (bench/sql_probe/sitecustomize.py) times what a process
runs on sqlite3 between SIGUSR1 and SIGUSR2, statement by statement (by its text), and
nothing outside that window; without its variable it changes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.paths import REPO

PROBE = REPO / "bench" / "sql_probe"

SCRIPT = """
import os, signal, sqlite3, sys
probed = "PERFBOT_BENCH_SQL_OUT" in os.environ  # else the signals would end the process
conn = sqlite3.connect(":memory:")
print(type(conn).__name__)
conn.execute("CREATE TABLE t (a)")
if probed:
    os.kill(os.getpid(), signal.SIGUSR1)
    import time
    while not sys.modules["sitecustomize"]._counting[0]:  # started from a thread of its own
        time.sleep(0.01)
conn.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
assert conn.execute("SELECT   a FROM t").fetchall() == [(1,), (2,), (3,)]
assert [row for row in conn.execute("SELECT a FROM t")] == [(1,), (2,), (3,)]
assert conn.execute("SELECT COUNT(*) FROM t").fetchone() == (3,)
cursor = conn.cursor()
cursor.arraysize = 2
assert cursor.execute("SELECT a FROM t ORDER BY a").fetchmany() == [(1,), (2,)]
def elsewhere():
    other = sqlite3.connect(":memory:")
    other.execute("SELECT 42").fetchall()
import threading
thread = threading.Thread(target=elsewhere)
thread.start()
thread.join()
if probed:
    os.kill(os.getpid(), signal.SIGUSR2)
    conn.execute("DELETE FROM t")  # after the count: not in the file
    import pathlib, time
    while not pathlib.Path(os.environ["PERFBOT_BENCH_SQL_OUT"] + f".{os.getpid()}").exists():
        time.sleep(0.01)
print(os.getpid())
"""


def _run(tmp_path: Path, **env: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env={**os.environ, "PYTHONPATH": str(PROBE), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=tmp_path,
    )
    return result.stdout.split()


def test_statements_between_the_signals_are_timed_by_their_text(tmp_path: Path) -> None:
    out = tmp_path / "sql"
    kind, pid = _run(tmp_path, PERFBOT_BENCH_SQL_OUT=str(out))
    assert kind == "_TimedConnection"
    lines = [line.split("\t") for line in Path(f"{out}.{pid}").read_text().splitlines()]
    counted = {(thread, sql): int(count) for _, _, count, thread, sql in lines}
    assert counted == {
        ("loop", "INSERT INTO t VALUES (?)"): 1,  # one executemany
        ("loop", "SELECT a FROM t"): 2,  # the spaces of the text do not make another one
        ("loop", "SELECT COUNT(*) FROM t"): 1,
        ("loop", "SELECT a FROM t ORDER BY a"): 1,
        ("thread", "SELECT 42"): 1,  # another thread's connection
    }
    assert all(float(wall) > 0 for _, wall, _, _, _ in lines)


def test_without_its_variable_the_probe_does_nothing(tmp_path: Path) -> None:
    kind, _ = _run(tmp_path)
    assert kind == "Connection"
    assert list(tmp_path.iterdir()) == []
