"""perfbot edits only its own comment: App id (or bot login) and marker, both required."""

from __future__ import annotations

from dataclasses import replace

from perfbot.app.comment import body, is_own, live, upsert_comment
from perfbot.engine.judge.compare import compare
from perfbot.engine.show.render import (
    MARKER,
    Footer,
    Live,
    Prepared,
    RenderContext,
    Stale,
    compose,
    prepare,
)
from perfbot.github.types import CommentInfo
from perfbot.store.base import PullState
from tests.builders import side

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


def prepared_report() -> Prepared:
    context = RenderContext(config_errors=("perfbot.yml: threshold is not a number",))
    return prepare(compare(side({"a": 1.0}), side({"a": 2.0})), replace(context, footer=Footer.APP))


def test_live_notices_come_from_the_prs_state() -> None:
    state = PullState(1, 7, newest_head_sha="b" * 40, reported_head_sha="a" * 40)
    assert live(state) == Live(Stale("a" * 40, "b" * 40), None)
    assert live(replace(state, newest_head_sha="a" * 40, rerun_requested_by="bob")) == Live(
        None, "bob"
    )
    assert live(PullState(1, 7)) == Live()


def test_the_body_puts_live_notices_above_the_reports_own() -> None:
    state = PullState(
        1,
        7,
        newest_head_sha="b" * 40,
        reported_head_sha="a" * 40,
        report_body=prepared_report().dump(),
        rerun_requested_by="bob",
    )
    lines = body(state).splitlines()
    assert lines[0] == MARKER
    assert lines[1] == "### Performance report: 1 improvement"
    assert lines[2:9] == [
        "",
        "> ⏳ These numbers are for the previous commit <code>aaaaaaa</code>; "
        "<code>bbbbbbb</code> is being measured.",
        "",
        "> 🔁 Re-run requested by <code>bob</code>; the numbers below will be replaced.",
        "",
        "> ⚠️ perfbot.yml&#58; threshold is not a number",
        "",
    ]
    assert "`/perfbot rerun`" in lines[-1]


def test_without_live_notices_the_body_is_the_report_as_prepared() -> None:
    prepared = prepared_report()
    state = PullState(1, 7, report_body=prepared.dump())
    assert body(state) == compose(prepared)
    assert Prepared.load(prepared.dump()) == prepared


def test_a_body_stored_by_the_previous_release_still_gets_its_banner() -> None:
    stored = f"{MARKER}\n### Performance report: x\n\n> ⚠️ old notice\n\nrest\n"
    state = PullState(1, 7, newest_head_sha="b" * 40, reported_head_sha="a" * 40)
    lines = body(replace(state, report_body=stored)).splitlines()
    assert lines[:4] == [MARKER, "### Performance report: x", "", lines[3]]
    assert lines[3].startswith("> ⏳ These numbers are for the previous commit")
    assert lines[4:] == ["", "> ⚠️ old notice", "", "rest"]
    assert body(PullState(1, 7, report_body=stored)) == stored
