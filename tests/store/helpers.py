"""Small readers shared by the store tests."""

from __future__ import annotations

import psycopg

from perfbot.store import JobStatus, Store
from perfbot.store._schema import PG_MIGRATIONS


async def job_status(store: Store, delivery_id: str) -> tuple[JobStatus, int, str | None] | None:
    """(status, attempts, last error) of a delivery's job: what most store tests compare."""
    outcome = await store.job_outcome(delivery_id)
    return None if outcome is None else (outcome.status, outcome.attempts, outcome.last_error)


async def pg_migrate_to(conn: psycopg.AsyncConnection[tuple[object, ...]], version: int) -> None:
    """The PostgreSQL schema of an older perfbot: the first ``version`` migrations."""
    await conn.execute(
        "CREATE TABLE schema_version"
        " (version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
    )
    for number, statements in enumerate(PG_MIGRATIONS[:version], start=1):
        for statement in statements:
            await conn.execute(statement)
        await conn.execute("INSERT INTO schema_version VALUES (%s, 0)", (number,))
