"""``comment: always | on-change | never`` in ``.github/perfbot.yml``, over the fake GitHub
with the handlers called directly (``test_handlers.Bench``) on zperf console logs.

``on-change``: a report with nothing to say gets the check run and no comment; the next
push with a regression gets the comment, and once it exists it is kept up to date, also by
a report with nothing to say. ``never``: the check run only. Each "no comment" is told
from a crash by the job's own reason. What has something to say is the engine's
(``conclusion.worth_a_comment``)."""

from __future__ import annotations

import pytest

from perfbot.engine.judge import acceptance, conclusion
from perfbot.engine.judge.compare import compare
from perfbot.model import FailedCase
from perfbot.sandbox.fakegithub import Pull
from tests.builders import side
from tests.harness import ZPERF_BASE, regressed, report_zip, zip_of, zperf_log
from tests.test_acceptance import BASE, DOWN, PLATFORM, UDP, accepted_by_writer, judged
from tests.test_handlers import CONFIG, HEAD, NEXT_HEAD, Bench, bench

__all__ = ["bench"]  # the fixture, used by name

THIRD_HEAD = "c" * 40


async def reported(bench: Bench, pull: Pull, run_id: int, head: dict[str, float]) -> str:
    run = bench.world.measured_run(pull, run_id, report=report_zip(head))
    return await bench.run("workflow_run", bench.run_payload(run), f"run-{run_id}")


def comments(bench: Bench) -> list[str]:
    return [str(c.body) for c in bench.fake.bot_comments(bench.world.repo, 7)]


async def test_on_change_comments_once_something_changed_and_keeps_it_current(
    bench: Bench,
) -> None:
    bench.world.repo.files[CONFIG] = "comment: on-change\n"
    pull = bench.pull()
    quiet = await reported(bench, pull, 1001, ZPERF_BASE)
    assert quiet.startswith("no comment on PR 7 (comment: on-change, nothing to say); check run ")
    assert comments(bench) == []
    (check,) = bench.fake.check_runs_for(bench.world.repo, HEAD)
    assert check.output["title"] == "no change beyond the noise floor"
    assert "<code>qemu_x86</code>: all 4 metrics unchanged" in str(check.output["summary"])
    # The next push regresses: now there is something to say.
    pull.head_sha = NEXT_HEAD
    moved = await reported(bench, pull, 1002, regressed())
    assert moved.startswith("comment ")
    assert "is up to date; check run " in moved
    (body,) = comments(bench)
    assert "### Performance report: 1 regression\n" in body
    # A quiet push after it edits the comment: never left showing the regression.
    pull.head_sha = THIRD_HEAD
    edited = await reported(bench, pull, 1003, ZPERF_BASE)
    assert edited.startswith("comment ")
    (body,) = comments(bench)
    assert "### Performance report: no change beyond the noise floor\n" in body


async def test_never_writes_the_check_run_only(bench: Bench) -> None:
    bench.world.repo.files[CONFIG] = "comment: never\n"
    pull = bench.pull()
    reason = await reported(bench, pull, 1001, regressed())
    assert reason.startswith("no comment on PR 7 (comment: never); check run ")
    assert comments(bench) == []
    (check,) = bench.fake.check_runs_for(bench.world.repo, HEAD)
    assert check.output["title"] == "1 regression"
    assert bench.writes() == ["POST /repos/acme/widget/check-runs"]


@pytest.mark.parametrize(("mode", "comments_written"), [("on-change", 1), ("never", 0)])
async def test_a_failed_case_is_something_to_say(
    bench: Bench, mode: str, comments_written: int
) -> None:
    bench.world.repo.files[CONFIG] = f"comment: {mode}\n"
    pull = bench.pull()
    # The PR's zperf run never said ZPERF-DONE: a failed case, every value the same.
    files = {
        "base/qemu_x86/zperf.log": zperf_log(ZPERF_BASE),
        "head/qemu_x86/zperf.log": zperf_log(ZPERF_BASE, done=False),
    }
    run = bench.world.measured_run(pull, 1001, report=zip_of(files))
    reason = await bench.run("workflow_run", bench.run_payload(run))
    assert "; check run " in reason
    assert len(comments(bench)) == comments_written
    (check,) = bench.fake.check_runs_for(bench.world.repo, HEAD)
    assert check.output["title"] == "1 failed case"


async def test_on_change_without_check_run_still_keeps_the_state(bench: Bench) -> None:
    bench.world.repo.files[CONFIG] = "comment: on-change\ncheck_run: false\n"
    pull = bench.pull()
    reason = await reported(bench, pull, 1001, ZPERF_BASE)
    assert reason == "no comment on PR 7 (comment: on-change, nothing to say)"
    assert bench.writes() == []
    state = await bench.store.get_pull(500, 7)
    assert state is not None
    assert state.reported_head_sha == HEAD


# --- comment: on-change ----------------------------------------------------------------------


def test_a_report_is_worth_a_comment_when_something_moved_failed_or_is_uncertain() -> None:
    quiet = judged(BASE)
    assert not conclusion.worth_a_comment(quiet, confirming=False)
    assert conclusion.worth_a_comment(quiet, confirming=True)
    assert conclusion.worth_a_comment(judged(DOWN), confirming=False)
    accepted = acceptance.judge(judged(DOWN), [accepted_by_writer()])
    assert conclusion.worth_a_comment(accepted, confirming=False)
    failed = compare(
        side({UDP: BASE}, deterministic=False),
        side({UDP: BASE}, deterministic=False, failures=[FailedCase(PLATFORM, "tcp", "x")]),
    )
    assert conclusion.worth_a_comment(failed, confirming=False)
    uncertain = compare(
        side({UDP: 10.0}, deterministic=False), side({UDP: 9.0}, deterministic=False)
    )
    assert conclusion.worth_a_comment(uncertain, confirming=False)
    one_side = compare(side({UDP: BASE}), side({}, platform="other"))
    assert conclusion.worth_a_comment(one_side, confirming=False)
