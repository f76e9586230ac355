"""SQLite: the claims of a process that ended are freed at once, never those of a live one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from perfbot.store import NewJob, SQLiteStore
from perfbot.store.presence import Presence

NOW = 1_000.0
LEASE = 600.0  # far beyond the test: only presence can free these claims

# Another process that announces a prefix on the database, says so, and waits to be
# stopped (by the test, by its PID).
ANNOUNCER = """
import sys
from perfbot.store.presence import Presence
Presence(sys.argv[1]).announce(sys.argv[2])
print("ready", flush=True)
sys.stdin.read()
"""


@contextmanager
def announcer(database: Path, prefix: str) -> Iterator[subprocess.Popen[str]]:
    with subprocess.Popen(
        [sys.executable, "-c", ANNOUNCER, str(database), prefix],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    ) as process:
        try:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"
            yield process
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)


def kill(process: subprocess.Popen[str]) -> None:
    os.kill(process.pid, signal.SIGKILL)  # the process this test started
    process.wait(timeout=10)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    opened = SQLiteStore(str(tmp_path / "perfbot.db"))
    await opened.setup()
    yield opened
    await opened.close()


async def claimed_by(store: SQLiteStore, owner: str, delivery: str, key: str) -> None:
    job = NewJob(event="push", payload="{}", serial_key=key, installation_id=1)
    assert await store.record_delivery(delivery, "push", None, job, NOW)
    claimed = await store.claim(owner, LEASE, NOW)
    assert claimed is not None
    assert claimed.delivery_id == delivery
    assert await store.try_lock(f"pull:{key}", f"{owner}:{delivery}", LEASE, NOW)


async def test_a_killed_process_claims_are_freed_at_once(
    store: SQLiteStore, tmp_path: Path
) -> None:
    database = tmp_path / "perfbot.db"
    with announcer(database, "host:1:dead:") as dead, announcer(database, "host:2:live:"):
        await claimed_by(store, "host:1:dead:1", "d-dead", "pr-1")
        await claimed_by(store, "host:2:live:1", "d-live", "pr-2")
        assert await store.release_departed() == []  # both alive
        assert await store.claim("w", LEASE, NOW + 1) is None

        kill(dead)
        assert await store.release_departed() == ["host:1:dead:"]
        assert await store.release_departed() == []  # once
        # Long before its lease runs out, the dead process's job is claimable again, and
        # its PR's lock is free; the live process keeps its own.
        again = await store.claim("w", LEASE, NOW + 1)
        assert again is not None
        assert (again.delivery_id, again.attempts) == ("d-dead", 2)
        assert await store.try_lock("pull:pr-1", "w:d-dead", LEASE, NOW + 1)
        assert not await store.try_lock("pull:pr-2", "w:d-live", LEASE, NOW + 1)
        assert await store.claim("w", LEASE, NOW + 1) is None
    assert not list(Path(f"{database}.processes").glob("*1*dead*"))


async def test_an_announcement_of_this_process_is_never_departed(
    store: SQLiteStore, tmp_path: Path
) -> None:
    await store.announce("host:3:mine:")
    await claimed_by(store, "host:3:mine:1", "d1", "pr-1")
    # Another store in this process (another worker) sees it alive too: flock is per open
    # file, not per process.
    other = SQLiteStore(str(tmp_path / "perfbot.db"))
    await other.setup()
    try:
        assert await other.release_departed() == []
        assert await other.claim("w", LEASE, NOW + 1) is None
    finally:
        await other.close()
    await store.close()  # a clean stop removes the announcement
    assert list(Path(f"{tmp_path / 'perfbot.db'}.processes").iterdir()) == []


def test_a_file_without_a_prefix_or_gone_says_nothing(tmp_path: Path) -> None:
    database = str(tmp_path / "perfbot.db")
    folder = Path(f"{database}.processes")
    folder.mkdir()
    (folder / "empty.alive").write_bytes(b"")
    assert Presence(database).departed() == []
    assert (folder / "empty.alive").exists()  # not removed: not ours to judge


def test_an_ended_announcement_is_found_by_one_finder_only(tmp_path: Path) -> None:
    database = tmp_path / "perfbot.db"
    with announcer(database, "host:4:gone:") as gone:
        kill(gone)
    first, second = Presence(str(database)), Presence(str(database))
    (found,) = first.departed()
    assert found.prefix == "host:4:gone:"
    assert second.departed() == []  # the first holds its lock
    first.forget(found)
    assert second.departed() == []  # and then it is gone
