"""The pace of GitHub writes in the store: one versioned record per key (an installation,
or the App itself), written once for both backends (``perfbot.store._core``).

The store keeps the record and knows nothing of what it says: the rules (a write a second,
a notifying one every three, 80 a minute, 500 an hour, GitHub's ``Retry-After``) are the
GitHub adapter's (``perfbot.github.pacing``). A record is replaced only by a writer that
read its current version, in one statement: of two processes or replicas booking at once,
exactly one succeeds, and the other reads again.
"""

from __future__ import annotations

from typing import Final

from perfbot.store._sql import SQL, SQLBackend
from perfbot.store.base import PaceRecord

SELECT_PACE: Final = SQL("SELECT version, state FROM write_pace WHERE key = :key")
CREATE_PACE: Final = SQL(
    "INSERT INTO write_pace (key, version, state, updated_at) VALUES (:key, 1, :state, :now)"
    " ON CONFLICT (key) DO NOTHING"
)
SWAP_PACE: Final = SQL(
    "UPDATE write_pace SET version = version + 1, state = :state, updated_at = :now"
    " WHERE key = :key AND version = :version"
)
PURGE_PACE: Final = SQL("DELETE FROM write_pace WHERE updated_at < :before")


class PacingSQL(SQLBackend):
    """``Store``'s ``Pacing`` role."""

    async def pace_record(self, key: str) -> PaceRecord | None:
        rows = await self._peek(SELECT_PACE, {"key": key})
        return PaceRecord(int(rows[0][0]), str(rows[0][1])) if rows else None

    async def swap_pace(self, key: str, version: int | None, state: str, now: float) -> bool:
        if version is None:
            return await self._poke(CREATE_PACE, {"key": key, "state": state, "now": now}) > 0
        params = {"key": key, "version": version, "state": state, "now": now}
        return await self._poke(SWAP_PACE, params) > 0

    async def purge_pace(self, before: float) -> int:
        return await self._write(PURGE_PACE, {"before": before})
