"""perfbot's single comment on a pull request: find it, compose it, create or edit it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from perfbot.engine.render import MARKER, with_notices
from perfbot.github.types import CommentInfo


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
) -> CommentInfo:
    """Edit the stored comment, else perfbot's own comment on the PR, else create one."""
    if known_id is not None:
        edited = await api.update_comment(owner, repo, known_id, body)
        if edited is not None:
            return edited
    own = [c for c in await api.list_comments(owner, repo, number) if is_own(c, app_id, bot_login)]
    for comment in sorted(own, key=lambda c: c.id):
        edited = await api.update_comment(owner, repo, comment.id, body)
        if edited is not None:
            return edited
    return await api.create_comment(owner, repo, number, body)


def compose(report_body: str, notices: Sequence[str]) -> str:
    """The stored report with the current notices (stale results, re-run requested)."""
    return with_notices(report_body, notices) if notices else report_body
