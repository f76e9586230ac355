"""The comment's body is the same whether its report is read back from the PR's state or
handed over as it was just laid out (``comment.body``'s ``prepared``)."""

from __future__ import annotations

from perfbot.app.comment import body
from perfbot.engine.show.render import Prepared
from perfbot.store.base import PullState

PREPARED = Prepared("🔴 1 regression", ("a notice",), "| metric | change |", "footer")


def test_a_report_handed_over_gives_the_body_read_back_from_the_state() -> None:
    state = PullState(
        1, 7, report_body=PREPARED.dump(), reported_head_sha="a" * 40, newest_head_sha="b" * 40
    )
    assert body(state, PREPARED) == body(state)
    assert "🔴 1 regression" in body(state)


def test_the_report_handed_over_is_the_one_shown() -> None:
    other = Prepared("🟢 no change", (), "| metric |", "footer")
    state = PullState(1, 7, report_body=PREPARED.dump())
    assert "🟢 no change" in body(state, other)
    assert "🔴" not in body(state, other)
