"""A PR run's report written to its PR: the comment, then perfbot's check run, under the
PR's lock, and never over a newer result.

Asked again just before writing, because the download and the judging may have taken a
while: is the PR still open and still the one the run measured, may perfbot still write
there, and does the comment already show something newer (a later attempt of the run, or
a later head proven after this run was)? An update of an existing comment asks GitHub
again only when its proof is older than ``PROOF_FRESH_SECONDS`` or the store noted a head
after the proof began (``proof_stands``); else the proof's answer is the PR as it is now,
and the update reads the PR once.

The comment is written as ``comment:`` says (``RepoConfig.writes_comment``: one that
exists is always kept up to date); the report is stored with the PR either way, and laid
out again over both when a person accepts a regression (``republish``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from perfbot.app.comment import publish
from perfbot.app.context import JobContext
from perfbot.app.jobs import Repository, Run
from perfbot.app.pulllock import pull_lock
from perfbot.app.repoconfig import RepoConfig
from perfbot.app.reporting import Report
from perfbot.github.types import PullInfo
from perfbot.store.base import PullState

CHECK_RUN_NAME: Final = "perfbot"
# A proof this recent stands for the PR as GitHub shows it now. A close, a relabel or a
# push after whichever read came last goes unseen until the write, and the write waits for
# its installation's pace after the read (up to ``perfbot.github.pacing.HORIZON`` seconds);
# a second read this soon shortened that unseen window by at most this much. A push is
# told anyway: its run's start notes the new head, and the comment is marked stale.
PROOF_FRESH_SECONDS: Final = 2.0


async def post_report(
    ctx: JobContext,
    run: Run,
    pull: PullInfo,
    report: Report,
    config: RepoConfig,
    *,
    proved_at: float,
    before_proof: PullState | None,
) -> str:
    """Write ``report`` of ``run`` to ``pull``; how the job ended, in one line.

    ``proved_at``: when the run's PR was proven, which orders it among the PR's results.
    ``before_proof``: the store's state of the PR as read before the proof was asked for
    (None: not read), which tells whether a head was noted since (``proof_stands``).
    """
    async with pull_lock(ctx, run.repo_id, pull.number):
        state = await ctx.store.get_pull(run.repo_id, pull.number)
        if state is not None and superseded(state, run, proved_at):
            return ctx.ended(f"not posted: PR {pull.number} already shows a newer result")
        fresh = (
            pull
            if proof_stands(state, before_proof, pull.number, proved_at, ctx.now())
            else await ctx.installation.get_pull(run.owner, run.name, pull.number)
        )
        refused = await report_refused(ctx, run, pull.number, fresh)
        if refused is not None or fresh is None:
            return ctx.ended(f"not posted: {refused}")
        state = replace(
            state or PullState(run.repo_id, pull.number),
            # The PR's head now: when it moved past the run's, the comment says its numbers
            # are for the previous commit.
            newest_head_sha=fresh.head_sha,
            reported_head_sha=run.head_sha,
            reported_run_id=run.id,
            reported_run_attempt=run.attempt,
            report_body=report.stored,
            rerun_requested_by=None,
            updated_at=proved_at,
        )
        return await _written(
            ctx, Repository(run.repo_id, run.owner, run.name), fresh, state, report, config=config
        )


async def republish(
    ctx: JobContext,
    repo: Repository,
    pull: PullInfo,
    state: PullState,
    report: Report,
    *,
    config: RepoConfig,
) -> str:
    """``report``, the PR's shown report laid out again (a person accepted a regression),
    written over its comment and check run; the caller holds the PR's lock."""
    return await _written(
        ctx, repo, pull, replace(state, report_body=report.stored), report, config=config
    )


async def _written(
    ctx: JobContext,
    repo: Repository,
    pull: PullInfo,
    state: PullState,
    report: Report,
    *,
    config: RepoConfig,
) -> str:
    """The comment (as ``comment:`` says) and the check run of ``state``'s report."""
    number = pull.number
    if config.writes_comment(exists=state.comment_id is not None, worth=report.worth):
        # With a check run to write, the state is stored once, after it (one write less).
        # The report just laid out is the state's: its body is not read back from it.
        state = await publish(
            ctx,
            repo.owner,
            repo.name,
            state,
            save=not config.check_run,
            pull=pull,
            prepared=report.prepared,
        )
        done = f"comment {state.comment_id} on PR {number} is up to date"
    else:
        if not config.check_run:
            await ctx.store.save_pull(state)
        why = ", nothing to say" if config.comment == "on-change" else ""
        done = f"no comment on PR {number} (comment: {config.comment}{why})"
    if not config.check_run:
        return done
    return await _check_run(ctx, repo, pull, state, report, done=done)


async def _check_run(
    ctx: JobContext,
    repo: Repository,
    fresh: PullInfo,
    state: PullState,
    report: Report,
    *,
    done: str,
) -> str:
    refused = await ctx.write_refused(repo.owner, repo.name, fresh)
    if refused is not None:
        await ctx.store.save_pull(state)
        return ctx.ended(f"{done}; check run not written: {refused}")
    head_sha = state.reported_head_sha
    assert head_sha is not None  # a report is of a head
    check_id = await ctx.installation.upsert_check_run(
        repo.owner,
        repo.name,
        check_run_id=state.check_run_id if state.check_run_head_sha == head_sha else None,
        name=CHECK_RUN_NAME,
        head_sha=head_sha,
        conclusion=report.check.conclusion,
        title=report.check.title,
        summary=report.check.summary,
    )
    await ctx.store.save_pull(replace(state, check_run_id=check_id, check_run_head_sha=head_sha))
    return f"{done}; check run {check_id} too"


def superseded(state: PullState, run: Run, proved_at: float) -> bool:
    """Whether the comment shows a result this run must not replace."""
    if state.reported_head_sha is None:
        return False
    if state.reported_head_sha != run.head_sha:
        # The shown head was proven to be the PR's head after this one was: it is newer.
        return state.updated_at > proved_at
    return state.reported_run_id == run.id and (state.reported_run_attempt or 0) > run.attempt


def proof_stands(
    state: PullState | None,
    before_proof: PullState | None,
    number: int,
    proved_at: float,
    now: float,
) -> bool:
    """Whether the PR as its proof read it is still the PR to write to, without asking
    GitHub again: the proof is recent (``PROOF_FRESH_SECONDS``; a clock that stepped back
    is not trusted), the comment exists (a first comment decides from the PR's count of
    comments whether to look for one, a count read under the PR's lock), and the PR's
    newest head in the store is the one noted before the proof began (a run started on
    another push since noted its head, which the proof's answer would undo)."""
    if not 0 <= now - proved_at <= PROOF_FRESH_SECONDS:
        return False
    if state is None or state.comment_id is None:
        return False
    if before_proof is None or before_proof.number != number:
        return False
    return state.newest_head_sha == before_proof.newest_head_sha


def pull_moved(run: Run, number: int, fresh: PullInfo | None) -> str | None:
    """Why the report must not go to PR ``number`` as GitHub shows it now, or None: it was
    closed, deleted, or is no longer the PR the run measured."""
    if fresh is None:
        return f"PR {number} no longer exists"
    if fresh.state != "open":
        return f"PR {number} was {fresh.state} while its report was read"
    if fresh.base_repo_id != run.repo_id or fresh.head_repo_id != run.head_repo_id:
        return f"PR {number} no longer is the PR the run measured"
    return None


async def report_refused(
    ctx: JobContext, run: Run, number: int, fresh: PullInfo | None
) -> str | None:
    """Why the report must not be written to PR ``number`` as GitHub shows it now."""
    return pull_moved(run, number, fresh) or await ctx.write_refused(run.owner, run.name, fresh)
