"""The App's side of the measurement store: both sides of every report are recorded for the
noise model (``perfbot.store.measurements``), and what is older than the retention is purged
(with the write pace and the configuration files' shared reads of long ago).

Recording never stands in the way of the comment: a failure is logged and the job goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Final, Protocol

from perfbot.app.context import JobContext
from perfbot.engine.judge import noise
from perfbot.engine.judge.compare import NoiseKnowledge
from perfbot.engine.judge.noise import Noise
from perfbot.engine.read.sides import Series, SideReport
from perfbot.github.types import PullInfo
from perfbot.store.base import Store
from perfbot.store.measurements import CommitSamples, MeasuredSide, MeasurementRecord, SeriesKey

log = logging.getLogger("perfbot.measurements")

# What one report may add to the store at most. A real report has a few hundred series;
# an artifact is untrusted (a fork's author writes every byte), so a flood of metrics or
# samples must not grow the database without bound. Beyond these, the rest is left out
# and the log says so.
MAX_RECORDED_ROWS: Final = 10_000
MAX_RECORDED_SAMPLES: Final = 200_000
# Up to this many series, a report's rows are made on the event loop: a thread costs more.
INLINE_SERIES: Final = 500
DAY_SECONDS: Final = 86_400.0
# How often each process purges measurements older than the retention. Cheap when there is
# nothing to purge (an index range); the first purge runs at start-up.
PURGE_INTERVAL_SECONDS: Final = 3600.0
# How long a configuration file's shared read stays in the store (``ConfigFiles``).
CONFIG_KEPT_SECONDS: Final = 3600.0


class MeasuredRun(Protocol):
    """What recording needs of a workflow run (``perfbot.app.jobs.Run`` has it)."""

    @property
    def id(self) -> int: ...
    @property
    def attempt(self) -> int: ...
    @property
    def event(self) -> str: ...
    @property
    def head_sha(self) -> str: ...
    @property
    def head_branch(self) -> str: ...
    @property
    def head_repo_id(self) -> int | None: ...
    @property
    def repo_id(self) -> int: ...
    @property
    def workflow_name(self) -> str: ...
    @property
    def full_name(self) -> str: ...


async def record_report_measurements(
    ctx: JobContext,
    run: MeasuredRun,
    pull: PullInfo,
    sides: tuple[SideReport, SideReport] | None,
) -> int:
    """Record the base and head sides of a PR's report; how many rows were new.

    ``sides`` is None when the report could not be read (nothing to record). Any failure
    is logged and returns 0: the comment is posted all the same.
    """
    if sides is None:
        return 0
    try:
        installation_id = ctx.installation_id
        if await ctx.suspended():
            # Suspended or deleted meanwhile: a deleted installation's data is gone for good.
            return 0
        now = ctx.now()
        if sum(len(side.series) for side in sides) <= INLINE_SERIES:
            records = report_records(run, pull, sides, installation_id, now)
        else:  # 10,000 series take tens of milliseconds: off the event loop
            records = await asyncio.to_thread(
                report_records, run, pull, sides, installation_id, now
            )
        stored = await ctx.store.record_measurements(records)
    except Exception as exc:
        ctx.log.warning(
            "measurements of run %s not recorded: %s", run.id, type(exc).__name__, exc_info=True
        )
        return 0
    ctx.log.info("recorded %d new measurements of run %s (%d series)", stored, run.id, len(records))
    return stored


# The same-commit history one report's noise is learned from, per series: the newest
# commits and rows only (noise drifts with runners and images over months).
NOISE_COMMITS: Final = 20
NOISE_ROWS: Final = 200


async def learned_noise(
    ctx: JobContext,
    run: MeasuredRun,
    pull: PullInfo,
    sides: tuple[SideReport, SideReport],
) -> NoiseKnowledge:
    """What earlier measurements of the same commits teach about each metric's noise.

    Read before this run is recorded, and without any of its attempts: a run is never
    evidence of its own noise. Rows of fork PRs are left out (their author wrote them).
    A failure is logged and teaches nothing: the comparison then uses the run's own
    repeats and the formats' priors.
    """
    keys = series_keys(sides)
    if not keys:
        return {}
    try:
        history = await ctx.store.measurement_history(
            run.repo_id,
            keys,
            exclude_run_id=run.id,
            max_commits=NOISE_COMMITS,
            max_rows=NOISE_ROWS,
        )
    except Exception as exc:
        ctx.log.warning(
            "noise history of run %s not read: %s", run.id, type(exc).__name__, exc_info=True
        )
        return {}
    scales = {
        (platform, metric): series.scale
        for side in sides
        for (platform, metric), series in side.series.items()
    }
    knowledge: dict[tuple[str, str], Noise] = {}
    for key, commits in history.items():
        head_series = sides[1].series.get((key.platform, key.metric))
        if head_series is not None and head_series.settings != key.settings:
            continue  # the base's settings: the comparison says "not comparable" anyway
        scale = scales.get((key.platform, key.metric))
        if scale is None or not commits:
            continue
        groups = [[x for samples in commit.runs for x in samples] for commit in commits]
        estimate = noise.learned(groups, scale, _evidence(commits, pull))
        if estimate is not None:
            knowledge[(key.platform, key.metric)] = estimate
    return knowledge


def _evidence(commits: list[CommitSamples], pull: PullInfo) -> str:
    """``8 measurements of main@abc1234``, or ``23 measurements of 4 commits``."""
    repeated = [c for c in commits if sum(len(samples) for samples in c.runs) >= 2]
    count = sum(len(samples) for c in repeated for samples in c.runs)
    if len(repeated) == 1:
        sha = repeated[0].sha
        where = f"{pull.base_ref}@{sha[:7]}" if sha == pull.base_sha else sha[:7]
        return f"{count} measurements of {where}"
    return f"{count} measurements of {len(repeated)} commits"


def report_records(
    run: MeasuredRun,
    pull: PullInfo,
    sides: tuple[SideReport, SideReport],
    installation_id: int | None,
    now: float,
) -> list[MeasurementRecord]:
    """The rows of a PR run's report: the base side measured the PR's base commit (the one
    the comment names), the head side the run's head commit."""
    base, head = sides
    # A fork's author controls the artifact, its base side included (a deleted fork's
    # head repository is None: untrusted too).
    from_fork = run.head_repo_id != run.repo_id
    # What every row has alike, read off the run once (``full_name`` is made each time).
    repo_id, full_name, run_id, attempt = run.repo_id, run.full_name, run.id, run.attempt
    workflow_name, event, number = run.workflow_name, run.event, pull.number
    records: list[MeasurementRecord] = []
    samples = 0
    measured: tuple[tuple[MeasuredSide, SideReport, str, str], ...] = (
        ("base", base, pull.base_sha, pull.base_ref),
        ("head", head, run.head_sha, run.head_branch),
    )
    for side, report, sha, branch in measured:
        for platform, metric, series in _series_of(report):
            samples += len(series.samples)
            if len(records) >= MAX_RECORDED_ROWS or samples > MAX_RECORDED_SAMPLES:
                log.warning(
                    "run %s of %s: only the first %d series are recorded (limits: %d series,"
                    " %d samples)",
                    run_id,
                    full_name,
                    len(records),
                    MAX_RECORDED_ROWS,
                    MAX_RECORDED_SAMPLES,
                )
                return records
            records.append(
                MeasurementRecord(
                    repo_id=repo_id,
                    repo_full_name=full_name,
                    installation_id=installation_id,
                    platform=platform,
                    metric=metric,
                    unit=series.unit,
                    better=series.better,
                    scale=series.scale,
                    side=side,
                    sha=sha,
                    run_id=run_id,
                    run_attempt=attempt,
                    # Neither is in a workflow_run job yet: nullable until the job carries
                    # them (the runner is a job's, not a run's, on GitHub).
                    workflow_id=None,
                    workflow_name=workflow_name,
                    event=event,
                    branch=branch,
                    pr_number=number,
                    samples=tuple(series.samples),
                    settings=series.settings,
                    recorded_at=now,
                    from_fork=from_fork,
                )
            )
    return records


def series_keys(sides: tuple[SideReport, SideReport]) -> list[SeriesKey]:
    """Every series of a report's two sides, for ``Store.measurement_history``: one key per
    (platform, metric, settings), so a metric whose sides ran with different settings
    gets both."""
    keys = {
        SeriesKey(platform, metric, series.settings)
        for side in sides
        for (platform, metric), series in side.series.items()
    }
    return sorted(keys, key=lambda key: (key.platform, key.metric, key.settings))


def _series_of(report: SideReport) -> Iterator[tuple[str, str, Series]]:
    # Sorted: when a limit cuts a report short, what is kept does not depend on file order.
    for (platform, metric), series in sorted(report.series.items(), key=lambda item: item[0]):
        if series.samples:
            yield platform, metric, series


class MeasurementRetention:
    """Deletes, in each process, the measurements older than the retention (and the write
    pace of installations idle for a day): at start-up, then every ``interval`` seconds. A
    purge that fails is logged and tried at the next."""

    def __init__(
        self,
        store: Store,
        *,
        retention_days: int,
        interval: float = PURGE_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._retention = retention_days * DAY_SECONDS
        self._interval = interval
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        self.purges = 0  # purges finished, for the tests to wait on

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def purge(self) -> int:
        """Delete what is older than the retention now; how many rows."""
        deleted = await self._store.purge_measurements(self._clock() - self._retention)
        if deleted:
            log.info("purged %d measurements older than the retention", deleted)
        # The pace of writes reaches an hour back at most: a day-old record says nothing.
        await self._store.purge_pace(self._clock() - DAY_SECONDS)
        # A configuration file's shared read is trusted for a minute: an hour-old one is
        # of no use, and a repository that left keeps no copy of its file for long.
        await self._store.purge_config_files(self._clock() - CONFIG_KEPT_SECONDS)
        self.purges += 1
        return deleted

    async def _loop(self) -> None:
        while True:
            try:
                await self.purge()
            except Exception:
                log.exception("purging old measurements failed; trying again later")
            await asyncio.sleep(self._interval)
