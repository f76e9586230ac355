"""Which processes sharing a SQLite database are alive, told by locks the kernel keeps.

Each worker of a process announces itself: it creates a file of its own in a directory
beside the database and holds an exclusive ``flock`` on it while it runs. The kernel drops
that lock when the process ends, however it ends (SIGKILL, OOM, a crash), and at no other
time: so whoever can take the lock of another's file knows that process is gone, and its
claims can be taken over at once rather than when their leases run out.

Only the processes of one host share a SQLite file, so one host's kernel knows them all.
Files whose lock cannot be tested (a lock file gone missing, an error) say nothing: their
claims are left to their leases, as are the claims of processes that announced nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

SUFFIX: Final = ".alive"
# A prefix is a worker's name (host, PID, a random part): bounded, for a sane file read.
MAX_PREFIX_BYTES: Final = 1024


@dataclass(frozen=True, slots=True)
class Departed:
    """A process found dead: the prefix of its claims' owners, and its file (still locked
    by the finder until ``Presence.forget``)."""

    prefix: str
    path: Path
    fd: int


class Presence:
    """The announcements of the processes using the SQLite file ``database``."""

    def __init__(self, database: str) -> None:
        self._dir = Path(f"{database}.processes")
        self._own: dict[str, tuple[Path, int]] = {}  # prefix → (file, locked descriptor)

    def announce(self, prefix: str) -> None:
        """Hold the sign of life of the claims whose owners start with ``prefix``."""
        if prefix in self._own:
            return
        encoded = prefix.encode()
        if not encoded or len(encoded) > MAX_PREFIX_BYTES:
            raise ValueError("a presence prefix is 1 to 1024 bytes")
        self._dir.mkdir(mode=0o700, exist_ok=True)
        name = hashlib.sha256(encoded).hexdigest()[:32]
        final = self._dir / f"{name}{SUFFIX}"
        # Locked and written under a temporary name, then renamed into view: nobody ever
        # sees an announcement without its lock held or its prefix written.
        draft = self._dir / f"{name}.draft"
        fd = os.open(draft, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.write(fd, encoded)
            os.fsync(fd)
            os.replace(draft, final)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                draft.unlink()
            raise
        self._own[prefix] = (final, fd)

    def departed(self) -> list[Departed]:
        """The announced processes that have ended, each file's lock now held by us."""
        if not self._dir.is_dir():
            return []
        mine = {path for path, _ in self._own.values()}
        found = []
        for path in sorted(self._dir.glob(f"*{SUFFIX}")):
            if path in mine:
                continue
            try:
                fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            except OSError:
                continue  # removed meanwhile by another finder
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                # Still there under its name? Another finder may have removed it between
                # our open and our lock; its prefix is then being dealt with already.
                if os.fstat(fd).st_ino != os.stat(path).st_ino:
                    raise FileNotFoundError(path)
                prefix = os.pread(fd, MAX_PREFIX_BYTES + 1, 0).decode()
                if not prefix or len(prefix.encode()) > MAX_PREFIX_BYTES:
                    raise ValueError(f"{path} holds no prefix")
            except (OSError, ValueError):
                os.close(fd)  # alive (BlockingIOError), gone, or not ours to judge
                continue
            found.append(Departed(prefix, path, fd))
        return found

    def forget(self, departed: Departed) -> None:
        """Remove a dead process's file once its claims were taken over."""
        with contextlib.suppress(OSError):
            departed.path.unlink()
        os.close(departed.fd)

    def release(self, departed: Departed) -> None:
        """Let go of a dead process's file without removing it (to be found again)."""
        os.close(departed.fd)

    def close(self) -> None:
        """This process stops announcing (its claims are finished or left to leases)."""
        for path, fd in self._own.values():
            with contextlib.suppress(OSError):
                path.unlink()
            os.close(fd)
        self._own.clear()
