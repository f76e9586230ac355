"""Reading the history never stands in the way of the comment: a store that fails to
answer costs the history only (logged), and the comment is posted as before."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from perfbot.store import SQLiteStore
from perfbot.store.measurements import PullRun
from tests.harness import World, in_process_service, wait_idle, wait_until
from tests.test_push_runs import MAIN_SHAS, post, push_run


async def broken(*_args: object, **_kwargs: object) -> list[tuple[PullRun, list[object]]]:
    raise RuntimeError("the disk is on fire")


def test_a_history_that_cannot_be_read_costs_only_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    world = World.create()
    monkeypatch.setattr(SQLiteStore, "pull_pushes", broken)
    with caplog.at_level(logging.WARNING), in_process_service(world, tmp_path / "db") as client:
        post(client, *world.delivery(push_run(world, 2000, MAIN_SHAS[0])))
        wait_idle(client.get)
        pull = world.pull(7, "a" * 40)
        post(client, *world.delivery(world.measured_run(pull, 3000)))
        wait_until(lambda: len(world.bot_comments(7)) == 1, 15, "the comment")
        wait_idle(client.get)
    (body,) = world.bot_comments(7)
    assert "🔴" in body  # the comparison, as ever
    assert "Recent values" not in body
    assert "mermaid" not in body
    assert "fire" not in body
    assert any(
        "history of run 3000 not read: RuntimeError" in r.getMessage() for r in caplog.records
    )
