"""perfbot edits only its own comment: App id (or bot login) and marker, both required."""

from __future__ import annotations

from perfbot.app.comment import compose, is_own, upsert_comment
from perfbot.engine.render import MARKER
from perfbot.github.types import CommentInfo

APP_ID, BOT = 4242, "perfbot[bot]"


class Thread:
    """The comments of one PR, with the calls counted."""

    def __init__(self, *comments: CommentInfo) -> None:
        self.comments = {c.id: c for c in comments}
        self.calls: list[str] = []

    async def list_comments(self, owner: str, repo: str, number: int) -> list[CommentInfo]:
        self.calls.append("list")
        return sorted(self.comments.values(), key=lambda c: c.id)

    async def create_comment(self, owner: str, repo: str, number: int, body: str) -> CommentInfo:
        self.calls.append("create")
        comment = CommentInfo(max(self.comments, default=0) + 1, body, BOT, APP_ID)
        self.comments[comment.id] = comment
        return comment

    async def update_comment(
        self, owner: str, repo: str, comment_id: int, body: str
    ) -> CommentInfo | None:
        self.calls.append(f"update {comment_id}")
        old = self.comments.get(comment_id)
        if old is None:
            return None
        self.comments[comment_id] = CommentInfo(comment_id, body, old.user_login, old.app_id)
        return self.comments[comment_id]


def test_ownership_needs_author_and_marker() -> None:
    assert is_own(CommentInfo(1, MARKER + "\nx", BOT, APP_ID), APP_ID, BOT)
    assert is_own(CommentInfo(1, MARKER + "\nx", BOT, None), APP_ID, BOT)
    assert not is_own(CommentInfo(1, MARKER + "\nx", "mallory", None), APP_ID, BOT)
    assert not is_own(CommentInfo(1, MARKER + "\nx", "other[bot]", 7), APP_ID, BOT)
    assert not is_own(CommentInfo(1, "no marker", BOT, APP_ID), APP_ID, BOT)


async def test_known_comment_is_edited_without_listing() -> None:
    thread = Thread(CommentInfo(5, MARKER, BOT, APP_ID))
    await upsert_comment(
        thread, "o", "r", 1, MARKER + "\nnew", known_id=5, app_id=APP_ID, bot_login=BOT
    )
    assert thread.calls == ["update 5"]


async def test_lost_id_finds_own_comment_and_skips_a_forged_one() -> None:
    forged = CommentInfo(3, MARKER + "\nfake", "mallory", None)
    own = CommentInfo(4, MARKER + "\nold", BOT, APP_ID)
    thread = Thread(forged, own)
    result = await upsert_comment(
        thread, "o", "r", 1, MARKER + "\nnew", known_id=None, app_id=APP_ID, bot_login=BOT
    )
    assert result.id == 4
    assert thread.comments[3].body.endswith("fake")


async def test_deleted_comment_is_recreated() -> None:
    thread = Thread()
    result = await upsert_comment(
        thread, "o", "r", 1, MARKER, known_id=99, app_id=APP_ID, bot_login=BOT
    )
    assert thread.calls == ["update 99", "list", "create"]
    assert result.id in thread.comments


def test_compose_puts_notices_under_the_headline() -> None:
    body = f"{MARKER}\n### Performance report: x\n\nrest\n"
    composed = compose(body, ["⏳ stale"])
    assert composed.splitlines()[:4] == [MARKER, "### Performance report: x", "", "> ⏳ stale"]
    assert compose(body, []) == body
