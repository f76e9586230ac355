"""The branch's series a push run touched, as the watch judges them: every push of the
branch that measured them, in the branch's first-parent order up to its head now.

Read from the store: the run's own series (``Store.run_measurements``: what it touched),
and every push row of those series on the branch (``Store.branch_history``, pushes only:
a PR measures its base with its own copy of the workflow, which may change the benchmark
itself). Ordered by GitHub: runs finish out of order, and a commit may be measured twice
or never, so the order is the branch's first parents from its head now (not the run's
commit: a later push may have finished first) back to the oldest measured commit on that
line, read a page of commits at a time (``list_commits``). A measured commit not on that
line (force-pushed away, or brought in as a merge's second parent) is left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from perfbot.app.context import JobContext
from perfbot.app.jobs import WatchJob
from perfbot.app.repoconfig import WatchConfig
from perfbot.engine.judge import noise
from perfbot.engine.judge.changes import BranchSeries, MeasuredCommit
from perfbot.github.errors import GitHubError
from perfbot.github.transport import PAGE_SIZE
from perfbot.github.types import CommitInfo
from perfbot.store.measurements import (
    MAX_HISTORY_COMMITS,
    MAX_HISTORY_ROWS,
    CommitSamples,
    RunSeries,
    SeriesKey,
)

# The most series one watch judges: a report's series beyond this are not watched.
MAX_WATCHED_SERIES: Final = 2000
# The most pages of the branch's commits one watch reads (of PAGE_SIZE each): 1,000
# commits, side branches' included, between the head and the oldest measured commit.
MAX_COMMIT_PAGES: Final = 10
# A measured commit not met once the walk is this much older than its measurement is
# taken to be off the line, and no more pages are read for it (a commit is measured after
# it is made; a push's head, within days).
OFF_LINE_AFTER_SECONDS: Final = 30 * 86400.0


@dataclass(frozen=True, slots=True)
class Window:
    """The series a push run touched, oldest commit first, and the branch's commits in
    first-parent order (oldest first) as far back as the oldest measured one."""

    series: tuple[BranchSeries, ...]
    chain: tuple[str, ...]


async def branch_window(ctx: JobContext, job: WatchJob, watch: WatchConfig) -> Window | str:
    """The window of ``job``'s series that ``watch`` watches, or why there is none."""
    touched = [
        s
        for s in await ctx.store.run_measurements(job.repo.id, job.run_id, job.run_attempt)
        if s.side == "push" and watch.watched(s.metric)
    ][:MAX_WATCHED_SERIES]
    if not touched:
        return f"push run {job.run_id} recorded no watched series"
    keys = [SeriesKey(s.platform, s.metric, s.settings) for s in touched]
    history = await ctx.store.branch_history(
        job.repo.id,
        job.branch,
        keys,
        max_commits=MAX_HISTORY_COMMITS,
        max_rows=MAX_HISTORY_ROWS,
        pushes_only=True,
    )
    measured = {c.sha: c.newest_recorded_at for commits in history.values() for c in commits}
    try:
        chain = await first_parents(ctx, job, measured)
    except GitHubError as exc:
        if exc.retryable or exc.status not in (404, 409, 422):
            raise
        # The branch is gone, or empty: without its order nothing can be judged, and
        # guessing it would blame a commit.
        return (
            f"the commits of {job.branch} could not be listed (GitHub answered "
            f"{exc.status}): nothing judged"
        )
    if not chain:
        return f"no measured commit is on {job.branch}'s line any more: nothing judged"
    series = tuple(
        _series(s, history.get(key, []), chain) for s, key in zip(touched, keys, strict=True)
    )
    return Window(series, chain)


async def first_parents(
    ctx: JobContext, job: WatchJob, measured: Mapping[str, float]
) -> tuple[str, ...]:
    """The branch's first-parent line from its head now back to the oldest of the
    ``measured`` commits (sha → when measured) on it, oldest first; () when none is."""
    listing = _Listing(ctx, job)
    wanted = dict(measured)
    line: list[str] = []
    sha = await listing.head()
    while sha is not None and wanted:
        commit = await listing.find(sha)
        if commit is None:
            break  # beyond the pages read
        line.append(sha)
        wanted.pop(sha, None)
        if wanted and _past_all(commit, wanted):
            break
        sha = commit.parents[0] if commit.parents else None
    on_line = [index for index, one in enumerate(line) if one in measured]
    return tuple(reversed(line[: on_line[-1] + 1])) if on_line else ()


def _past_all(commit: CommitInfo, wanted: Mapping[str, float]) -> bool:
    """Whether the walk is so far older than every commit still wanted that none is on
    the line (``OFF_LINE_AFTER_SECONDS``)."""
    return (
        commit.committed_at is not None
        and commit.committed_at < min(wanted.values()) - OFF_LINE_AFTER_SECONDS
    )


@dataclass(slots=True)
class _Listing:
    """The branch's commits as GitHub lists them (newest first), read a page at a time
    as the walk needs them, ``MAX_COMMIT_PAGES`` at most."""

    ctx: JobContext
    job: WatchJob
    known: dict[str, CommitInfo] = field(default_factory=dict)
    pages: int = 0
    done: bool = False
    first: str | None = None

    async def head(self) -> str | None:
        """The branch's head now (None: no commit listed)."""
        if not self.pages:
            await self._next()
        return self.first

    async def find(self, sha: str) -> CommitInfo | None:
        while sha not in self.known and not self.done:
            await self._next()
        return self.known.get(sha)

    async def _next(self) -> None:
        repo = self.job.repo
        self.pages += 1
        listed = await self.ctx.installation.list_commits(
            repo.owner, repo.name, self.job.branch, page=self.pages
        )
        if self.first is None and listed:
            self.first = listed[0].sha
        self.known.update((commit.sha, commit) for commit in listed)
        self.done = len(listed) < PAGE_SIZE or self.pages >= MAX_COMMIT_PAGES


def _series(run: RunSeries, commits: Sequence[CommitSamples], chain: Sequence[str]) -> BranchSeries:
    """One series in chain order: each commit's samples, every run of it together."""
    by_sha = {c.sha: c for c in commits}
    ordered = [by_sha[sha] for sha in chain if sha in by_sha]
    groups = [[x for samples in c.runs for x in samples] for c in ordered]
    learned = noise.learned(groups, run.scale, f"{sum(map(len, groups))} measurements")
    return BranchSeries(
        platform=run.platform,
        metric=run.metric,
        unit=run.unit,
        better=run.better,
        commits=tuple(
            MeasuredCommit(c.sha, tuple(x for samples in c.runs for x in samples)) for c in ordered
        ),
        scale=run.scale,
        settings=run.settings,
        noise=learned,
    )
