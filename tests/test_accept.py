"""``/perfbot accept [metric-glob …] [-- reason]`` and ``/perfbot unaccept`` on a PR, over the
fake GitHub with the handlers called directly (``test_handlers.Bench``): zperf console logs
(deterministic, so every move is judged by the floor alone) with UDP down 10 %.

A writer's accept turns the UDP regression into "accepted by writer: larger buffers" in
the row and the headline and the check run into success, at once; a reader's gets one 😕
and nothing else; the next push at the same values keeps it accepted, one 10 % worse is red
again with a line saying why; unaccept makes it red again. Every "nothing happened" is
told from a crash by the job's own reason."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from perfbot.engine.show.kept import load
from perfbot.sandbox.fakegithub import Pull
from perfbot.store.watched import Acknowledgement
from tests.harness import REPO_ID, ZPERF_BASE, report_zip
from tests.test_handlers import CONFIG, HEAD, NEXT_HEAD, Bench, bench

__all__ = ["bench"]  # the fixture, used by name

WRITER, READER = "writer", "reader"
UDP = "udp4_mbps"
UDP_DOWN = {**ZPERF_BASE, UDP: ZPERF_BASE[UDP] * 0.9}
UDP_FURTHER = {**ZPERF_BASE, UDP: ZPERF_BASE[UDP] * 0.9 * 0.9}
THIRD_HEAD = "c" * 40
ACCEPTED_ROW = "☑️ −10.00 % (accepted by <code>writer</code>: larger buffers)"
RED_ROW = "🔴 **−10.00 %** (beyond 5 % tolerance)"


async def reported(bench: Bench, pull: Pull, run_id: int, head: dict[str, float]) -> str:
    """A measurement run of the PR's head with ``head`` against the zperf base, handled."""
    run = bench.world.measured_run(pull, run_id, report=report_zip(head))
    return await bench.run("workflow_run", bench.run_payload(run), f"run-{run_id}")


async def said(bench: Bench, text: str, login: str, delivery: str) -> str:
    return await bench.run("issue_comment", bench.comment_payload(text, login), delivery)


def comment(bench: Bench) -> str:
    (only,) = bench.fake.bot_comments(bench.world.repo, 7)
    return str(only.body)


def check(bench: Bench, head: str = HEAD) -> Any:
    (run,) = bench.fake.check_runs_for(bench.world.repo, head)
    return run


async def regressed_pr(bench: Bench) -> Pull:
    """PR 7 with its UDP regression reported; a writer and a reader; the check fails on a
    regression beyond tolerance (so that its conclusion tells an accepted one apart)."""
    bench.world.repo.files[CONFIG] = "fail_on_regression: true\n"
    bench.fake.add_collaborator(bench.world.repo, WRITER, "write")
    bench.fake.add_collaborator(bench.world.repo, READER, "read")
    pull = bench.pull()
    assert "is up to date; check run" in await reported(bench, pull, 1001, UDP_DOWN)
    assert RED_ROW in comment(bench)
    assert check(bench).conclusion == "failure"
    return pull


async def test_a_writers_accept_turns_the_regression_accepted_at_once(bench: Bench) -> None:
    await regressed_pr(bench)
    before = len(bench.writes())
    reason = await said(bench, "/perfbot accept udp* -- larger buffers", WRITER, "d1")
    assert reason.startswith("accepted by writer: 1 regression of PR 7 (comment ")
    assert reason.endswith("reacted rocket")
    body = comment(bench)
    assert "### Performance report: 1 accepted regression\n" in body
    assert f"| <code>{UDP}</code> (Mbps) | 13.099 | 11.789 | {ACCEPTED_ROW} |" in body
    assert "🔴" not in body
    assert "| <code>qemu_x86</code> |  |  | 3 | ☑️ 1 accepted |" in body
    assert (check(bench).conclusion, check(bench).output["title"]) == (
        "success",
        "1 accepted regression",
    )
    # The comment edited, the check run updated, one reaction: nothing more.
    assert [w.split(" ")[0] for w in bench.writes()[before:]] == ["PATCH", "PATCH", "POST"]
    assert bench.reactions() == ["rocket"]
    (stored,) = await bench.store.pull_acknowledgements(REPO_ID, 7)
    assert stored == Acknowledgement(
        repo_id=REPO_ID,
        installation_id=1,
        subject="pull",
        branch="main",
        pr_number=7,
        sha=HEAD,
        platform="qemu_x86",
        metric=UDP,
        settings=(),
        value=11.7891,  # the head median, as the zperf log printed it
        login=WRITER,
        reason="larger buffers",
        accepted_at=bench.clock[0],
    )


async def test_a_readers_accept_gets_one_confused_reaction_and_nothing_else(bench: Bench) -> None:
    await regressed_pr(bench)
    body = comment(bench)
    before = len(bench.writes())
    first = await said(bench, "/perfbot accept udp* -- larger buffers", READER, "d1")
    again = await said(bench, "/perfbot accept", READER, "d2")
    assert first == "accept refused: reader has role read, write needed; reacted confused"
    assert again == "accept ignored: reader was already told on PR 7"
    assert bench.reactions() == ["confused"]
    assert len(bench.writes()) == before + 1  # the one reaction
    assert comment(bench) == body
    assert check(bench).conclusion == "failure"
    assert await bench.store.pull_acknowledgements(REPO_ID, 7) == []
    # One an hour: after it, the reader is told again, once.
    bench.clock[0] += 3601
    later = await said(bench, "/perfbot accept", READER, "d3")
    assert later == "accept refused: reader has role read, write needed; reacted confused"
    assert bench.reactions() == ["confused", "confused"]


async def test_an_acceptance_holds_at_its_value_and_lapses_beyond_it(bench: Bench) -> None:
    pull = await regressed_pr(bench)
    await said(bench, "/perfbot accept udp* -- larger buffers", WRITER, "d1")
    pull.head_sha = NEXT_HEAD
    again = await reported(bench, pull, 1002, UDP_DOWN)
    assert "is up to date; check run" in again
    assert ACCEPTED_ROW in comment(bench)
    assert check(bench, NEXT_HEAD).conclusion == "success"
    # 10 % worse than the accepted value: red again, and a line says why.
    pull.head_sha = THIRD_HEAD
    assert "is up to date; check run" in await reported(bench, pull, 1003, UDP_FURTHER)
    body = comment(bench)
    assert "🔴 **−19.00 %** (beyond 5 % tolerance; no longer accepted) |" in body
    assert (
        f"> ⚠️ The acceptance of <code>{UDP}</code> on <code>qemu_x86</code> by "
        "<code>writer</code> no longer holds: it measured 11.789 Mbps when accepted at "
        "<code>aaaaaaa</code> and has moved −10.00 % from there: a regression from the "
        "accepted level." in body
    )
    assert "### Performance report: 1 regression\n" in body
    assert check(bench, THIRD_HEAD).conclusion == "failure"
    # Accepted anew at the new level, it holds again.
    reason = await said(bench, "/perfbot accept udp4_mbps -- even larger", WRITER, "d2")
    assert reason.startswith("accepted by writer: 1 regression of PR 7")
    assert "☑️ −19.00 % (accepted by <code>writer</code>: even larger)" in comment(bench)
    assert "no longer holds" not in comment(bench)
    assert check(bench, THIRD_HEAD).conclusion == "success"
    # This PR's pushes are each judged with today's acceptance (at 10.61): all hold.
    pushes = [line for line in comment(bench).splitlines() if " UTC | " in line]
    shown = [(line.split(" | ")[0], line.split(" | ")[-2:]) for line in pushes]
    assert shown == [
        ("| <code>ccccccc</code> (this report)", ["1 accepted regression", "☑️ −19.00 % |"]),
        ("| <code>bbbbbbb</code>", ["1 accepted regression", "☑️ −10.00 % |"]),
        ("| <code>aaaaaaa</code>", ["1 accepted regression", "☑️ −10.00 % |"]),
    ]


async def test_unaccept_makes_it_red_again_and_keeps_the_record(
    bench: Bench, tmp_path: Path
) -> None:
    await regressed_pr(bench)
    await said(bench, "/perfbot accept -- larger buffers", WRITER, "d1")
    assert ACCEPTED_ROW in comment(bench)
    bench.clock[0] += 60
    reason = await said(bench, "/perfbot unaccept", WRITER, "d2")
    assert reason.startswith("unaccepted by writer: 1 metric(s) of PR 7 (comment ")
    body = comment(bench)
    assert RED_ROW in body
    assert "accepted by" not in body
    assert check(bench).conclusion == "failure"
    assert await bench.store.pull_acknowledgements(REPO_ID, 7) == []
    # Revoked, never deleted: the row is still there for audit.
    assert revoked_acknowledgements(tmp_path / "db") == [(UDP, WRITER, bench.clock[0])]


def revoked_acknowledgements(database: Path) -> list[tuple[str, str, float]]:
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT metric, revoked_by, revoked_at FROM acknowledgements"
            " WHERE revoked_at IS NOT NULL ORDER BY id"
        )
        return [(str(metric), str(by), float(at)) for metric, by, at in rows]


async def test_an_accept_that_matches_nothing_is_confused(bench: Bench) -> None:
    await regressed_pr(bench)
    body = comment(bench)
    reason = await said(bench, "/perfbot accept tcp*", WRITER, "d1")
    assert reason == "accept: no regression of PR 7 matches tcp*; reacted confused"
    nothing = await said(bench, "/perfbot unaccept", WRITER, "d2")
    assert nothing == "unaccept: nothing of PR 7 is accepted; reacted confused"
    assert comment(bench) == body
    assert await bench.store.pull_acknowledgements(REPO_ID, 7) == []


async def test_the_report_is_kept_only_when_it_has_a_regression(bench: Bench) -> None:
    bench.fake.add_collaborator(bench.world.repo, WRITER, "write")
    pull = bench.pull()
    assert "is up to date" in await reported(bench, pull, 1001, ZPERF_BASE)
    state = await bench.store.get_pull(REPO_ID, 7)
    assert state is not None
    assert state.report_body is not None
    assert load(state.report_body) is None
    reason = await said(bench, "/perfbot accept", WRITER, "d1")
    assert reason == "accept: PR 7 shows no report to accept in; reacted confused"
    pull.head_sha = NEXT_HEAD
    await reported(bench, pull, 1002, UDP_DOWN)
    state = await bench.store.get_pull(REPO_ID, 7)
    assert state is not None
    assert state.report_body is not None
    assert load(state.report_body) is not None
