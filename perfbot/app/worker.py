"""The worker: claims jobs from the store, runs their handler, and settles the outcome."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable

from perfbot.app import routes
from perfbot.app.configcache import ConfigCache
from perfbot.app.context import JobContext
from perfbot.app.jobs import AnyJob
from perfbot.app.settings import DEFAULT_LEASE_SECONDS
from perfbot.app.watch_issues import Paced
from perfbot.errors import PerfbotError
from perfbot.github.app import GitHubApp
from perfbot.github.dryrun import acting_for
from perfbot.github.errors import RateLimited, WaitForTurn
from perfbot.github.pacing import installation_key
from perfbot.store.base import Job, Store
from perfbot.support.keepalive import Lost, kept
from perfbot.support.lending import lending
from perfbot.support.metrics import Metrics
from perfbot.support.retry import MAX_ATTEMPTS, retry_delay

log = logging.getLogger("perfbot.worker")

LEASE_SECONDS = DEFAULT_LEASE_SECONDS
IDLE_POLL_SECONDS = 0.5
# How often a worker looks for processes on its store that have ended (SQLite: a lock
# the kernel dropped) to take their jobs over without waiting out their leases.
DEPARTED_CHECK_SECONDS = 2.0
# Jobs one process holds at once, as a multiple of its workers. A job waiting for its
# installation's next write slot lends its worker to another (``perfbot.support.lending``);
# this bounds how many such jobs, each with its reports in memory, may pile up.
IN_HAND_PER_WORKER = 4


class Worker:
    """``concurrency`` loops in this process, each running one job at a time."""

    def __init__(
        self,
        store: Store,
        github: GitHubApp,
        *,
        concurrency: int,
        repo_disabled: Callable[[str], bool],
        metrics: Metrics | None = None,
        configs: ConfigCache | None = None,
        clock: Callable[[], float] = time.time,
        lease_seconds: float = LEASE_SECONDS,
        watch_by_default: bool = True,
    ) -> None:
        self._lease = lease_seconds
        self._watch_by_default = watch_by_default
        self._store = store
        self._github = github
        self._repo_disabled = repo_disabled
        self._metrics = metrics or Metrics()
        # Shared through the store: a job in another process reads no file this one read.
        self._configs = configs or ConfigCache(shared=store, wall=clock)
        self._clock = clock
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._running: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(concurrency)
        self._in_hand = asyncio.Semaphore(concurrency * IN_HAND_PER_WORKER)
        self._dispatcher: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None
        # Unique per worker, ever (a random part: a restarted process may get the same
        # PID): the store checks ownership of a claimed job by this name, and a claim's
        # owner, like its PR locks' owners, starts with it.
        self.name = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._claims = itertools.count(1)

    def start(self) -> None:
        self._dispatcher = asyncio.create_task(self._dispatch())
        self._watcher = asyncio.create_task(self._watch_departed())

    def wake(self) -> None:
        """A job was just enqueued: the dispatcher looks now instead of at its next poll."""
        self._wake.set()

    async def stop(self) -> None:
        """Let running jobs finish (their leases protect them if the process dies)."""
        self._stopping.set()
        self._wake.set()
        if self._watcher is not None:
            self._watcher.cancel()
            await asyncio.gather(self._watcher, return_exceptions=True)
        if self._dispatcher is not None:
            await asyncio.gather(self._dispatcher, return_exceptions=True)
        await asyncio.gather(*self._running, return_exceptions=True)

    async def _dispatch(self) -> None:
        """Claim a job whenever a slot is free; one claimer, so idle slots cost nothing."""
        try:
            # Before the first claim, so that every claim of this worker is announced.
            await self._store.announce(f"{self.name}:")
        except Exception:
            log.exception("announcing this worker failed: its claims are left to their leases")
        while not self._stopping.is_set():
            await self._in_hand.acquire()
            job = await self._next_job()
            if job is None:  # stopping
                self._in_hand.release()
                return
            task = asyncio.create_task(self._run_in_slot(job))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _watch_departed(self) -> None:
        """Take over the jobs of processes known to have ended, now and then every few
        seconds: a restarted process resumes its dead predecessor's jobs at once."""
        while not self._stopping.is_set():
            try:
                freed = await self._store.release_departed()
            except Exception:
                log.exception("looking for ended processes failed")
                freed = []
            for prefix in freed:
                log.warning("took over the claims of %s, whose process ended", prefix[:-1])
            if freed:
                self._wake.set()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(DEPARTED_CHECK_SECONDS):
                    await self._stopping.wait()

    async def _next_job(self) -> Job | None:
        """A claimed job, holding a slot; None once stopping. The slot is taken only to
        claim: an idle dispatcher holds none, or a job that lent its slot while it waited
        (``_LendableSlot``) could not take it back."""
        while not self._stopping.is_set():
            await self._slots.acquire()
            if self._stopping.is_set():  # stopped while it waited for the slot
                self._slots.release()
                break
            # Cleared before the claim, so an enqueue during the claim is not missed.
            self._wake.clear()
            try:
                # A new owner name per claim: should this run lose its lease and the job be
                # claimed again (even by this process), the stale run can neither complete
                # nor retry it, nor share its PR's lock.
                owner = f"{self.name}:{next(self._claims)}"
                job = await self._store.claim(owner, self._lease, self._clock())
            except Exception:
                log.exception("claiming a job failed")
                job = None
            if job is not None:
                return job
            self._slots.release()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(IDLE_POLL_SECONDS):
                    await self._wake.wait()
        return None

    async def _run_in_slot(self, job: Job) -> None:
        slot = _LendableSlot(self._slots)
        lending(slot.lent)  # this task's own context: the job's waits lend this slot
        try:
            await self.run_job(job, job.lease_owner)
        finally:
            slot.give_back()
            self._in_hand.release()
            # The next job of this one's serial key (the next push of a branch, a PR's next
            # run) could not be claimed while it ran: look now, not at the next poll.
            self._wake.set()

    async def run_job(self, job: Job, owner: str) -> None:
        extra = {
            "delivery": job.delivery_id,
            "event": job.event,
            "job": job.id,
            "attempt": job.attempts,
        }
        job_log = logging.LoggerAdapter(log, extra)
        # Renewed every third of the lease from the event loop, beside the handler: a
        # parse in a thread or a slow GitHub call does not hold it up. A failed renewal is
        # tried again while the lease is surely still ours; after that the run stops, as
        # another worker may take the job once the lease runs out.
        lease = kept(
            lambda: self._store.extend_lease(job.id, owner, self._lease, self._clock()),
            every=self._lease / 3,
            grace=self._lease * 2 / 3,
            clock=self._clock,
            what=f"the lease of job {job.id}",
            log=log,
        )
        try:
            async with lease:
                outcome = await self._run(job, owner, job_log)
        except Lost:
            # Another worker owns the job now; it runs it to the end.
            job_log.warning("stopped: the job's lease was lost while it ran")
            outcome = "abandoned"
        self._metrics.jobs.labels(job.event, outcome).inc()
        if outcome not in ("retried", "abandoned", "deferred"):
            self._metrics.job_latency.labels(job.event).observe(self._clock() - job.created_at)

    async def _run(
        self, job: Job, owner: str, job_log: logging.LoggerAdapter[logging.Logger]
    ) -> str:
        if job.attempts > MAX_ATTEMPTS:
            # Every failure that is caught gives up at MAX_ATTEMPTS (retry_delay), so the
            # runs before this claim ended with no outcome at all: their process died (a
            # job that kills it, say) or lost the lease. A dead process's claims are
            # taken over within seconds, so without this such a job would kill every
            # restart, for ever.
            return await self._give_up(
                job,
                owner,
                f"claimed {job.attempts} times, and the runs before ended without an "
                "outcome (their process died or lost the job)",
                job_log,
            )
        try:
            # Read first: a job this perfbot cannot read fails before any other work.
            typed = routes.decode(job.event, job.payload)
            route = routes.route_of(typed)
            if job.installation_id is None:
                # GitHub names the installation in every delivery it sends an App; one
                # without (a repository's own webhook pointed at perfbot, say) has no one
                # to act for. Nothing to retry, nothing broken: the job ends DONE, and its
                # record says why nothing happened.
                ignored = "ignored: the delivery names no installation"
                job_log.info("%s", ignored)
                await self._store.complete(job.id, owner, self._clock(), reason=ignored)
                return "skipped"
            checked_at = None if route.while_suspended else time.monotonic()
            if checked_at is not None and await self._store.is_suspended(job.installation_id):
                # Its owner suspended perfbot: not one call for it until unsuspended.
                skipped = f"skipped: installation {job.installation_id} is suspended"
                job_log.info("%s", skipped)
                await self._store.complete(job.id, owner, self._clock(), reason=skipped)
                return "skipped"
            pacer = self._github.pacer
            key = installation_key(job.installation_id)
            wait = None if pacer is None else await pacer.admission(key)
            if wait is not None:
                # Its installation's writes are booked far ahead, or enough of its jobs run
                # here already: it waits in the queue, and another installation's job runs.
                return await self._defer(
                    job, owner, wait, f"waits for installation {job.installation_id}'s turn"
                )
            with pacer.running(key) if pacer is not None else contextlib.nullcontext():
                reason = await self.handle(
                    typed,
                    job.delivery_id,
                    job.installation_id,
                    owner,
                    job_log,
                    checked_at=checked_at,
                )
        except (Paced, WaitForTurn) as exc:
            # The watch's issue waits for its repository's minute, or the installation's
            # rate limit for its reset: a turn, not a failure.
            return await self._defer(job, owner, exc.retry_after, str(exc))
        except PerfbotError as exc:
            # perfbot's own errors say whether running the job again may help.
            if not exc.retryable:
                return await self._give_up(job, owner, str(exc), job_log)
            # GitHub's limits say when to try again.
            retry_after = exc.retry_after if isinstance(exc, RateLimited) else None
            return await self._retry(job, owner, str(exc), job_log, retry_after)
        except Exception as exc:
            # A bug or an unforeseen failure: the trace goes to the operator's log only.
            job_log.exception("job failed unexpectedly")
            return await self._retry(job, owner, f"internal error ({type(exc).__name__})", job_log)
        await self._store.complete(job.id, owner, self._clock(), reason=_one_line(reason))
        return "done"

    async def handle(
        self,
        typed: AnyJob,
        delivery_id: str,
        installation_id: int,
        owner: str,
        job_log: logging.LoggerAdapter[logging.Logger],
        *,
        checked_at: float | None = None,
    ) -> str:
        """Run the handler of ``typed`` for its installation (``perfbot replay`` too);
        ``checked_at``: when (``time.monotonic``) the store said it is not suspended, just
        before (the job's first gate need not ask again)."""
        installation = self._github.installation(installation_id)
        ctx = JobContext(
            delivery_id=delivery_id,
            installation=installation,
            store=self._store,
            app_id=self._github.app_id,
            bot_login=self._github.bot_login,
            configs=self._configs,
            repo_disabled=self._repo_disabled,
            now=self._clock,
            worker=owner,
            log=job_log,
            watch_by_default=self._watch_by_default,
            not_suspended_at=[]
            if checked_at is None
            else [(installation.calls_started, checked_at)],
        )
        # A dry run's records say which delivery and installation each write was for.
        with acting_for(delivery_id, installation_id):
            # The handler says how its job ended in one line ("ignored: ...", "comment 12
            # on PR 7 is up to date"), recorded with the job, so an absence can be told
            # from a crash.
            return await routes.handler_of(typed)(ctx, typed)

    async def _retry(
        self,
        job: Job,
        owner: str,
        error: str,
        job_log: logging.LoggerAdapter[logging.Logger],
        retry_after: float | None = None,
    ) -> str:
        delay = retry_delay(job.attempts, retry_after)
        if delay is None:
            return await self._give_up(
                job, owner, f"{error} (after {job.attempts} attempts)", job_log
            )
        job_log.warning("will retry in %.1f s: %s", delay, error)
        now = self._clock()
        await self._store.retry_later(job.id, owner, now + delay, error, now)
        return "retried"

    async def _defer(self, job: Job, owner: str, wait: float, reason: str) -> str:
        """Back to the queue for ``wait`` seconds, the attempt not counted: a job waiting
        for its turn is delayed, never dropped."""
        log.debug("job %s deferred %.1f s: %s", job.id, wait, reason)
        await self._store.defer(job.id, owner, self._clock() + wait, reason)
        self._metrics.jobs_deferred.labels(job.event).inc()
        return "deferred"

    async def _give_up(
        self, job: Job, owner: str, error: str, job_log: logging.LoggerAdapter[logging.Logger]
    ) -> str:
        job_log.error("gave up: %s", error)
        await self._store.give_up(job.id, owner, error, self._clock())
        return "failed"


REASON_MAX_CHARS = 300


class _LendableSlot:
    """A job's worker slot, lent to other jobs while the job only waits (``lent``).

    The job's own tasks share it (they inherit the lender): the first of them to wait
    lends it, the last to stop waiting takes it back, and it is taken back once only."""

    def __init__(self, slots: asyncio.Semaphore) -> None:
        self._slots = slots
        self._held = True
        self._waiting = 0
        self._taking_back = asyncio.Lock()

    @contextlib.asynccontextmanager
    async def lent(self) -> AsyncIterator[None]:
        self._waiting += 1
        if self._waiting == 1 and self._held:
            self._held = False
            self._slots.release()
        try:
            yield
        finally:
            self._waiting -= 1
            if not self._waiting:
                async with self._taking_back:
                    if not self._held:
                        # Cancelled while waiting for a slot: not held, nothing to give back.
                        await self._slots.acquire()
                        self._held = True

    def give_back(self) -> None:
        if self._held:
            self._held = False
            self._slots.release()


def _one_line(reason: str | None) -> str | None:
    """The handler's reason as one bounded line: it may quote a name from a payload."""
    if reason is None:
        return None
    line = " ".join(reason.split())
    return line if len(line) <= REASON_MAX_CHARS else line[: REASON_MAX_CHARS - 1] + "…"
