"""Small readers shared by the store tests."""

from __future__ import annotations

from perfbot.store import JobStatus, Store


async def job_status(store: Store, delivery_id: str) -> tuple[JobStatus, int, str | None] | None:
    """(status, attempts, last error) of a delivery's job: what most store tests compare."""
    outcome = await store.job_outcome(delivery_id)
    return None if outcome is None else (outcome.status, outcome.attempts, outcome.last_error)
