"""The store's interface, by role: deliveries (``Deliveries``), the durable job queue
(``Queue``), locks (``Locks``), memories of what happened once (``Marks``), per-PR state
(``Pulls``), suspended installations (``Installations``), the measurements of every
report (``Measurements``, with ``perfbot.store.measurements``), the default branch's watch
(``Watch``) and the pace of GitHub writes (``Pacing``). ``Store`` is all of them.

One interface, several backends (SQLite embedded by default, PostgreSQL for several
replicas). Handlers and the worker only ever see ``Store``.

Times are UNIX seconds (float) passed in by the caller, so tests control the clock.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from perfbot.store.export import HistoryQuery, HistoryRow
from perfbot.store.measurements import (
    CommitSamples,
    MeasurementRecord,
    PullRun,
    RunSeries,
    SeriesKey,
)
from perfbot.store.watched import Acknowledgement, WatchedChange


class JobStatus(enum.StrEnum):
    QUEUED = "queued"  # waiting for due_at
    RUNNING = "running"  # claimed, lease_until in the future (else it can be claimed again)
    DONE = "done"
    FAILED = "failed"  # gave up; last_error says why


@dataclass(frozen=True, slots=True)
class NewJob:
    """A job to enqueue with its delivery.

    ``serial_key`` groups jobs that must never run at the same time (one pull request);
    ``payload`` is the webhook body (JSON text) the handler needs.
    """

    event: str
    payload: str
    serial_key: str
    installation_id: int | None = None


@dataclass(frozen=True, slots=True)
class Job:
    id: int
    delivery_id: str
    event: str
    payload: str
    serial_key: str
    installation_id: int | None
    attempts: int  # attempts started so far, this one included
    created_at: float
    lease_owner: str
    lease_until: float


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """How a delivery's job stands or ended, for the operator and the tests.

    ``reason`` is the handler's one line on how a DONE job ended ("ignored: the operator
    disabled acme/widget"); ``last_error`` the latest failure (of a FAILED job, why it gave
    up; of a QUEUED one, why it waits for a retry).
    """

    status: JobStatus
    attempts: int
    last_error: str | None
    reason: str | None


@dataclass(frozen=True, slots=True)
class SweepRecord:
    """The newest sweep for missed deliveries, by any process (``perfbot.app.redeliver``).

    ``started_at``: when it started, on its process's clock. ``cursor``: the
    ``delivered_at`` (GitHub's time) of the newest attempt the newest complete sweep read,
    or None before the first complete sweep.
    """

    started_at: float
    cursor: float | None


@dataclass(frozen=True, slots=True)
class PullState:
    """What perfbot remembers of one pull request."""

    repo_id: int
    number: int
    comment_id: int | None = None
    newest_head_sha: str | None = None  # the newest head a run was requested for
    reported_head_sha: str | None = None  # the head the comment's numbers are for
    reported_run_id: int | None = None
    reported_run_attempt: int | None = None
    report_body: str | None = None  # the last rendered report, without notices
    rerun_requested_by: str | None = None
    updated_at: float = 0.0
    check_run_id: int | None = None  # perfbot's check run on check_run_head_sha
    check_run_head_sha: str | None = None


@dataclass(frozen=True, slots=True)
class PaceRecord:
    """The pace of one key's GitHub writes as stored: its version, and its state (text the
    GitHub adapter writes and reads: ``perfbot.github.pacing``)."""

    version: int
    state: str


@dataclass(frozen=True, slots=True)
class SharedFile:
    """A repository's configuration file as a process read it from GitHub: its text (None:
    no such file) and when it was read (wall-clock seconds)."""

    text: str | None
    read_at: float


# The roles ---------------------------------------------------------------------------------
# ``Store`` is every role together; each role is a protocol of its own so that a part of the
# App (or a test's fake) can say which part of the store it uses.


class Deliveries(Protocol):
    """Webhook deliveries as they arrive, and the sweeps for the ones GitHub lost."""

    async def record_delivery(
        self, delivery_id: str, event: str, action: str | None, job: NewJob | None, now: float
    ) -> bool:
        """Store a delivery and its job together; False (and nothing stored) if seen before."""

    async def delivery_seen(self, delivery_id: str) -> bool: ...

    async def claim_redelivery(self, guid: str, now: float) -> bool:
        """Claim the one redelivery perfbot may ever ask GitHub for the delivery ``guid``.

        True only the first time this guid is claimed, across processes, replicas and
        restarts (the claim is stored durably and atomically; of several racing callers,
        exactly one gets True); False every later time, however long after. ``now`` is
        kept as the claim's time. Independent of ``record_delivery``: claiming a guid
        neither records nor requires a delivery.
        """

    async def release_redelivery(self, guid: str) -> None:
        """Undo a claim whose request GitHub turned down without acting on it (a rate
        limit), so that a later sweep may ask again."""

    async def last_sweep(self) -> SweepRecord | None:
        """The record of the newest sweep for missed deliveries, or None before the first."""

    async def sweep_started(self, now: float) -> None:
        """Record that a sweep starts at ``now`` (the cursor is kept)."""

    async def sweep_finished(self, cursor: float) -> None:
        """Keep ``cursor`` for the next sweep, unless the record's is newer already (a
        slower sweep finishing late never moves it back). Needs ``sweep_started`` first."""


class Queue(Protocol):
    """The durable job queue: claims under leases, and how each job ended."""

    async def claim(self, owner: str, lease_seconds: float, now: float) -> Job | None:
        """The oldest due job whose serial key has no other job under a live lease.

        A RUNNING job whose lease has expired (its process died) is claimable again.
        Claiming increments ``attempts``. Never hands one job to two owners.
        """

    async def extend_lease(self, job_id: int, owner: str, lease_seconds: float, now: float) -> bool:
        """Keep a long job's lease; False if the job is no longer ours."""

    async def announce(self, owner_prefix: str) -> None:
        """Tell the other processes on this store, where the backend can, that the claims
        whose owners start with ``owner_prefix`` belong to this live process."""

    async def release_departed(self) -> list[str]:
        """Free at once the claims (job leases, PR locks) of announced processes known to
        have ended; the owner prefixes freed. A backend that cannot know frees nothing:
        those claims wait for their leases to run out."""

    async def complete(
        self, job_id: int, owner: str, now: float, reason: str | None = None
    ) -> None:
        """DONE, with ``reason``: how the job ended, in its handler's words."""

    async def retry_later(
        self, job_id: int, owner: str, due_at: float, error: str, now: float
    ) -> None:
        """Back to QUEUED, due at ``due_at``, with the error kept for the operator."""

    async def defer(self, job_id: int, owner: str, due_at: float, reason: str) -> None:
        """Back to QUEUED, due at ``due_at``, and the attempt it was claimed for not counted:
        the job waited for its turn (GitHub's pace), it did not fail. ``reason`` is kept
        as its latest error for the operator."""

    async def give_up(self, job_id: int, owner: str, error: str, now: float) -> None: ...

    async def queue_depth(self, now: float) -> int:
        """Jobs QUEUED or RUNNING (not DONE, not FAILED)."""

    async def job_outcome(self, delivery_id: str) -> JobOutcome | None:
        """The status, attempts, last error and done reason of a delivery's job, or None."""


class Locks(Protocol):
    """Short-lived mutual exclusion between processes (a pull request's jobs, the sweep):
    held while the holder works, refreshed before it expires, released when done."""

    async def try_lock(self, key: str, owner: str, ttl_seconds: float, now: float) -> bool:
        """Take ``key`` if free or expired (or already ours: then refresh it)."""

    async def unlock(self, key: str, owner: str) -> None: ...

    async def lock_holder(self, key: str, now: float) -> str | None:
        """Who holds ``key`` at ``now`` (None: free or expired)."""


class Marks(Protocol):
    """Durable memories that something happened: "this head commit had its automatic
    re-run", "this person was answered on this PR within the hour".

    A holder leaves a mark, and it stands for a while (up to weeks), long after the
    holder's job ended; nothing waits for one. Marks share one key space with the locks
    (a mark's key names what it remembers: ``confirm:…``, ``help:…``).
    """

    async def take_mark(self, key: str, holder: str, keep_seconds: float, now: float) -> bool:
        """Leave the mark ``key``, standing until ``now + keep_seconds``, unless another
        holder's stands: whether ``holder``'s stands now.

        True if there was none (or it had lapsed), and also if it was ``holder``'s
        already: then it is kept afresh from ``now``, so a job run again takes its own
        mark again. False: another holder's mark stands, and nothing changes.
        """

    async def mark_holder(self, key: str, now: float) -> str | None:
        """Who left the mark ``key`` that stands at ``now`` (None: none, or it lapsed)."""

    async def drop_mark(self, key: str, holder: str) -> None:
        """Remove ``holder``'s mark ``key`` (what it remembers did not happen after all);
        another holder's is left standing."""


class Pulls(Protocol):
    """What perfbot remembers of each pull request."""

    async def get_pull(self, repo_id: int, number: int) -> PullState | None: ...

    async def save_pull(self, state: PullState) -> None:
        """Insert or replace the state of (repo_id, number)."""

    async def forget_repositories(self, repo_ids: list[int]) -> None:
        """Drop every pull state, measurement, watched change and acknowledgement of these
        repositories (uninstalled)."""


class Installations(Protocol):
    """Installations their owner suspended."""

    async def set_suspended(
        self,
        installation_id: int,
        suspended: bool,
        now: float,
        event_time: float | None = None,
        *,
        final: bool = False,
    ) -> bool:
        """Record that the owner suspended (or unsuspended) the installation at
        ``event_time`` (GitHub's time of the event; ``now`` stands in when it is None);
        whether the installation is suspended afterwards.

        Ordered by event time, not by arrival: an event older than the one recorded
        changes nothing (a redelivered ``suspend`` after its ``unsuspend``). At equal
        times the installation is left active (GitHub's times are whole seconds; a wrong
        "active" costs a refused call, a wrong "suspended" silence until the next event).
        ``final`` (the installation was deleted: GitHub never reuses its id) records it
        suspended for good, whatever comes later.
        """

    async def is_suspended(self, installation_id: int) -> bool: ...


class Measurements(Protocol):
    """The measurements of every report (``perfbot.store.measurements``)."""

    async def record_measurements(self, records: Sequence[MeasurementRecord]) -> int:
        """Store ``records`` in one transaction; how many rows were new.

        A record whose (repository, run id, run attempt, side, platform, metric) is stored
        already is left as it was: a redelivered event or a job run again keeps one row.
        """

    async def measurement_history(
        self,
        repo_id: int,
        keys: Sequence[SeriesKey],
        *,
        exclude_run_id: int | None,
        max_commits: int,
        max_rows: int,
        include_forks: bool = False,
    ) -> dict[SeriesKey, list[CommitSamples]]:
        """For each of ``keys`` (every metric of a report, in one query), its samples
        grouped by commit, the commit measured most recently first.

        Per key: the ``max_rows`` newest rows, then of those at most ``max_commits``
        commits (``check_bounds`` says the limits). Rows of run ``exclude_run_id`` (any
        attempt) are left out: the run being judged is no evidence of its own noise. Rows
        of fork PRs (``MeasurementRecord.from_fork``) only with ``include_forks``. Every
        key is in the answer, with an empty list when nothing is stored for it.
        """

    async def branch_history(
        self,
        repo_id: int,
        branch: str,
        keys: Sequence[SeriesKey],
        *,
        max_commits: int,
        max_rows: int,
        pushes_only: bool = False,
    ) -> dict[SeriesKey, list[CommitSamples]]:
        """``measurement_history`` of ``branch`` alone, as its trend: the rows of side
        ``push`` (its own commits) and ``base`` (what PRs against it measured of it) whose
        branch is ``branch``, never a fork PR's rows and never another repository's.
        ``pushes_only``: the branch's own pushes alone (a PR measures its base with its own
        copy of the workflow, which may change the benchmark itself)."""

    async def pull_runs(self, repo_id: int, pr_number: int, *, max_runs: int) -> list[PullRun]:
        """The newest ``max_runs`` (at most ``MAX_PULL_RUNS``) run attempts that recorded
        the head side of PR ``pr_number`` of this repository, newest first: one entry per
        (run, attempt), with the head commit it measured (``run_measurements`` reads it)."""

    async def pull_pushes(
        self, repo_id: int, pr_number: int, *, sha: str, run_id: int, max_pushes: int
    ) -> list[tuple[PullRun, list[RunSeries]]]:
        """The PR's earlier pushes, in one query: of its ``pull_runs`` (``MAX_PULL_RUNS``),
        each commit's newest attempt but commit ``sha``'s and run ``run_id``'s, the newest
        ``max_pushes`` of them, newest first, each with every series it recorded
        (``run_measurements``)."""

    async def run_measurements(self, repo_id: int, run_id: int, attempt: int) -> list[RunSeries]:
        """Every series one attempt of a run recorded (a confirmation combines them with
        the next attempt's), in no particular order; empty when it recorded none."""

    async def export_measurements(self, query: HistoryQuery) -> list[HistoryRow]:
        """The newest ``query.limit`` stored rows ``query`` selects, oldest first
        (``perfbot history``)."""

    async def has_measurements(self, repo_full_name: str) -> bool:
        """Whether any measurement of OWNER/NAME (any case) is stored."""

    async def purge_measurements(self, before: float) -> int:
        """Delete the measurements recorded before ``before``; how many were deleted."""

    async def forget_installation(self, installation_id: int) -> None:
        """Drop every measurement, watched change and acknowledgement recorded under this
        installation (it was deleted)."""


class Watch(Protocol):
    """The default branch's watch (``perfbot.store.watched``): the changes perfbot told
    about, and the acknowledgements of people who accepted a new level (of a branch, or of
    a PR's regression)."""

    async def save_watched(self, changes: Sequence[WatchedChange]) -> None:
        """Insert or replace each change, known by (repository, branch, platform, metric,
        settings, ``first_sha``); its ``created_at`` is kept as first stored."""

    async def open_changes(self, repo_id: int, branch: str) -> list[WatchedChange]:
        """The open changes of ``branch`` (at most ``_watch.MAX_WATCHED``), oldest first."""

    async def issue_changes(self, repo_id: int, issue_number: int) -> list[WatchedChange]:
        """Every change, open or closed, an issue of this repository is about."""

    async def acknowledge(self, acknowledgements: Sequence[Acknowledgement]) -> None:
        """Store acknowledgements (kept for audit: never replaced, only revoked)."""

    async def branch_acknowledgements(self, repo_id: int, branch: str) -> list[Acknowledgement]:
        """The standing acknowledgements of ``branch``'s levels, oldest first."""

    async def pull_acknowledgements(self, repo_id: int, pr_number: int) -> list[Acknowledgement]:
        """The standing acknowledgements of PR ``pr_number``'s regressions (subject
        ``pull``), oldest first."""

    async def revoke_acknowledgements(
        self,
        repo_id: int,
        pr_number: int,
        keys: Sequence[tuple[str, str]],
        *,
        login: str,
        now: float,
    ) -> None:
        """Revoke the standing acknowledgements of PR ``pr_number`` of each (platform,
        metric) of ``keys``: ``login`` at ``now``. They are kept, for audit."""


class Pacing(Protocol):
    """The pace of GitHub writes per key (an installation, the App), shared by every process
    and replica: a versioned record, replaced by compare and swap."""

    async def pace_record(self, key: str) -> PaceRecord | None:
        """The record of ``key``, or None before its first write."""

    async def swap_pace(self, key: str, version: int | None, state: str, now: float) -> bool:
        """Replace ``key``'s record with ``state`` if it is still at ``version`` (None: create
        it if there is none); whether this call did. Of racing callers with one version,
        exactly one gets True."""

    async def purge_pace(self, before: float) -> int:
        """Delete the records not written since ``before``; how many."""


class ConfigFiles(Protocol):
    """Repository configuration files as read from GitHub, shared by every process and
    replica for the short while they are trusted (``perfbot.app.configcache``): a process
    that has none cached reads another's read instead of GitHub."""

    async def config_file(self, owner: str, repo: str) -> SharedFile | None:
        """The last read of ``owner/repo``'s file (names as GitHub spells them; case does
        not matter), or None when none is stored."""

    async def save_config_file(self, owner: str, repo: str, text: str | None, now: float) -> None:
        """Store a read of ``owner/repo``'s file made at ``now`` (``text`` None: it has
        none), over any earlier one."""

    async def purge_config_files(self, before: float) -> int:
        """Delete the reads made before ``before``; how many."""


class Store(
    Deliveries,
    Queue,
    Locks,
    Marks,
    Pulls,
    Installations,
    Measurements,
    Watch,
    Pacing,
    ConfigFiles,
    Protocol,
):
    """Durable state: every role. Every method is atomic on its own."""

    async def setup(self) -> None:
        """Create or migrate the schema; safe to call on every start."""

    async def close(self) -> None: ...
