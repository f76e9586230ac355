"""Pull-request state, suspended installations, locks and marks: their statements and
logic, written once for both backends (``perfbot.store._core``)."""

from __future__ import annotations

from typing import Final

from perfbot.store._rows import PULL_COLUMNS, pull_from_row, pull_params
from perfbot.store._sql import SQL, SQLBackend
from perfbot.store._watch import FORGET_ACKS, FORGET_CHANGES
from perfbot.store.base import PullState

_PULL_KEY: Final = ("repo_id", "number")

SELECT_PULL: Final = SQL(
    f"SELECT {', '.join(PULL_COLUMNS)} FROM pulls WHERE repo_id = :repo_id AND number = :number"
)
UPSERT_PULL: Final = SQL(
    f"INSERT INTO pulls ({', '.join(PULL_COLUMNS)})"
    f" VALUES ({', '.join(f':{name}' for name in PULL_COLUMNS)})"
    " ON CONFLICT (repo_id, number) DO UPDATE SET "
    + ", ".join(f"{name} = excluded.{name}" for name in PULL_COLUMNS if name not in _PULL_KEY)
)
# One DELETE per repository, each a primary-key (or index) prefix range: no bound on how
# many ids one statement may carry, and the same statement on both backends.
FORGET_PULLS: Final = SQL("DELETE FROM pulls WHERE repo_id = :repo")
FORGET_REPOSITORY_MEASUREMENTS: Final = SQL("DELETE FROM measurements WHERE repo_id = :repo")

# Records an installation's suspension state unless the state recorded is final or set by
# a newer event (see ``Store.set_suspended``); at equal times only the active state is.
SET_SUSPENDED: Final = SQL(
    """
    INSERT INTO installation_states (id, suspended, deleted, event_at, recorded_at)
    VALUES (:id, :suspended, :deleted, :event_at, :now)
    ON CONFLICT (id) DO UPDATE SET suspended = excluded.suspended,
        deleted = excluded.deleted, event_at = excluded.event_at,
        recorded_at = excluded.recorded_at
    WHERE NOT installation_states.deleted AND (excluded.deleted
        OR excluded.event_at > installation_states.event_at
        OR (excluded.event_at = installation_states.event_at AND NOT excluded.suspended))
    """
)
SUSPENDED_STATE: Final = SQL("SELECT suspended FROM installation_states WHERE id = :id")
# A bare column as the condition: PostgreSQL's boolean, SQLite's integer held to 0 or 1.
IS_SUSPENDED: Final = SQL("SELECT 1 FROM installation_states WHERE id = :id AND suspended")

# The locks table holds the locks and the marks (``Store.take_mark``): one key space, and
# the same rules. A key is held while expires_at >= now, like a lease. The upsert is atomic
# on both backends: of two processes racing for a free key, exactly one inserts it.
TAKE_KEY: Final = SQL(
    """
    INSERT INTO locks (key, owner, expires_at) VALUES (:key, :owner, :until)
    ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
    WHERE locks.owner = excluded.owner OR locks.expires_at < :now
    """
)
DROP_KEY: Final = SQL("DELETE FROM locks WHERE key = :key AND owner = :owner")
KEY_HOLDER: Final = SQL("SELECT owner FROM locks WHERE key = :key AND expires_at >= :now")


class PullsSQL(SQLBackend):
    """``Store``'s ``Pulls`` role."""

    async def get_pull(self, repo_id: int, number: int) -> PullState | None:
        rows = await self._peek(SELECT_PULL, {"repo_id": repo_id, "number": number})
        return pull_from_row(rows[0]) if rows else None

    async def save_pull(self, state: PullState) -> None:
        await self._poke(UPSERT_PULL, pull_params(state))

    async def forget_repositories(self, repo_ids: list[int]) -> None:
        if not repo_ids:
            return
        each = [{"repo": repo_id} for repo_id in repo_ids]
        await self._atomically(
            [
                (FORGET_PULLS, each),
                (FORGET_REPOSITORY_MEASUREMENTS, each),
                (FORGET_CHANGES, each),
                (FORGET_ACKS, each),
            ]
        )


class InstallationsSQL(SQLBackend):
    """``Store``'s ``Installations`` role."""

    async def set_suspended(
        self,
        installation_id: int,
        suspended: bool,
        now: float,
        event_time: float | None = None,
        *,
        final: bool = False,
    ) -> bool:
        at = now if event_time is None else event_time
        state = {
            "id": installation_id,
            "suspended": suspended or final,
            "deleted": final,
            "event_at": at,
            "now": now,
        }
        # The state is read by a statement of its own, so that (READ COMMITTED) it sees
        # what a racing event committed when this one's upsert left the row alone.
        rows = await self._atomically(
            [(SET_SUSPENDED, [state]), (SUSPENDED_STATE, [{"id": installation_id}])]
        )
        return bool(rows) and bool(rows[0][0])

    async def is_suspended(self, installation_id: int) -> bool:
        return bool(await self._peek(IS_SUSPENDED, {"id": installation_id}))


class LocksSQL(SQLBackend):
    """``Store``'s ``Locks`` role."""

    async def try_lock(self, key: str, owner: str, ttl_seconds: float, now: float) -> bool:
        return await self._poke(TAKE_KEY, _taking(key, owner, ttl_seconds, now)) > 0

    async def unlock(self, key: str, owner: str) -> None:
        await self._poke(DROP_KEY, {"key": key, "owner": owner})

    async def lock_holder(self, key: str, now: float) -> str | None:
        rows = await self._peek(KEY_HOLDER, {"key": key, "now": now})
        return str(rows[0][0]) if rows else None


class MarksSQL(SQLBackend):
    """``Store``'s ``Marks`` role: keys of the locks table held for long (see ``TAKE_KEY``)."""

    async def take_mark(self, key: str, holder: str, keep_seconds: float, now: float) -> bool:
        return await self._poke(TAKE_KEY, _taking(key, holder, keep_seconds, now)) > 0

    async def mark_holder(self, key: str, now: float) -> str | None:
        rows = await self._peek(KEY_HOLDER, {"key": key, "now": now})
        return str(rows[0][0]) if rows else None

    async def drop_mark(self, key: str, holder: str) -> None:
        await self._poke(DROP_KEY, {"key": key, "owner": holder})


def _taking(key: str, owner: str, seconds: float, now: float) -> dict[str, object]:
    """``TAKE_KEY``'s parameters: ``key`` for ``owner`` until ``now + seconds``, unless
    someone else holds it at ``now``; kept longer (or shorter) if ``owner``'s already."""
    return {"key": key, "owner": owner, "until": now + seconds, "now": now}
