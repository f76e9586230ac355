"""Repository configuration files shared between processes: the last read of each file,
written once for both backends (``perfbot.store._core``).

The store keeps the text and when it was read, and knows nothing of what it says: how
long a read is trusted is the configuration cache's (``perfbot.app.configcache``).
"""

from __future__ import annotations

from typing import Final

from perfbot.store._sql import SQL, SQLBackend
from perfbot.store.base import SharedFile

SELECT_FILE: Final = SQL(
    "SELECT content, read_at FROM config_files WHERE owner = :owner AND repo = :repo"
)
# A later read replaces an earlier one, never the other way round (two processes that
# read the file at once may store their reads in either order).
UPSERT_FILE: Final = SQL(
    "INSERT INTO config_files (owner, repo, content, read_at)"
    " VALUES (:owner, :repo, :content, :now)"
    " ON CONFLICT (owner, repo) DO UPDATE SET content = excluded.content,"
    " read_at = excluded.read_at WHERE config_files.read_at <= excluded.read_at"
)
PURGE_FILES: Final = SQL("DELETE FROM config_files WHERE read_at < :before")


class ConfigFilesSQL(SQLBackend):
    """``Store``'s ``ConfigFiles`` role."""

    async def config_file(self, owner: str, repo: str) -> SharedFile | None:
        rows = await self._peek(SELECT_FILE, {"owner": owner.lower(), "repo": repo.lower()})
        if not rows:
            return None
        content, read_at = rows[0]
        return SharedFile(None if content is None else str(content), float(read_at))

    async def save_config_file(self, owner: str, repo: str, text: str | None, now: float) -> None:
        if text is not None and self._text(text) != text:
            return  # this database cannot hold the text as it is: not shared
        params = {"owner": owner.lower(), "repo": repo.lower(), "content": text, "now": now}
        await self._poke(UPSERT_FILE, params)

    async def purge_config_files(self, before: float) -> int:
        return await self._write(PURGE_FILES, {"before": before})
