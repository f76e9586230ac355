"""Times perfbot's SQLite statements, for bench/statements.py.

Python imports ``sitecustomize`` at start-up from the first folder of PYTHONPATH that has
one; bench/statements.py puts this folder first there for ``perfbot serve`` and its
serving processes, with ``PERFBOT_BENCH_SQL_OUT`` set. Every sqlite3 connection they open
without a factory of their own then times its statements, each with the fetching of its
rows, by the text of the statement and the thread that ran it (the event loop's, or
another: the store's): the CPU time of that thread (``time.thread_time``: sqlite3 lets go
of the GIL while a statement runs, so a statement's wall time also counts waiting for the
GIL and for a core) and its wall time. Counting starts at SIGUSR1 and stops at SIGUSR2,
after which ``<PERFBOT_BENCH_SQL_OUT>.<pid>`` appears, whole (tab-separated: CPU seconds,
wall seconds, statements, thread, SQL). Without the variable it does nothing.

The signal handlers run on the main thread, which is perfbot's event loop, between two of
its bytecodes: possibly while it adds a timing under the probe's lock. So they only flip
a flag and hand the rest to a thread of their own, which takes the lock in turn.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any, Self

_OUT = os.environ.get("PERFBOT_BENCH_SQL_OUT")
# CPU seconds, wall seconds and statements of each (thread, SQL).
_timed: defaultdict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
_counting = [False]  # a list's item: read and set without a lock, atomically under the GIL
_lock = threading.Lock()
_SPACES = re.compile(r"\s+")
# sqlite3.connect's positional parameters up to and including ``factory``.
_FACTORY_POSITION = 5


def _key(sql: str) -> tuple[str, str]:
    on_loop = threading.current_thread() is threading.main_thread()
    return ("loop" if on_loop else "thread"), _SPACES.sub(" ", sql).strip()


class _Clock:
    """A statement's CPU time on its thread and its wall time, added to its key's."""

    __slots__ = ("_cpu", "_key", "_statements", "_wall")

    def __init__(self, key: tuple[str, str], statements: int) -> None:
        self._key, self._statements = key, statements
        self._cpu, self._wall = time.thread_time(), time.perf_counter()

    def stop(self) -> None:
        cpu, wall = time.thread_time() - self._cpu, time.perf_counter() - self._wall
        with _lock:
            timed = _timed[self._key]
            timed[0] += cpu
            timed[1] += wall
            timed[2] += self._statements


class _TimedCursor(sqlite3.Cursor):
    _key: tuple[str, str] | None = None

    def execute(self, sql: str, parameters: Any = (), /) -> Self:
        run = super().execute
        return self._timed(sql, lambda: run(sql, parameters))

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> Self:
        run = super().executemany
        return self._timed(sql, lambda: run(sql, seq_of_parameters))

    def _timed(self, sql: str, run: Callable[[], Self]) -> Self:
        # The key stays for the fetches of the statement's rows (None: not counted).
        self._key = _key(sql) if _counting[0] else None
        if self._key is None:
            return run()
        clock = _Clock(self._key, 1)
        try:
            return run()
        finally:
            clock.stop()

    def _fetched(self, fetch: Callable[[], Any]) -> Any:
        # A SELECT steps through its rows as they are fetched: their time is the statement's.
        if self._key is None or not _counting[0]:
            return fetch()
        clock = _Clock(self._key, 0)
        try:
            return fetch()
        finally:
            clock.stop()

    def fetchall(self) -> list[Any]:
        return list(self._fetched(super().fetchall))

    def fetchone(self) -> Any:
        return self._fetched(super().fetchone)

    def __next__(self) -> Any:
        return self._fetched(super().__next__)

    def fetchmany(self, size: int | None = None) -> list[Any]:
        fetchmany = super().fetchmany
        if size is None:  # sqlite3's own default: the cursor's arraysize
            return list(self._fetched(fetchmany))
        return list(self._fetched(lambda: fetchmany(size)))


class _TimedConnection(sqlite3.Connection):
    # Connection.execute makes its cursor in C, not through cursor(): as sqlite3 does, but
    # with a timed cursor.
    def cursor(self, factory: Any = _TimedCursor) -> Any:
        return super().cursor(factory)

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> Any:
        return self.cursor().executemany(sql, seq_of_parameters)


def _restart() -> None:
    with _lock:
        _timed.clear()
    _counting[0] = True


def _write() -> None:
    # Written aside, then renamed: the bench waits for the name, and finds the file whole.
    final = f"{_OUT}.{os.getpid()}"
    with _lock:
        rows = sorted(_timed.items(), key=lambda item: -item[1][0])
        with open(f"{final}.part", "w", encoding="utf-8") as out:
            for (thread, sql), (cpu, wall, statements) in rows:
                out.write(f"{cpu}\t{wall}\t{int(statements)}\t{thread}\t{sql}\n")
    os.replace(f"{final}.part", final)


def _on_start(*_: object) -> None:
    threading.Thread(target=_restart, name="sql-probe").start()


def _on_stop(*_: object) -> None:
    _counting[0] = False
    threading.Thread(target=_write, name="sql-probe").start()


if _OUT:
    _connect = sqlite3.connect

    def _timed_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        # A caller's own factory is left as it is (and untimed).
        if len(args) <= _FACTORY_POSITION and "factory" not in kwargs:
            kwargs["factory"] = _TimedConnection
        connection: sqlite3.Connection = _connect(*args, **kwargs)
        return connection

    # The module's function itself: perfbot calls sqlite3.connect by that name.
    sqlite3.connect = _timed_connect  # type: ignore[assignment]
    signal.signal(signal.SIGUSR1, _on_start)
    signal.signal(signal.SIGUSR2, _on_stop)
