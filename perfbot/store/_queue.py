"""Deliveries, the sweeps for missed ones and the job queue: their statements and logic,
written once for both backends (``perfbot.store._core``).

Each backend keeps its own way of recording a delivery (SQLite commits a burst in one
transaction on the event loop, PostgreSQL writes each in one statement) and of claiming a
job (what keeps claims exclusive between processes), from the statements here.
"""

from __future__ import annotations

from typing import Final

from perfbot.store._rows import outcome_from_row
from perfbot.store._sql import SQL, SQLBackend
from perfbot.store.base import JobOutcome, SweepRecord

# A delivery (a repeat is left as it was) naming its job, if any, and that job. The job's
# id is given, not drawn: SQLite's group commit knows it before either row is written
# (PostgreSQL's identity refuses it without OVERRIDING SYSTEM VALUE: its own statement).
INSERT_DELIVERY: Final = SQL(
    "INSERT INTO deliveries (id, event, action, received_at, job_id)"
    " VALUES (:id, :event, :action, :now, :job_id)"
    " ON CONFLICT (id) DO NOTHING"
)
INSERT_JOB: Final = SQL(
    """
    INSERT INTO jobs (id, delivery_id, event, payload, serial_key, installation_id,
                      status, attempts, due_at, created_at)
    VALUES (:id, :delivery_id, :event, :payload, :serial_key, :installation_id,
            'queued', 0, :now, :now)
    """
)
DELIVERY_SEEN: Final = SQL("SELECT 1 FROM deliveries WHERE id = :id")

# The primary key makes racing inserts wait for each other: exactly one inserts.
CLAIM_REDELIVERY: Final = SQL(
    "INSERT INTO redeliveries (guid, claimed_at) VALUES (:guid, :now) ON CONFLICT (guid) DO NOTHING"
)
RELEASE_REDELIVERY: Final = SQL("DELETE FROM redeliveries WHERE guid = :guid")
LAST_SWEEP: Final = SQL("SELECT started_at, cursor FROM redelivery_sweep WHERE id = 1")
SWEEP_STARTED: Final = SQL(
    "INSERT INTO redelivery_sweep (id, started_at) VALUES (1, :now)"
    " ON CONFLICT (id) DO UPDATE SET started_at = excluded.started_at"
)
# The first cursor is taken as it is, a later one only if newer (SQLite's MAX() and
# PostgreSQL's GREATEST() treat a NULL apart: a condition says it once).
SWEEP_FINISHED: Final = SQL(
    "UPDATE redelivery_sweep SET cursor = :cursor"
    " WHERE id = 1 AND (cursor IS NULL OR cursor < :cursor)"
)

# A job of the same serial key, other than j, under a live lease (both backends' claims).
KEY_BUSY: Final = """
    EXISTS (
        SELECT 1 FROM jobs AS o
        WHERE o.serial_key = j.serial_key AND o.status = 'running'
            AND o.lease_until >= :now AND o.id <> j.id
    )
"""
# Only a live lease is extended: once it has expired another job of the serial key may have
# started, so the caller must stop rather than carry on beside it.
EXTEND_LEASE: Final = SQL(
    "UPDATE jobs SET lease_until = :until"
    " WHERE id = :id AND status = 'running' AND lease_owner = :owner AND lease_until >= :now"
)
# COMPLETE, RETRY_LATER and GIVE_UP accept an expired lease nobody took over: the work was
# done (or failed) all the same, and running it again would gain nothing.
COMPLETE: Final = SQL(
    "UPDATE jobs SET status = 'done', finished_at = :now, reason = :reason"
    " WHERE id = :id AND status = 'running' AND lease_owner = :owner"
)
RETRY_LATER: Final = SQL(
    "UPDATE jobs SET status = 'queued', due_at = :due_at, last_error = :error,"
    " lease_owner = NULL, lease_until = NULL"
    " WHERE id = :id AND status = 'running' AND lease_owner = :owner"
)
# A job that waits for its installation's turn (GitHub's pace), not for a failure: back to
# the queue with its attempt handed back, so that waiting never uses up its attempts.
DEFER: Final = SQL(
    "UPDATE jobs SET status = 'queued', due_at = :due_at, last_error = :reason,"
    " lease_owner = NULL, lease_until = NULL, attempts = attempts - 1"
    " WHERE id = :id AND status = 'running' AND lease_owner = :owner"
)
GIVE_UP: Final = SQL(
    "UPDATE jobs SET status = 'failed', last_error = :error, finished_at = :now"
    " WHERE id = :id AND status = 'running' AND lease_owner = :owner"
)
QUEUE_DEPTH: Final = SQL("SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')")
# Through the delivery's primary key: the job's own delivery_id has no index (version 13).
JOB_OUTCOME: Final = SQL(
    "SELECT j.status, j.attempts, j.last_error, j.reason"
    " FROM deliveries AS d JOIN jobs AS j ON j.id = d.job_id WHERE d.id = :delivery_id"
)

# The claims of a process known to have ended (SQLite's presence knows): its leases expire
# at once (lease_until 0: claimable, and no longer keeping its key busy), its locks go.
EXPIRE_LEASES_OF: Final = SQL(
    "UPDATE jobs SET lease_until = 0"
    " WHERE status = 'running' AND substr(lease_owner, 1, :length) = :prefix"
)
DROP_LOCKS_OF: Final = SQL("DELETE FROM locks WHERE substr(owner, 1, :length) = :prefix")


class DeliveriesSQL(SQLBackend):
    """``Store``'s ``Deliveries`` role, but for ``record_delivery`` (the backend's)."""

    async def delivery_seen(self, delivery_id: str) -> bool:
        return bool(await self._peek(DELIVERY_SEEN, {"id": delivery_id}))

    async def claim_redelivery(self, guid: str, now: float) -> bool:
        return await self._write(CLAIM_REDELIVERY, {"guid": guid, "now": now}) > 0

    async def release_redelivery(self, guid: str) -> None:
        await self._write(RELEASE_REDELIVERY, {"guid": guid})

    async def last_sweep(self) -> SweepRecord | None:
        rows = await self._fetch(LAST_SWEEP, {})
        return SweepRecord(started_at=rows[0][0], cursor=rows[0][1]) if rows else None

    async def sweep_started(self, now: float) -> None:
        await self._write(SWEEP_STARTED, {"now": now})

    async def sweep_finished(self, cursor: float) -> None:
        await self._write(SWEEP_FINISHED, {"cursor": cursor})


class QueueSQL(SQLBackend):
    """``Store``'s ``Queue`` role, but for claiming and presence (the backend's)."""

    async def extend_lease(self, job_id: int, owner: str, lease_seconds: float, now: float) -> bool:
        params = {"id": job_id, "owner": owner, "until": now + lease_seconds, "now": now}
        return await self._poke(EXTEND_LEASE, params) > 0

    async def complete(
        self, job_id: int, owner: str, now: float, reason: str | None = None
    ) -> None:
        reason = None if reason is None else self._text(reason)
        params = {"id": job_id, "owner": owner, "now": now, "reason": reason}
        await self._poke(COMPLETE, params)

    async def retry_later(
        self, job_id: int, owner: str, due_at: float, error: str, now: float
    ) -> None:
        params = {"id": job_id, "owner": owner, "due_at": due_at, "error": self._text(error)}
        await self._poke(RETRY_LATER, params)

    async def defer(self, job_id: int, owner: str, due_at: float, reason: str) -> None:
        params = {"id": job_id, "owner": owner, "due_at": due_at, "reason": self._text(reason)}
        await self._poke(DEFER, params)

    async def give_up(self, job_id: int, owner: str, error: str, now: float) -> None:
        params = {"id": job_id, "owner": owner, "now": now, "error": self._text(error)}
        await self._write(GIVE_UP, params)

    async def queue_depth(self, now: float) -> int:
        rows = await self._fetch(QUEUE_DEPTH, {})
        return int(rows[0][0])

    async def job_outcome(self, delivery_id: str) -> JobOutcome | None:
        rows = await self._fetch(JOB_OUTCOME, {"delivery_id": delivery_id})
        return outcome_from_row(rows[0]) if rows else None
