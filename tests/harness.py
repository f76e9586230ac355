"""Building blocks of the service tests: a repository on the fake GitHub, measured runs,
signed deliveries, and perfbot running against the fake (in-process or as a process)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from perfbot.app.server import create_app
from perfbot.app.settings import Settings
from perfbot.github.app import GitHubApp
from perfbot.sandbox.fakegithub import (
    CheckRun,
    Comment,
    Commit,
    FakeGitHub,
    Issue,
    Pull,
    Repo,
    Run,
    rsa_keypair,
    serve,
)
from perfbot.store import JobOutcome, JobStatus

SECRET = "test-webhook-secret"
INSTALLATION = 1
REPO_ID = 500
FORK_REPO_ID = 900

ZPERF_BASE = {
    "udp4_mbps": 13.099,
    "udp4_frag_mbps": 20.249,
    "tcp4_mbps": 5.970,
    "tcp6_mbps": 5.979,
}


def zperf_log(values: Mapping[str, float], done: bool = True) -> str:
    lines = [f"ZPERF-RESULT {name}={value:.4f}" for name, value in values.items()]
    return "\n".join([*lines, "ZPERF-DONE" if done else ""]) + "\n"


def zip_of(files: Mapping[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def report_zip(
    head: Mapping[str, float] | None = None,
    base: Mapping[str, float] | None = ZPERF_BASE,
    platform: str = "qemu_x86",
) -> bytes:
    """A perf-report artifact with zperf logs of one platform on each side."""
    files: dict[str, str | bytes] = {}
    if base is not None:
        files[f"base/{platform}/zperf.log"] = zperf_log(base)
    if head is not None:
        files[f"head/{platform}/zperf.log"] = zperf_log(head)
    return zip_of(files)


def regressed() -> dict[str, float]:
    """Head values: tcp4 down 10 % (beyond tolerance), the rest unchanged."""
    return {**ZPERF_BASE, "tcp4_mbps": ZPERF_BASE["tcp4_mbps"] * 0.9}


@dataclass
class World:
    """One installation with one repository, on a fake GitHub."""

    fake: FakeGitHub
    repo: Repo

    @classmethod
    def create(cls, files: Mapping[str, str] | None = None) -> World:
        fake = FakeGitHub()
        fake.add_installation(INSTALLATION, "acme")
        repo = fake.add_repo("acme/widget", REPO_ID, INSTALLATION, files=dict(files or {}))
        return cls(fake, repo)

    def another(
        self,
        installation_id: int,
        full_name: str,
        repo_id: int,
        files: Mapping[str, str] | None = None,
    ) -> World:
        """A world of another installation (with one repository) on the same fake GitHub."""
        owner = full_name.split("/", 1)[0]
        if installation_id not in self.fake.installations:
            self.fake.add_installation(installation_id, owner)
        repo = self.fake.add_repo(full_name, repo_id, installation_id, files=dict(files or {}))
        return World(self.fake, repo)

    def github_app(self, **options: Any) -> GitHubApp:
        """perfbot's GitHub adapter as this fake's App, over the fake's in-process transport
        (``options``: GitHubApp's own, a pacer or a dry run say); the caller closes it."""
        return GitHubApp(
            self.fake.app_id,
            rsa_keypair().private_pem,
            self.fake.api_url,
            transport=self.fake.transport(),
            **options,
        )

    def pull(
        self, number: int, head_sha: str, *, fork: bool = False, labels: tuple[str, ...] = ()
    ) -> Pull:
        if fork:
            return self.fake.add_pull(
                self.repo,
                number,
                head_sha,
                f"feature-{number}",
                head_repo_full_name="mallory/widget",
                head_repo_id=FORK_REPO_ID,
                labels=labels,
            )
        return self.fake.add_pull(self.repo, number, head_sha, f"feature-{number}", labels=labels)

    def measured_run(
        self,
        pull: Pull,
        run_id: int,
        *,
        report: bytes | None = None,
        hint: bytes | int | None = -1,
        head_sha: str | None = None,
        status: str = "completed",
        expired: bool = False,
    ) -> Run:
        """A finished measurement run of ``pull`` with its two artifacts.

        ``hint=-1`` writes the PR's own number, an int another number, bytes a raw
        artifact, None no PR-number artifact at all.
        """
        fork = pull.head_repo_id not in (None, self.repo.id)
        head_repo = ("mallory/widget", FORK_REPO_ID) if fork else None
        run = self.fake.add_run(
            self.repo,
            run_id,
            head_sha or pull.head_sha,
            pull.head_ref,
            head_repo=head_repo,
            status=status,
            conclusion="success" if status == "completed" else None,
        )
        if status == "completed":
            self.fake.add_artifact(
                self.repo,
                run,
                "perf-report",
                report if report is not None else report_zip(regressed()),
                expired=expired,
            )
            if hint is not None:
                data = (
                    hint
                    if isinstance(hint, bytes)
                    else zip_of({"pr_number.txt": f"{pull.number if hint == -1 else hint}\n"})
                )
                self.fake.add_artifact(self.repo, run, "pr-number", data)
        return run

    def delivery(
        self, run: Run, action: str = "completed", delivery_id: str | None = None
    ) -> tuple[bytes, dict[str, str]]:
        payload = self.fake.webhook_payload_workflow_run(run, action)
        payload["installation"] = {
            "id": self.repo.installation_id,
            "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==",
        }
        body = json.dumps(payload).encode()
        return body, self.fake.webhook_headers("workflow_run", body, SECRET, delivery_id)

    def comment_delivery(
        self,
        number: int,
        body: str,
        login: str = "bob",
        *,
        user_type: str = "User",
        action: str = "created",
    ) -> tuple[Comment, bytes, dict[str, str]]:
        """A new comment on PR or issue ``number`` and its signed ``issue_comment`` delivery
        (a plain issue's has no ``issue.pull_request``, as GitHub sends it)."""
        comment = self.fake.add_comment(self.repo, number, body, login, user_type)
        payload = self.fake.webhook_payload_issue_comment(comment, action)
        raw = json.dumps(payload).encode()
        return comment, raw, self.fake.webhook_headers("issue_comment", raw, SECRET)

    def issue(
        self,
        title: str = "Throughput regression on main",
        body: str | None = None,
        *,
        labels: tuple[str, ...] = (),
        login: str = "alice",
        number: int | None = None,
    ) -> Issue:
        """A plain issue of the world's repository (its next number unless ``number``);
        ``login=world.fake.bot_login`` makes it one perfbot opened."""
        app_id = self.fake.app_id if login == self.fake.bot_login else None
        return self.fake.add_issue(
            self.repo, number, title, body, labels=labels, login=login, app_id=app_id
        )

    def issue_delivery(
        self,
        issue: Issue,
        action: str = "opened",
        sender: str | None = None,
        *,
        label: str | None = None,
        changes: Mapping[str, str] | None = None,
    ) -> tuple[bytes, dict[str, str]]:
        """The signed ``issues`` delivery for ``issue`` (``label``: of ``labeled`` or
        ``unlabeled``; ``changes``: the previous ``title``/``body`` of ``edited``)."""
        payload = self.fake.webhook_payload_issues(
            issue, action, sender, label=label, changes=changes
        )
        raw = json.dumps(payload).encode()
        return raw, self.fake.webhook_headers("issues", raw, SECRET)

    def commits(self, *messages: str, branch: str | None = None) -> list[Commit]:
        """One commit per message on ``branch`` (the default one), oldest first."""
        return [self.fake.add_commit(self.repo, m, branch=branch) for m in messages]

    def merge(self, pull: Pull, *, squash: bool = True) -> Commit:
        """Merge ``pull`` into its base branch: the commit GitHub then lists it for in
        ``commits/{sha}/pulls``."""
        return self.fake.merge_pull(self.repo, pull.number, squash=squash)

    def check_run_delivery(
        self, check: CheckRun, sender: str = "bob", event: str = "check_run"
    ) -> tuple[bytes, dict[str, str]]:
        """The "Re-run" button of ``check`` (``check_suite``: "Re-run all checks" of its
        suite) pressed."""
        if event == "check_suite":
            payload = self.fake.webhook_payload_check_suite(check, "rerequested", sender)
        else:
            payload = self.fake.webhook_payload_check_run(check, "rerequested", sender)
        raw = json.dumps(payload).encode()
        return raw, self.fake.webhook_headers(event, raw, SECRET)

    def _repositories(self, repo_ids: list[int]) -> list[tuple[str, int]]:
        """(full name, id) of each id: the world's repository, or another of acme's."""
        return [
            (self.repo.full_name if rid == self.repo.id else f"acme/r{rid}", rid)
            for rid in repo_ids
        ]

    def uninstall_delivery(self, event: str, repo_ids: list[int]) -> tuple[bytes, dict[str, str]]:
        """``installation`` deleted, or ``installation_repositories`` removed, for ``repo_ids``."""
        repos = self._repositories(repo_ids)
        if event == "installation":
            payload = self.fake.webhook_payload_installation(INSTALLATION, "deleted", repos)
        else:
            payload = self.fake.webhook_payload_installation_repositories(
                INSTALLATION, "removed", removed=repos
            )
        raw = json.dumps(payload).encode()
        return raw, self.fake.webhook_headers(event, raw, SECRET)

    def installation_delivery(self, action: str) -> tuple[bytes, dict[str, str]]:
        """``installation`` ``suspend``, ``unsuspend`` (or ``created``, with the world's
        repository)."""
        repos = self._repositories([self.repo.id]) if action == "created" else []
        payload = self.fake.webhook_payload_installation(INSTALLATION, action, repos)
        raw = json.dumps(payload).encode()
        return raw, self.fake.webhook_headers("installation", raw, SECRET)

    def reactions(self, comment: Comment) -> list[str]:
        return [r.content for r in self.fake.comments[comment.id].reactions]

    def bot_comments(self, number: int) -> list[str]:
        return [c.body for c in self.fake.bot_comments(self.repo, number)]


def settings_env(github_url: str, database: Path, **extra: str) -> dict[str, str]:
    """perfbot's settings for a test. The missed-delivery sweep is off unless ``extra`` sets
    it: a sweep's read of the delivery log, 10 s after start-up, would break the tests that
    assert GitHub saw no request."""
    sweep = {"PERFBOT_REDELIVERY_MINUTES", "PERFBOT_REDELIVERY_HOURS"} & extra.keys()
    quiet = {} if sweep else {"PERFBOT_REDELIVERY_MINUTES": "0"}
    return {
        **quiet,
        "PERFBOT_APP_ID": "4242",
        "PERFBOT_PRIVATE_KEY": rsa_keypair().private_pem,
        "PERFBOT_WEBHOOK_SECRET": SECRET,
        "PERFBOT_GITHUB_URL": github_url,
        "PERFBOT_DATABASE_URL": str(database),
        "PERFBOT_WORKERS": "4",
        # Writes unpaced (the fake has no secondary limits): a test's writes follow each
        # other at once. tests/test_pacing.py runs GitHub's pace, on a clock of its own.
        "PERFBOT_WRITE_PACE_SECONDS": "0",
        **extra,
    }


class ServiceClient(httpx.Client):
    """A client of the in-process service, knowing the service's database."""

    def __init__(self, database: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.database = database


def in_process_service(
    world: World, database: Path, **extra: str
) -> contextlib.AbstractContextManager[ServiceClient]:
    """perfbot's app and workers under uvicorn in a thread of this process, on 127.0.0.1.

    GitHub is the fake's in-process transport, so tests can read the fake's state
    directly while perfbot works.
    """
    return in_process_service_on(world, database, time.time, asyncio.sleep, extra)


@contextmanager
def in_process_service_on(
    world: World,
    database: Path,
    clock: Callable[[], float],
    sleep: Callable[[float], Awaitable[None]],
    extra: Mapping[str, str],
) -> Iterator[ServiceClient]:
    """``in_process_service`` on a clock of the test's: ``clock`` is the worker's, ``sleep``
    how a write waits for its pace (``tests.virtualtime``)."""
    settings = Settings.from_env(settings_env(world.fake.api_url, database, **extra))
    app = create_app(
        settings, github_transport=world.fake.transport(), clock=clock, pace_sleep=sleep
    )
    sock = socket.socket()
    # Inherited by accepted connections (asyncio skips sockets made with proto 0): without
    # it every response of the service waits 40 ms for the client's delayed ACK.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="on",
            http="h11",
            timeout_graceful_shutdown=5,
        )
    )
    thread = threading.Thread(target=lambda: server.run(sockets=[sock]), daemon=True)
    thread.start()
    client = ServiceClient(
        database, base_url=f"http://127.0.0.1:{sock.getsockname()[1]}", timeout=10
    )
    try:
        wait_until(lambda: server.started or not thread.is_alive(), 15, "perfbot to start")
        if not server.started:
            raise AssertionError("perfbot's app did not start")
        yield client
    finally:
        client.close()
        server.should_exit = True
        thread.join(20)
        sock.close()


@contextmanager
def uvicorn_on_loopback(server: uvicorn.Server) -> Iterator[int]:
    """``server`` serving on a free port of 127.0.0.1 in a thread, until the block ends;
    the port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        thread = threading.Thread(target=lambda: server.run(sockets=[sock]), daemon=True)
        thread.start()
        try:
            wait_until(lambda: server.started or not thread.is_alive(), 15, "uvicorn to start")
            if not server.started:
                raise AssertionError("uvicorn did not start")
            yield int(sock.getsockname()[1])
        finally:
            server.should_exit = True
            thread.join(15)


def wait_until(
    condition: Callable[[], bool], timeout: float = 15.0, what: str = "", *, poll: float = 0.02
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")
        time.sleep(poll)


def wait_idle(
    get: Callable[[str], Any],
    timeout: float = 15.0,
    *,
    database: Path | None = None,
    failures_expected: bool = False,
    poll: float = 0.02,
) -> None:
    """Until perfbot's queue is empty (asked every ``poll`` seconds); then fails if a job
    ended FAILED (a crash is not idleness) unless ``failures_expected``.

    ``database`` is the service's SQLite file; by default that of the in-process service
    ``get`` belongs to (``ServiceClient``).
    """

    def idle() -> bool:
        return bool(get("/healthz").json()["queue_depth"] == 0)

    if database is None:
        database = getattr(getattr(get, "__self__", None), "database", None)
    if database is None:
        raise AssertionError("wait_idle needs the service's database to tell done from failed")
    try:
        wait_until(idle, timeout, "an empty job queue", poll=poll)
    except AssertionError as exc:
        waiting = "; ".join(
            f"delivery {delivery}: {error}" for delivery, error in _jobs(database, "queued")
        )
        raise AssertionError(f"{exc} (jobs waiting to be retried: {waiting or 'none'})") from None
    failed = failed_jobs(database)
    if failed and not failures_expected:
        listed = "; ".join(f"delivery {delivery}: {error}" for delivery, error in failed)
        raise AssertionError(f"{len(failed)} job(s) ended FAILED: {listed}")


def _read_only(database: Path) -> sqlite3.Connection:
    # Read-only and beside the service's own connections (WAL lets readers in).
    return sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)


def failed_jobs(database: Path) -> list[tuple[str, str | None]]:
    """(delivery id, last error) of every job in ``database`` that ended FAILED."""
    return _jobs(database, "failed")


def _jobs(database: Path, status: str) -> list[tuple[str, str | None]]:
    with contextlib.closing(_read_only(database)) as conn:
        rows = conn.execute(
            "SELECT delivery_id, last_error FROM jobs WHERE status = ? AND last_error IS NOT NULL"
            " ORDER BY id"
            if status == "queued"
            else "SELECT delivery_id, last_error FROM jobs WHERE status = ? ORDER BY id",
            (status,),
        ).fetchall()
    return [(str(delivery), error) for delivery, error in rows]


def job_outcome(database: Path, delivery_id: str) -> JobOutcome | None:
    """How the job of ``delivery_id`` stands or ended, read from the service's database."""
    with contextlib.closing(_read_only(database)) as conn:
        row = conn.execute(
            "SELECT status, attempts, last_error, reason FROM jobs WHERE delivery_id = ?"
            " ORDER BY id DESC LIMIT 1",
            (delivery_id,),
        ).fetchone()
    if row is None:
        return None
    status, attempts, last_error, reason = row
    return JobOutcome(JobStatus(status), int(attempts), last_error, reason)


def job_schedule(database: Path, delivery_id: str) -> tuple[float, float, int]:
    """(created_at, due_at, attempts) of the job of ``delivery_id``: when it was enqueued,
    when its latest attempt was due (a retry's scheduled time), and how many it took."""
    with contextlib.closing(_read_only(database)) as conn:
        row = conn.execute(
            "SELECT created_at, due_at, attempts FROM jobs WHERE delivery_id = ?"
            " ORDER BY id DESC LIMIT 1",
            (delivery_id,),
        ).fetchone()
    assert row is not None, f"delivery {delivery_id} has no job"
    return float(row[0]), float(row[1]), int(row[2])


def assert_done(database: Path, delivery_id: str, *words: str) -> str | None:
    """The proof that a job ran which posted nothing: it ended DONE, with a reason
    containing each of ``words``. Returns the reason."""
    outcome = job_outcome(database, delivery_id)
    assert outcome is not None, f"delivery {delivery_id} has no job"
    assert outcome.status is JobStatus.DONE, (
        f"the job of delivery {delivery_id} is {outcome.status}: {outcome.last_error}"
    )
    for word in words:
        assert word in (outcome.reason or ""), (
            f"the job of delivery {delivery_id} ended with reason {outcome.reason!r},"
            f" not one saying {word!r}"
        )
    return outcome.reason


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class RunningPerfbot:
    client: httpx.Client
    process: subprocess.Popen[bytes]


@contextmanager
def perfbot_process(
    env: Mapping[str, str],
    log: Path,
    *,
    wrapper: Sequence[str] = (),
    start_timeout: float = 30.0,
) -> Iterator[RunningPerfbot]:
    """``perfbot serve`` as a real process on a free loopback port; stopped by its PID.

    ``wrapper``: a command that runs it (valgrind, for bench/instructions.py), as slow to
    start as ``start_timeout`` allows."""
    port = free_port()
    serve = [sys.executable, "-m", "perfbot", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*wrapper, *serve],
            env={**os.environ, **env},
            # Not the checkout: `perfbot serve` reads ./.env, and a developer's must not leak in.
            cwd=log.parent,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
        try:
            wait_until(lambda: _healthy(client, process), start_timeout, "perfbot serve to start")
            yield RunningPerfbot(client, process)
        finally:
            client.close()
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=5)


def _healthy(client: httpx.Client, process: subprocess.Popen[bytes]) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"perfbot serve exited with {process.returncode}")
    try:
        return client.get("/healthz").status_code == 200
    except httpx.TransportError:
        return False


@dataclass(frozen=True)
class Recovery:
    """A job resumed after its process was killed: how long it took, and how it ended."""

    seconds: float  # from the restart (the new process spawned) to the job's comment
    outcome: JobOutcome | None


KILLED_DELIVERY = "guid-kill"


def kill_mid_job_and_restart(workdir: Path, *, timeout: float = 45.0, **extra: str) -> Recovery:
    """``perfbot serve`` SIGKILLed (by its PID) while the fake GitHub hangs the report
    download of its one job, then started again on the same database; until the job's
    comment appears, at most ``timeout`` seconds after the restart (start-up included)."""
    world = World.create()
    pull = world.pull(7, "a" * 40)
    run = world.measured_run(pull, 1001)
    database = workdir / "perfbot.db"
    with serve(world.fake) as fake:
        env = settings_env(fake.api_url, database, **extra)
        # The first download waits until the process asking for it is dead.
        held = fake.hold_next("/zip", timeout=60)
        with perfbot_process(env, workdir / "first.log") as bot:
            body, headers = world.delivery(run, delivery_id=KILLED_DELIVERY)
            assert bot.client.post("/webhook", content=body, headers=headers).status_code == 202
            wait_until(
                lambda: any(r.path.endswith("/zip") for r in fake.requests),
                30,
                "the report download to start",
            )
            bot.process.send_signal(signal.SIGKILL)  # the process perfbot_process started
            bot.process.wait(timeout=10)
        held.release()  # its asker is gone: the fake's own request ends instead of hanging on
        assert world.bot_comments(7) == [], "the killed process posted its comment"
        restarted = time.monotonic()
        with perfbot_process(env, workdir / "second.log") as bot:
            left = max(0.0, timeout - (time.monotonic() - restarted))  # start-up counts too
            wait_until(lambda: len(world.bot_comments(7)) == 1, left, "the resumed comment")
            seconds = time.monotonic() - restarted
            wait_until(
                lambda: bot.client.get("/healthz").json()["queue_depth"] == 0, 15, "the job's end"
            )
    return Recovery(seconds, job_outcome(database, KILLED_DELIVERY))
