"""perfbot's single comment on a pull request: the PR's state as the body's parts, and
the comment created or edited in place.

The body itself is composed in ``perfbot/engine/show/render.py`` (the only place that writes
comment markdown); this module says what a PR's state adds to it (``live``) and writes
it (``publish``). Handlers update a PR's comment only through ``publish``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from perfbot.app.context import JobContext
from perfbot.engine.show.render import MARKER, Live, Prepared, Stale, compose
from perfbot.github.types import CommentInfo, PullInfo
from perfbot.store.base import PullState


class CommentApi(Protocol):
    async def list_comments(self, owner: str, repo: str, number: int) -> list[CommentInfo]: ...

    async def create_comment(
        self, owner: str, repo: str, number: int, body: str
    ) -> CommentInfo: ...

    async def update_comment(
        self, owner: str, repo: str, comment_id: int, body: str
    ) -> CommentInfo | None: ...


def is_own(comment: CommentInfo, app_id: int | None, bot_login: str) -> bool:
    """Written by this App *and* carrying the marker: anyone can paste a marker.

    ``app_id`` None (``perfbot comment`` with a workflow's token, whose App id differs
    between github.com and GitHub Enterprise Server) identifies the author by login.
    """
    if app_id is None:
        authored = comment.user_login == bot_login
    else:
        authored = comment.app_id == app_id or (
            comment.app_id is None and comment.user_login == bot_login
        )
    return authored and comment.body.startswith(MARKER)


async def upsert_comment(
    api: CommentApi,
    owner: str,
    repo: str,
    number: int,
    body: str,
    *,
    known_id: int | None,
    app_id: int | None,
    bot_login: str,
    comments: int | None = None,
) -> CommentInfo:
    """Edit the stored comment, else perfbot's own comment on the PR, else create one.

    ``comments``: how many comments the PR has, as GitHub said just now (None: unknown);
    with none at all there is no comment of perfbot's to look for.
    """
    if known_id is not None:
        edited = await api.update_comment(owner, repo, known_id, body)
        if edited is not None:
            return edited
    if comments == 0:
        return await api.create_comment(owner, repo, number, body)
    own = [c for c in await api.list_comments(owner, repo, number) if is_own(c, app_id, bot_login)]
    for comment in sorted(own, key=lambda c: c.id):
        edited = await api.update_comment(owner, repo, comment.id, body)
        if edited is not None:
            return edited
    return await api.create_comment(owner, repo, number, body)


def live(state: PullState) -> Live:
    """What the PR's state adds above its report: the stale banner while a newer head is
    measured, the re-run line while a requested re-run is under way."""
    return live_for(state.reported_head_sha, state.newest_head_sha, state.rerun_requested_by)


def live_for(reported: str | None, newest: str | None, rerun_by: str | None = None) -> Live:
    """The live notices of a report of ``reported`` while the PR's head is ``newest``."""
    stale = Stale(reported, newest) if reported and newest and newest != reported else None
    return Live(stale, rerun_by or None)


def body(state: PullState, prepared: Prepared | None = None) -> str:
    """The comment for ``state``: its stored report with its live notices. ``prepared``:
    the stored report as it was laid out, when the caller has it (not read back again)."""
    assert state.report_body is not None
    return compose(prepared or Prepared.load(state.report_body), live(state))


async def publish(
    ctx: JobContext,
    owner: str,
    name: str,
    state: PullState,
    *,
    save: bool = True,
    pull: PullInfo | None = None,
    prepared: Prepared | None = None,
) -> PullState:
    """Write the comment for ``state`` (report plus current notices) and store the state.

    ``save=False``: the caller stores the returned state itself. Should it fail before
    that, the comment is found again on the PR by its author and marker. ``pull``: the PR
    as GitHub showed it just before (a PR without comments is not searched for one).
    ``prepared``: ``state.report_body`` as laid out, when the caller just laid it out.
    """
    comment = await upsert_comment(
        ctx.installation,
        owner,
        name,
        state.number,
        body(state, prepared),
        known_id=state.comment_id,
        app_id=ctx.app_id,
        bot_login=await ctx.bot_login(),
        comments=None if pull is None else pull.comments,
    )
    state = replace(state, comment_id=comment.id)
    if save:
        await ctx.store.save_pull(state)
    ctx.log.info("comment %s on PR %s is up to date", comment.id, state.number)
    return state
