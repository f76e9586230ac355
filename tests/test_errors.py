"""One exception tree: every public exception perfbot defines descends from PerfbotError and
is drawn in perfbot/errors.py's docstring; the worker retries exactly the retryable ones."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import pkgutil
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import perfbot
import perfbot.errors
from perfbot.app import job_payloads, jobs, routes
from perfbot.app.artifacts import ArtifactError
from perfbot.app.context import JobContext
from perfbot.app.jobs import BadPayload, JobTooNew
from perfbot.app.pulllock import PullLocked
from perfbot.app.watch_issues import Paced
from perfbot.app.worker import Worker
from perfbot.errors import ParseError, PerfbotError
from perfbot.github.app import GitHubApp
from perfbot.github.errors import (
    ArtifactGone,
    AuthFailed,
    GitHubError,
    GitHubUnavailable,
    RateLimited,
    WaitForTurn,
)
from perfbot.github.wire import WireError
from perfbot.sandbox.fakegithub import rsa_keypair
from perfbot.store.base import JobOutcome, JobStatus, NewJob
from perfbot.store.postgres import DatabaseUnavailable
from perfbot.store.sqlite import SQLiteStore
from perfbot.support.keepalive import Lost
from perfbot.support.metrics import Metrics
from tests.harness import World


def perfbot_exceptions() -> dict[str, type[BaseException]]:
    """Every public exception class defined in perfbot, by its module path and name."""
    found: dict[str, type[BaseException]] = {}
    root = Path(perfbot.__file__).parent
    for info in pkgutil.walk_packages([str(root)], "perfbot."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue  # running it is its whole job
        module = importlib.import_module(info.name)
        for name, value in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[f"{module.__name__}.{name}"] = value
    return found


@dataclass(frozen=True)
class Drawn:
    name: str
    module: str
    parent: str | None
    extra_bases: tuple[str, ...]
    retryable: bool


_LINE = re.compile(
    r"^(?P<indent>[ │├└─]*)(?P<name>[A-Z]\w*)(?: \((?P<extra>[\w, ]+)\))?"
    r"\s+(?P<module>perfbot[\w.]*)(?P<retryable>\s+retryable)?\s*$"
)


def drawn_tree() -> dict[str, Drawn]:
    """The tree in perfbot/errors.py's docstring, by module path and name."""
    doc = perfbot.errors.__doc__ or ""
    drawn: dict[str, Drawn] = {}
    parents: list[str] = []  # the names along the current branch, by depth
    for line in doc.splitlines():
        match = _LINE.match(line.strip("\n")[4:]) if line.startswith("    ") else None
        if match is None:
            continue
        depth = len(match["indent"]) // 4
        del parents[depth:]
        key = f"{match['module']}.{match['name']}"
        extra = tuple(b.strip() for b in (match["extra"] or "").split(",") if b.strip())
        parent = parents[-1] if parents else None
        drawn[key] = Drawn(match["name"], match["module"], parent, extra, bool(match["retryable"]))
        parents.append(key)
    return drawn


def test_the_tree_is_drawn_at_all() -> None:
    drawn = drawn_tree()
    assert drawn["perfbot.errors.PerfbotError"].parent is None
    assert drawn["perfbot.github.errors.RateLimited"].parent == "perfbot.github.errors.GitHubError"
    assert len(drawn) >= 20


def test_every_public_exception_descends_from_perfbot_error() -> None:
    strays = sorted(
        key for key, cls in perfbot_exceptions().items() if not issubclass(cls, PerfbotError)
    )
    assert strays == [], "each must descend from perfbot.errors.PerfbotError"


def test_every_public_exception_is_drawn_where_it_is() -> None:
    exceptions, drawn = perfbot_exceptions(), drawn_tree()
    assert sorted(set(exceptions) - set(drawn)) == [], "not in perfbot/errors.py's tree"
    assert sorted(set(drawn) - set(exceptions)) == [], "drawn, but not defined there"
    for key, entry in drawn.items():
        cls = exceptions[key]
        if entry.parent is not None:
            assert issubclass(cls, exceptions[entry.parent]), f"{key} is drawn under {entry.parent}"
        bases = {base.__name__ for base in cls.__mro__}
        assert set(entry.extra_bases) <= bases, f"{key} lacks a base drawn beside it"
        assert entry.retryable == cls.retryable, f"{key}: retryable is {cls.retryable}"  # type: ignore[attr-defined]


def test_lock_contention_is_retried_but_is_no_github_outage() -> None:
    assert PullLocked.retryable
    assert not issubclass(PullLocked, GitHubError)


def test_the_errors_module_imports_nothing() -> None:
    source = Path(perfbot.errors.__file__).read_text()
    imports = [line for line in source.splitlines() if re.match(r"\s*(import|from)\s", line)]
    assert imports == ["from __future__ import annotations"]


# --- the worker retries exactly the retryable ones --------------------------------------------

FAILURES: list[PerfbotError] = [
    GitHubUnavailable("GitHub answered 502", 502),
    RateLimited("rate limited until the top of the hour", 30.0),
    AuthFailed("GitHub refused the App's token (401)", 401),
    DatabaseUnavailable("could not reach the database at db.example:5432"),
    PullLocked("pull request 7 is being updated by another job"),
    Paced("an issue waits for the repository's minute", 60.0),
    WaitForTurn("the installation's rate limit is spent until its reset", 30.0),
    GitHubError("GitHub refused the request (422)", 422),
    ArtifactGone("the artifact expired", 410),
    ArtifactError("perf-report", "not a zip file"),
    ParseError("base/run.json", "iperf3", "truncated JSON"),
    BadPayload("the job's payload is not a JSON object"),
    JobTooNew("job payload version 3 is newer than this perfbot"),
    Lost("the lease of job 1"),
    WireError("the connection closed before the answer ended"),
]


def test_every_retryable_exception_is_tried_through_the_worker() -> None:
    retryable = {cls for cls in perfbot_exceptions().values() if getattr(cls, "retryable", False)}
    assert retryable <= {type(failure) for failure in FAILURES}


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    store = SQLiteStore(str(tmp_path / "db"))
    await store.setup()
    try:
        yield store
    finally:
        await store.close()


async def settled(store: SQLiteStore, delivery: str) -> JobOutcome:
    """The outcome once the first run has ended: done, failed, or waiting to be retried."""
    async with asyncio.timeout(20):
        while True:
            outcome = await store.job_outcome(delivery)
            assert outcome is not None
            if outcome.status in (JobStatus.DONE, JobStatus.FAILED) or outcome.last_error:
                return outcome
            await asyncio.sleep(0.02)


@pytest.mark.parametrize("failure", FAILURES, ids=lambda failure: type(failure).__name__)
async def test_the_worker_retries_exactly_what_is_retryable(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch, failure: PerfbotError
) -> None:
    async def handle(ctx: JobContext, job: Any) -> str:
        raise failure

    monkeypatch.setattr(routes, "handler_of", lambda _job: handle)
    world = World.create()
    github = GitHubApp(world.fake.app_id, rsa_keypair().private_pem, world.fake.api_url)
    metrics = Metrics()
    worker = Worker(store, github, concurrency=1, repo_disabled=lambda _: False, metrics=metrics)
    payload = job_payloads.encode(jobs.InstallationJob("installation", "suspend", 1, None, ()))
    job = NewJob("installation", payload, "installation:1", 1)
    assert await store.record_delivery("d1", "installation", "suspend", job, time.time())
    worker.start()
    try:
        outcome = await settled(store, "d1")
    finally:
        await worker.stop()
        await github.close()
    # A turn to wait for (perfbot's own pace) hands its attempt back; anything else spends one.
    assert outcome.attempts == (0 if isinstance(failure, Paced | WaitForTurn) else 1)
    assert outcome.last_error is not None
    assert str(failure) in outcome.last_error  # its own sentence, not "internal error"
    expected = JobStatus.QUEUED if failure.retryable else JobStatus.FAILED
    assert outcome.status is expected, json.dumps(outcome.last_error)
    # The operator's metrics count the run by how it ended.
    deferred = isinstance(failure, Paced | WaitForTurn)
    counted = "deferred" if deferred else "retried" if failure.retryable else "failed"
    labels = {"event": "installation", "outcome": counted}
    assert metrics.registry.get_sample_value("perfbot_jobs_total", labels) == 1.0
