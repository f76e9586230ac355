"""A private PostgreSQL server for the tests, and a fresh database per test.

The session starts its own cluster (initdb into a temporary directory, listening on
127.0.0.1 only, on a free port, durability off for speed) and stops it by its PID at the end,
so the tests need no server set up beforehand and leave nothing running. When
``PERFBOT_TEST_DATABASE_URL`` names a server (a role allowed to create databases), that
server is used instead. Each test module gets a database, each test a schema in it; both are
dropped afterwards.

Missing PostgreSQL binaries fail the tests that need them, with the package to install: a
backend whose tests silently skip would look tested when it is not.

Import the fixtures into a conftest.py: ``from tests.pg import pg_database, pg_server, pg_url``.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import TupleRow

TEST_DATABASE_URL_VARIABLE = "PERFBOT_TEST_DATABASE_URL"
START_ATTEMPTS = 3  # a free port can be taken by someone else before the server binds it
STOP_TIMEOUT_SECONDS = 15.0
# Durability is pointless for a throwaway cluster and costs most of its time.
SERVER_OPTIONS = (
    "fsync=off",
    "synchronous_commit=off",
    "full_page_writes=off",
    "max_connections=100",
)
_INSTALL_HINT = (
    "install them (Debian: apt-get install postgresql, or run scripts/bootstrap),"
    f" or set {TEST_DATABASE_URL_VARIABLE} to a server the tests may create databases on"
)


# Run beside the test session: waits for its stdin to close, which happens however the session
# ends (even SIGKILL), then stops the postmaster if it still runs and removes the directory.
# A run killed by a timeout would otherwise leave a server behind on this shared machine.
_GUARD = """
import os, shutil, signal, sys, time
pid, root = int(sys.argv[1]), sys.argv[2]
sys.stdin.buffer.read()
try:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        ours = root.encode() in f.read()  # the PID may have been reused since
    if ours:
        os.kill(pid, signal.SIGQUIT)
        time.sleep(1)
except OSError:
    pass
shutil.rmtree(root, ignore_errors=True)
"""


class PostgresUnavailable(RuntimeError):
    """The private test server could not be started."""


@dataclass(frozen=True)
class PgServer:
    """A server the tests may create databases on; ``admin_url`` names its maintenance db."""

    admin_url: str

    def url(self, database: str) -> str:
        """``admin_url`` with its database replaced by ``database``."""
        parts = urlsplit(self.admin_url)
        return urlunsplit(parts._replace(path=f"/{database}"))


def find_bindir() -> Path:
    """The directory holding initdb, pg_ctl and postgres, newest version first."""
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, check=True, timeout=10
            ).stdout.strip()
            candidates.append(Path(out))
    # Debian installs the server outside PATH, one directory per major version.
    versions = glob.glob("/usr/lib/postgresql/*/bin")
    versions.sort(key=lambda d: int(Path(d).parent.name) if Path(d).parent.name.isdigit() else 0)
    candidates.extend(Path(d) for d in reversed(versions))
    for bindir in candidates:
        if all((bindir / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres")):
            return bindir
    raise PostgresUnavailable(
        "the PostgreSQL server binaries (initdb, pg_ctl, postgres) were not found via"
        f" pg_config --bindir or in /usr/lib/postgresql/*/bin; {_INSTALL_HINT}"
    )


def _runuser() -> str:
    # In /usr/sbin, which a non-login root shell may not have on its PATH.
    for candidate in (shutil.which("runuser"), "/usr/sbin/runuser", "/sbin/runuser"):
        if candidate and Path(candidate).is_file():
            return candidate
    raise PostgresUnavailable(
        "running as root, the tests start PostgreSQL as the postgres user with runuser"
        " (util-linux), which was not found"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PrivateCluster:
    """A PostgreSQL cluster in a temporary directory, owned by this test session."""

    def __init__(self, bindir: Path) -> None:
        self._bindir = bindir
        # initdb and postgres refuse to run as root: then the cluster belongs to `postgres`.
        self._as_root = os.geteuid() == 0
        # mkdtemp (mode 0700) directly under /tmp, not pytest's tmp_path: pytest's base
        # directory is private to root, so the postgres user could not reach into it.
        self.root = Path(tempfile.mkdtemp(prefix="perfbot-pg-"))
        self.data = self.root / "data"
        self.password = secrets.token_urlsafe(18)
        self.port = 0
        self.pid: int | None = None
        self._guard: subprocess.Popen[bytes] | None = None

    def _run(self, *argv: str, timeout: float = 120) -> None:
        command = [str(self._bindir / argv[0]), *argv[1:]]
        if self._as_root:
            command = [_runuser(), "-u", "postgres", "--", *command]
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, check=False
        )
        if result.returncode != 0:
            output = (result.stdout + result.stderr).strip()
            raise PostgresUnavailable(f"{argv[0]} failed (status {result.returncode}): {output}")

    def start(self) -> None:
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self._as_root:
            shutil.chown(self.root, "postgres", "postgres")
            shutil.chown(pwfile, "postgres", "postgres")
        # Password authentication even on a throwaway server: others share this machine and
        # 127.0.0.1, and it exercises the URL-with-password path of the store.
        self._run(
            "initdb",
            f"--pgdata={self.data}",
            "--username=postgres",
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
            "--no-instructions",
        )
        pwfile.unlink()
        last_error: PostgresUnavailable | None = None
        for _ in range(START_ATTEMPTS):
            self.port = _free_port()
            options = " ".join(
                [
                    "-c listen_addresses=127.0.0.1",
                    f"-c port={self.port}",
                    f"-k {self.root}",  # its unix socket here, not in the system's directory
                    *(f"-c {option}" for option in SERVER_OPTIONS),
                ]
            )
            try:
                self._run(
                    "pg_ctl",
                    "start",
                    "--wait",
                    "--timeout=60",
                    f"--pgdata={self.data}",
                    f"--log={self.root / 'server.log'}",
                    f"--options={options}",
                )
            except PostgresUnavailable as exc:
                last_error = PostgresUnavailable(f"{exc}\n{self._log_tail()}")
                continue
            self.pid = int((self.data / "postmaster.pid").read_text().split()[0])
            self._guard = subprocess.Popen(
                [sys.executable, "-c", _GUARD, str(self.pid), str(self.root)],
                stdin=subprocess.PIPE,
                start_new_session=True,  # a Ctrl-C meant for pytest must not end the guard
            )
            return
        assert last_error is not None
        raise last_error

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return (self.root / "server.log").read_text()[-2000:]
        return ""

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        """Stop the postmaster by its PID, then remove the directory."""
        try:
            if self.pid is not None:
                _stop_postmaster(self.pid)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            if self._guard is not None:
                assert self._guard.stdin is not None
                self._guard.stdin.close()  # nothing left for it to do: it exits
                self._guard.wait(timeout=10)


def _stop_postmaster(pid: int) -> None:
    # pg_ctl detached the postmaster, so it is not our child to wait for: poll until it is
    # gone. SIGQUIT is PostgreSQL's "immediate" shutdown: no final checkpoint (a second
    # or more), which a cluster about to be deleted does not need.
    for sig, grace in ((signal.SIGQUIT, STOP_TIMEOUT_SECONDS), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if not _running(pid):
                return
            time.sleep(0.01)
    raise PostgresUnavailable(f"the test PostgreSQL server (PID {pid}) did not stop")


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs; an exited process waiting to be reaped does not count.

    The postmaster is reparented to PID 1, which may take a second to reap it.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: fall back to "does the PID exist"
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    # The state follows the command name, which is in parentheses and may contain spaces.
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """The PostgreSQL server of this test session."""
    external = os.environ.get(TEST_DATABASE_URL_VARIABLE, "").strip()
    if external:
        yield PgServer(external)
        return
    failure = ""
    try:
        cluster = PrivateCluster(find_bindir())
    except PostgresUnavailable as exc:
        failure = str(exc)
    else:
        try:
            cluster.start()
        except (PostgresUnavailable, OSError, subprocess.SubprocessError) as exc:
            cluster.stop()
            failure = f"could not start a private PostgreSQL server: {exc}"
    if failure:
        # Fail, never skip: skipped tests would hide that the backend went untested.
        pytest.fail(failure, pytrace=False)
    try:
        yield PgServer(cluster.admin_url)
    finally:
        cluster.stop()


@dataclass(frozen=True)
class PgDatabase:
    """A database of one test module, and a connection to administer it."""

    url: str
    admin: psycopg.Connection[TupleRow]


@pytest.fixture(scope="module")
def pg_database(pg_server: PgServer) -> Iterator[PgDatabase]:
    """A new database for this test module; dropped afterwards."""
    name = f"perfbot_test_{secrets.token_hex(6)}"
    with psycopg.connect(pg_server.admin_url, autocommit=True) as server:
        server.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = pg_server.url(name)
    try:
        with psycopg.connect(url, autocommit=True) as admin:
            # A test that failed inside a transaction must not hang the next one's cleanup.
            admin.execute("SET lock_timeout = '10s'")
            yield PgDatabase(url, admin)
    finally:
        with psycopg.connect(pg_server.admin_url, autocommit=True) as server:
            # FORCE: a test that failed half-way may have left a connection open.
            server.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def pg_url(pg_database: PgDatabase) -> Iterator[str]:
    """The URL of a new, empty schema of the module's database, for this test alone.

    A schema (the URL sets search_path) rather than a database per test: creating a
    database copies a template, a tenth of a second each, the larger part of a test's time.
    Advisory locks are per database, so the tests of one module share theirs; they run one
    after the other and release them all.
    """
    schema = f"test_{secrets.token_hex(6)}"
    pg_database.admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    parts = urlsplit(pg_database.url)
    query = "&".join([*filter(None, [parts.query]), "options=" + quote(f"-csearch_path={schema}")])
    try:
        yield urlunsplit(parts._replace(query=query))
    finally:
        with contextlib.suppress(psycopg.errors.LockNotAvailable):
            # Left for the database's drop if a failed test still holds a lock in it.
            pg_database.admin.execute(
                sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema))
            )
