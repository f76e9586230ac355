"""Times perfbot's SQLite statements, for bench/statements.py.

Python imports ``sitecustomize`` at start-up from the first folder of PYTHONPATH that has
one; bench/statements.py puts this folder there for ``perfbot serve`` and its serving
processes, with ``PERFBOT_BENCH_SQL_OUT`` set. Every sqlite3 connection they open then
times its statements, each with the fetching of its rows, by the text of the statement and
the thread that ran it (the event loop's, or another: the store's). Counting starts at
SIGUSR1 and stops at SIGUSR2, which writes ``<PERFBOT_BENCH_SQL_OUT>.<pid>`` (tab-separated:
seconds, statements, thread, SQL). Without the variable it does nothing.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any, Self

_OUT = os.environ.get("PERFBOT_BENCH_SQL_OUT")
_seconds: defaultdict[tuple[str, str], float] = defaultdict(float)
_counts: Counter[tuple[str, str]] = Counter()
_counting = threading.Event()
_lock = threading.Lock()
_SPACES = re.compile(r"\s+")


def _key(sql: str) -> tuple[str, str]:
    on_loop = threading.current_thread() is threading.main_thread()
    return ("loop" if on_loop else "thread"), _SPACES.sub(" ", sql).strip()


def _add(key: tuple[str, str], seconds: float, statements: int) -> None:
    with _lock:
        _seconds[key] += seconds
        _counts[key] += statements


class _TimedCursor(sqlite3.Cursor):
    _key: tuple[str, str] | None = None

    def execute(self, sql: str, parameters: Any = (), /) -> Self:
        if not _counting.is_set():
            return super().execute(sql, parameters)
        self._key = _key(sql)
        start = time.perf_counter()
        try:
            return super().execute(sql, parameters)
        finally:
            _add(self._key, time.perf_counter() - start, 1)

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> Self:
        if not _counting.is_set():
            return super().executemany(sql, seq_of_parameters)
        self._key = _key(sql)
        start = time.perf_counter()
        try:
            return super().executemany(sql, seq_of_parameters)
        finally:
            _add(self._key, time.perf_counter() - start, 1)

    def _fetched(self, fetch: Callable[[], Any]) -> Any:
        # A SELECT steps through its rows as they are fetched: their time is the statement's.
        if self._key is None or not _counting.is_set():
            return fetch()
        start = time.perf_counter()
        try:
            return fetch()
        finally:
            _add(self._key, time.perf_counter() - start, 0)

    def fetchall(self) -> list[Any]:
        return list(self._fetched(super().fetchall))

    def fetchone(self) -> Any:
        return self._fetched(super().fetchone)

    def __next__(self) -> Any:
        return self._fetched(super().__next__)

    def fetchmany(self, size: int | None = 1) -> list[Any]:
        return list(self._fetched(lambda: super(_TimedCursor, self).fetchmany(size)))


class _TimedConnection(sqlite3.Connection):
    # Connection.execute makes its cursor in C, not through cursor(): as sqlite3 does, but
    # with a timed cursor.
    def cursor(self, factory: Any = _TimedCursor) -> Any:
        return super().cursor(factory)

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> Any:
        return self.cursor().executemany(sql, seq_of_parameters)


def _start(*_: object) -> None:
    with _lock:
        _seconds.clear()
        _counts.clear()
    _counting.set()


def _stop(*_: object) -> None:
    _counting.clear()
    with _lock, open(f"{_OUT}.{os.getpid()}", "w", encoding="utf-8") as out:
        for (thread, sql), seconds in sorted(_seconds.items(), key=lambda item: -item[1]):
            out.write(f"{seconds}\t{_counts[thread, sql]}\t{thread}\t{sql}\n")


if _OUT:
    _connect = sqlite3.connect

    def _timed_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        kwargs.setdefault("factory", _TimedConnection)
        connection: sqlite3.Connection = _connect(*args, **kwargs)
        return connection

    # The module's function itself: perfbot calls sqlite3.connect by that name.
    sqlite3.connect = _timed_connect  # type: ignore[assignment]
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
