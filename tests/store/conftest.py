"""Fixtures of the store tests: a private PostgreSQL server for the session (tests/pg.py),
and stores of every backend on one database per test (``store``, ``connect``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from perfbot.store import PostgresStore, SQLiteStore, Store
from tests.pg import pg_database, pg_server, pg_url

__all__ = ["connect", "open_backend", "pg_database", "pg_server", "pg_url", "store"]

Opener = Callable[[], Store]
Connect = Callable[[], Awaitable[Store]]


@pytest.fixture(params=["sqlite", "postgres"])
def open_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """Opens a new store on one shared database per test, as another process would.

    Each PostgreSQL store has its own pool of connections, like another replica.
    """
    if request.param == "sqlite":
        path = str(tmp_path / "perfbot.db")
        return lambda: SQLiteStore(path)
    if request.param == "postgres":
        # Asked for here, not as an argument: the SQLite runs need no PostgreSQL server.
        url: str = request.getfixturevalue("pg_url")
        return lambda: PostgresStore(url)
    raise AssertionError(f"unknown backend {request.param}")


@pytest.fixture
async def connect(open_backend: Opener) -> AsyncIterator[Connect]:
    """Open and set up a store on the test's database; every one is closed afterwards."""
    opened: list[Store] = []

    async def connect_() -> Store:
        store = open_backend()
        opened.append(store)
        await store.setup()
        return store

    yield connect_
    for store in opened:
        await store.close()


@pytest.fixture
async def store(connect: Connect) -> Store:
    return await connect()
