"""``perfbot replay``: one delivery through the App's own pipeline in a dry run, each
decision said on a line of its own ("why did no comment appear?").

The same steps as a delivery that reaches ``perfbot serve --dry-run``: the route table's
triage (``routes.triage``: a job, or why none), the worker's gates (an installation, not
suspended) and the job's handler run by the worker (``Worker.handle``), which asks the
configuration, the deny list and the opt-outs, lists and downloads the artifacts, proves
the PR and judges the report. GitHub is read as usual; every write stops in the adapter
(``perfbot.github.dryrun``) and is said instead. The store is a temporary SQLite file,
or a copy of the SQLite store named: the job reads and writes it as ``perfbot serve``
would, and the jobs it queues (a push run's watch) are said, never run, and never seen
by a ``perfbot serve``.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import sqlite3
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, closing, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from perfbot.app import routes
from perfbot.app.jobs import AnyJob
from perfbot.app.settings import Settings
from perfbot.app.triage import WebhookError, parse_delivery
from perfbot.app.worker import Worker
from perfbot.errors import PerfbotError
from perfbot.github.app import GitHubApp
from perfbot.github.dryrun import DryRun, WouldWrite
from perfbot.github.transport import Transport
from perfbot.store import Store, open_store

Say = Callable[[str], None]
# A would-be comment is printed up to this many lines (the /dry-run page shows it whole).
BODY_LINES: Final = 40
_STEPS: Final = (
    (re.compile(r".*/app/installations/\d+/access_tokens"), "installation token"),
    (re.compile(r".*/contents/.*"), "configuration"),
    (re.compile(r".*/actions/runs/\d+/artifacts"), "artifacts"),
    (re.compile(r".*/actions/artifacts/\d+/zip"), "artifact download"),
    (re.compile(r".*/(pulls/\d+|commits/[^/]+/pulls)"), "PR proof"),
    (re.compile(r".*/collaborators/.*"), "permission"),
    (re.compile(r".*/issues/\d+/comments"), "the PR's comments"),
    (re.compile(r"(?:/.*)?/app"), "the App"),
)


class ReplayError(PerfbotError):
    """The delivery cannot be replayed; the message is one sentence."""


@dataclass(frozen=True, slots=True)
class Recorded:
    """A delivery to replay: its id (the X-GitHub-Delivery), its event and its body."""

    delivery_id: str
    event: str
    body: bytes


def from_body(event: str, body: bytes, delivery_id: str | None = None) -> Recorded:
    """A payload file's delivery (its id, when it has none, from its bytes)."""
    return Recorded(delivery_id or f"replay-{hashlib.sha256(body).hexdigest()[:12]}", event, body)


async def fetch(settings: Settings, delivery_id: int, transport: Transport | None) -> Recorded:
    """Delivery ``delivery_id`` of the App's delivery log, read with the App's JWT."""
    github = GitHubApp(
        settings.app_id,
        settings.private_key,
        settings.github_url,
        transport=transport,
        api_version=settings.github_api_version,
    )
    try:
        found = await github.hook_delivery(delivery_id)
    finally:
        await github.close()
    if found is None:
        raise ReplayError(
            f"GitHub's delivery log has no delivery {delivery_id} (it keeps three days)."
        )
    return Recorded(found.guid, found.event, found.body)


@dataclass(frozen=True, slots=True)
class Replay:
    """How a delivery is replayed: perfbot's settings, where each line goes, the store
    (None: a temporary one), GitHub's transport (None: the network) and the clock."""

    settings: Settings
    say: Say
    store_url: str | None = None
    transport: Transport | None = None
    clock: Callable[[], float] = time.time


async def replay(how: Replay, recorded: Recorded) -> None:
    """Run ``recorded`` through the pipeline, saying each decision; raises ReplayError
    for a delivery that cannot be read."""
    lines: list[str] = []
    try:
        await _replay(replace(how, say=lines.append), recorded)
    finally:
        for index, line in enumerate(lines):
            # The handler's last decision is its outcome, said once.
            following = lines[index + 1] if index + 1 < len(lines) else ""
            if not (line.startswith("decision: ") and following == "outcome: " + line[10:]):
                how.say(line)


async def _replay(how: Replay, recorded: Recorded) -> None:
    say = how.say
    source = None if how.store_url is None else _sqlite_file(how.store_url)
    try:
        delivery = parse_delivery(
            {"x-github-delivery": recorded.delivery_id, "x-github-event": recorded.event},
            recorded.body,
        )
    except WebhookError as exc:
        raise ReplayError(f"The delivery cannot be read: {exc}.") from None
    action = f" {delivery.action}" if delivery.action else ""
    say(
        f"delivery {delivery.id}: {delivery.event}{action}, repository "
        f"{delivery.repository or '(none)'}, installation {delivery.installation_id}"
    )
    if delivery.event == "ping":
        say("triage: a ping, answered pong; nothing else happens")
        return
    job = routes.triage(delivery, how.settings.repo_disabled)
    if isinstance(job, str):
        say(f"triage: {job}")
        return
    typed = routes.decode(job.event, job.payload)
    route = routes.route_of(typed)
    say(f"triage: a job for {route.handler.rpartition(':')[2]} (serial key {job.serial_key})")
    async with _store(source) as store:
        if job.installation_id is None:
            say("gates: the delivery names no installation: ignored")
            return
        if not route.while_suspended and await store.is_suspended(job.installation_id):
            say(f"gates: installation {job.installation_id} is suspended: skipped")
            return
        denied = f"{delivery.repository} is not" if delivery.repository else "no repository is"
        say(
            f"gates: {denied} on the operator's deny list; installation "
            f"{job.installation_id} is not suspended"
        )
        await _run(how, store, delivery.id, job.installation_id, typed)


async def _run(
    how: Replay, store: Store, delivery_id: str, installation_id: int, typed: AnyJob
) -> None:
    say, settings, clock = how.say, how.settings, how.clock
    dry_run = DryRun(clock=clock)
    dry_run.observers.append(lambda *request: _said(say, *request))
    github = GitHubApp(
        settings.app_id,
        settings.private_key,
        settings.github_url,
        transport=how.transport,
        dry_run=dry_run,
        api_version=settings.github_api_version,
    )
    worker = Worker(
        store,
        github,
        concurrency=1,
        repo_disabled=settings.repo_disabled,
        clock=clock,
        watch_by_default=settings.watch,
    )
    job_log = logging.LoggerAdapter(logging.getLogger("perfbot.worker"), {"delivery": delivery_id})
    queued = await store.queue_depth(clock())
    with _decisions(say):
        try:
            reason = await worker.handle(
                typed, delivery_id, installation_id, f"replay:{secrets.token_hex(4)}", job_log
            )
        except PerfbotError as exc:
            later = "run again later" if exc.retryable else "given up"
            reason = f"the job fails and would be {later}: {exc}"
        except Exception as exc:  # a bug: said in one line, as the worker records it
            reason = f"the job fails: internal error ({type(exc).__name__})"
        finally:
            await github.close()
    say(f"outcome: {reason}")
    follow_ups = await store.queue_depth(clock()) - queued
    if follow_ups > 0:
        say(f"follow-up: {follow_ups} job(s) queued (the branch's watch, say); replay runs none")
    say(f"dry run: {dry_run.total} write(s) held back; nothing was written to GitHub")


def _said(say: Say, method: str, path: str, status: int, record: WouldWrite | None) -> None:
    if record is not None:
        say(f"would write: {record.summary} ({method} {path})")
        if record.body:
            lines = record.body.splitlines()
            for line in lines[:BODY_LINES]:
                say(f"    | {line}")
            if len(lines) > BODY_LINES:
                say(f"    | … {len(lines) - BODY_LINES} more line(s)")
        return
    step = next((name for pattern, name in _STEPS if pattern.fullmatch(path)), "read")
    say(f"{step}: {method} {path} → {status}")


class _Lines(logging.Handler):
    """The job's own log lines (its handler's decisions) said as they come."""

    def __init__(self, say: Say) -> None:
        super().__init__(logging.INFO)
        self._say = say

    def emit(self, record: logging.LogRecord) -> None:
        if record.name != "perfbot.dry_run":  # said by the transport's observer instead
            self._say(f"decision: {record.getMessage()}")


@asynccontextmanager
async def _store(source: Path | None) -> AsyncIterator[Store]:
    """A temporary store, or a copy of the SQLite file ``source``: the job writes to it
    (and may queue jobs), and no ``perfbot serve`` must ever see that."""
    with tempfile.TemporaryDirectory(prefix="perfbot-replay-") as directory:
        path = Path(directory) / "replay.db"
        if source is not None:
            _copy(source, path)
        store = open_store(str(path))
        await store.setup()
        try:
            yield store
        finally:
            await store.close()


def _sqlite_file(url: str) -> Path:
    """The SQLite file ``--store`` names; raises ReplayError for anything else."""
    scheme, sep, _ = url.partition("://")
    if sep and not url.startswith("sqlite:///"):
        raise ReplayError(
            f"--store takes a SQLite file, which replay works on a copy of; {scheme}:// "
            "stores cannot be copied here, so leave --store out (a temporary store)."
        )
    source = Path(url.removeprefix("sqlite:///"))
    if not source.is_file():
        raise ReplayError(f"--store names {source}, which is not a file.")
    return source


def _copy(source: Path, copy: Path) -> None:
    try:
        with (
            closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True)) as original,
            closing(sqlite3.connect(copy)) as duplicate,
        ):
            original.backup(duplicate)
    except sqlite3.Error as exc:
        raise ReplayError(f"--store {source} cannot be copied: {exc}.") from None


@contextmanager
def _decisions(say: Say) -> Iterator[None]:
    """The job's log lines, from INFO up, said while it runs."""
    handler, logger = _Lines(say), logging.getLogger("perfbot")
    level = logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
