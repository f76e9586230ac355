"""The handlers called directly, over the fake GitHub's in-process transport and a SQLite
store: no webhook, no worker, no uvicorn. Each test reads how the job ended from the
handler's own return value, so an absence ("nothing written") is told from a crash."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from perfbot.app import context, routes
from perfbot.app.configcache import ConfigCache
from perfbot.app.context import JobContext
from perfbot.app.job_payloads import encode
from perfbot.app.publish import PROOF_FRESH_SECONDS, proof_stands
from perfbot.github.app import GitHubApp
from perfbot.github.calls import GitHubCalls
from perfbot.github.errors import GitHubError
from perfbot.sandbox.fakegithub import Hold, Pull, RecordedRequest, Run
from perfbot.store import open_store
from perfbot.store.base import PullState, Store
from tests.harness import INSTALLATION, REPO_ID, World

HEAD = "a" * 40
NEXT_HEAD = "b" * 40
CONFIG = ".github/perfbot.yml"


@dataclass
class Bench:
    """One repository on the fake GitHub, a store, and what a worker would hand a handler."""

    world: World
    store: Store
    github: GitHubApp
    configs: ConfigCache = field(default_factory=ConfigCache)
    disabled: set[str] = field(default_factory=set)
    clock: list[float] = field(default_factory=lambda: [1_000_000.0])
    pull_reads: int = 0  # reads of PR 7 by the last ``_report_with_download_held``

    def context(self, delivery: str, installation: GitHubCalls | None = None) -> JobContext:
        return JobContext(
            delivery_id=delivery,
            installation=installation or self.github.installation(INSTALLATION),
            store=self.store,
            app_id=self.github.app_id,
            bot_login=self.github.bot_login,
            configs=self.configs,
            repo_disabled=lambda name: name in self.disabled,
            now=lambda: self.clock[0],
            worker="test-worker",
            log=logging.LoggerAdapter(logging.getLogger("test.handlers"), {}),
        )

    async def run(self, event: str, payload: dict[str, Any], delivery: str = "d") -> str:
        """Run the route's handler on the job the queue would hold for the webhook
        ``payload`` of ``event``."""
        # A whole webhook body reads as the previous release's job (version 1); the job is
        # handed over as this release writes it, read back from the queue.
        job = routes.decode(event, encode(routes.decode(event, json.dumps(payload))))
        installation = self.github.installation(INSTALLATION)
        ctx = self.context(delivery, installation)
        async with installation:
            reason = await routes.handler_of(job)(ctx, job)
        assert isinstance(reason, str), "every handler says how its job ended"
        assert reason
        return reason

    @property
    def fake(self) -> Any:
        return self.world.fake

    def pull(self, number: int = 7, labels: tuple[str, ...] = ()) -> Pull:
        return self.world.pull(number, HEAD, labels=labels)

    def run_payload(self, run: Run, action: str = "completed") -> dict[str, Any]:
        payload: dict[str, Any] = self.fake.webhook_payload_workflow_run(run, action)
        return payload

    def comment_payload(self, text: str, login: str = "bob", number: int = 7) -> dict[str, Any]:
        comment = self.fake.add_comment(self.world.repo, number, text, login)
        payload: dict[str, Any] = self.fake.webhook_payload_issue_comment(comment)
        return payload

    def writes(self) -> list[str]:
        return [f"{r.method} {r.path}" for r in self.fake.write_calls()]

    def reactions(self) -> list[str]:
        return [
            reaction.content
            for comment in self.fake.comments_on(self.world.repo, 7)
            for reaction in comment.reactions
        ]


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    world = World.create()
    store = open_store(str(tmp_path / "db"))
    await store.setup()
    github = world.github_app()
    try:
        yield Bench(world, store, github)
    finally:
        await github.close()
        await store.close()


async def until(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Wait (bounded) for something the handler does while it runs as a task."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


def answered(requests: list[RecordedRequest], method: str, path_end: str) -> bool:
    return any(r.method == method and r.path.endswith(path_end) and r.status for r in requests)


# --- opting out: zero write calls, and the reason ---------------------------------------------

OPT_OUTS = {
    "operator": ("the operator disabled acme/widget", {}),
    "config": ("perfbot is disabled for acme/widget by its configuration", {"enabled": "false"}),
    "org-exclude": ("acme/.github excludes widget", {}),
    "mute-label": ("PR 7 carries the mute label", {}),
}


def opt_out(bench: Bench, how: str) -> Pull:
    if how == "operator":
        bench.disabled.add("acme/widget")
    elif how == "config":
        bench.world.repo.files[CONFIG] = "enabled: false\n"
    elif how == "org-exclude":
        bench.fake.add_repo("acme/.github", 501, INSTALLATION, files={CONFIG: "exclude: [wid*]\n"})
    return bench.pull(labels=("PerfBot: Mute",) if how == "mute-label" else ())


@pytest.mark.parametrize("how", OPT_OUTS)
@pytest.mark.parametrize("event", ["report", "started", "rerun", "help", "check-button"])
async def test_an_opted_out_repository_gets_no_write(bench: Bench, how: str, event: str) -> None:
    pull = opt_out(bench, how)
    bench.fake.add_collaborator(bench.world.repo, "bob", "admin")
    run = bench.world.measured_run(pull, 1001)
    if event in ("report", "started"):
        action = "completed" if event == "report" else "requested"
        reason = await bench.run("workflow_run", bench.run_payload(run, action))
    elif event == "check-button":
        check = bench.fake.add_check_run(bench.world.repo, "perfbot", HEAD)
        payload = bench.fake.webhook_payload_check_run(check, "rerequested", "bob")
        reason = await bench.run("check_run", payload)
    else:
        reason = await bench.run("issue_comment", bench.comment_payload(f"/perfbot {event}"))
    assert bench.writes() == []
    assert reason.startswith("ignored: ")
    assert OPT_OUTS[how][0] in reason


# --- which run a re-run re-runs ---------------------------------------------------------------


def busy_repository(bench: Bench) -> Pull:
    """A PR whose head ran four workflows: the measurement first, then CI, lint and docs."""
    pull = bench.pull()
    bench.fake.add_collaborator(bench.world.repo, "bob", "write")
    bench.world.measured_run(pull, 1001)  # net-perf: uploads perf-report
    for run_id, name in ((1002, "CI"), (1003, "lint"), (1004, "docs")):
        bench.fake.add_run(
            bench.world.repo,
            run_id,
            HEAD,
            pull.head_ref,
            name=name,
            path=f".github/workflows/{name}.yml",
        )
    return pull


async def test_rerun_reruns_the_measurement_not_the_newest_run(bench: Bench) -> None:
    busy_repository(bench)
    reason = await bench.run("issue_comment", bench.comment_payload("/perfbot rerun"))
    assert bench.fake.reruns == [1001]
    assert "re-run of run 1001 started for bob" in reason
    assert bench.reactions() == ["rocket"]  # one reaction, saying how it ended


async def test_rerun_reruns_the_run_whose_report_is_shown(bench: Bench) -> None:
    pull = busy_repository(bench)
    reason = await bench.run("workflow_run", bench.run_payload(bench.fake.runs[1001]))
    assert "is up to date" in reason
    # A newer measurement of the same head, not reported (yet): the comment shows 1001.
    bench.world.measured_run(pull, 1005)
    before = len(bench.writes())
    reason = await bench.run("issue_comment", bench.comment_payload("/perfbot rerun"), "d2")
    assert bench.fake.reruns == [1001]
    assert "its report is the one shown on PR 7" in reason
    # The re-run request, the notice in the comment, one reaction: nothing more.
    report_id = bench.fake.bot_comments(bench.world.repo, 7)[0].id
    assert bench.writes()[before:] == [
        "POST /repos/acme/widget/actions/runs/1001/rerun",
        f"PATCH /repos/acme/widget/issues/comments/{report_id}",
        f"POST /repos/acme/widget/issues/comments/{_last_comment_id(bench)}/reactions",
    ]
    assert (
        "Re-run requested by <code>bob</code>"
        in bench.fake.bot_comments(bench.world.repo, 7)[0].body
    )


def _last_comment_id(bench: Bench) -> int:
    return int(bench.fake.comments_on(bench.world.repo, 7)[-1].id)


async def test_rerun_of_a_configured_workflow_needs_no_artifact(bench: Bench) -> None:
    bench.world.repo.files[CONFIG] = "workflows: [bench.yml]\n"
    pull = busy_repository(bench)
    bench.fake.add_run(
        bench.world.repo,
        1000,
        HEAD,
        pull.head_ref,
        name="bench",
        path=".github/workflows/bench.yml",
    )
    reason = await bench.run("issue_comment", bench.comment_payload("/perfbot rerun"))
    assert bench.fake.reruns == [1000]
    assert "the newest 'bench' run" in reason


@pytest.mark.parametrize("event", ["check_run", "check_suite"])
async def test_the_check_button_reruns_the_measurement(bench: Bench, event: str) -> None:
    busy_repository(bench)
    check = bench.fake.add_check_run(bench.world.repo, "perfbot", HEAD)
    payload = bench.fake.webhook_payload_check_run(check, "rerequested", "bob")
    if event == "check_suite":
        payload["check_suite"] = payload.pop("check_run")["check_suite"]
    reason = await bench.run(event, payload)
    assert bench.fake.reruns == [1001]
    assert "re-run of run 1001 started" in reason


async def test_a_pending_ci_run_does_not_hold_back_the_rerun(bench: Bench) -> None:
    busy_repository(bench)
    bench.fake.runs[1002].status, bench.fake.runs[1002].conclusion = "in_progress", None
    await bench.run("issue_comment", bench.comment_payload("/perfbot rerun"))
    assert bench.fake.reruns == [1001]


async def test_a_pending_measurement_is_not_rerun(bench: Bench) -> None:
    busy_repository(bench)
    await bench.run("issue_comment", bench.comment_payload("/perfbot rerun"))
    reason = await bench.run("issue_comment", bench.comment_payload("/perfbot rerun"), "d2")
    assert bench.fake.reruns == [1001]  # the second found it queued
    assert "re-run not needed" in reason
    assert sorted(bench.reactions()) == ["eyes", "rocket"]


async def test_no_measurement_run_is_refused_not_guessed(bench: Bench) -> None:
    pull = bench.pull()
    bench.fake.add_collaborator(bench.world.repo, "bob", "write")
    bench.fake.add_run(bench.world.repo, 1002, HEAD, pull.head_ref, name="CI", path="ci.yml")
    reason = await bench.run("issue_comment", bench.comment_payload("/perfbot rerun"))
    assert bench.fake.reruns == []
    assert "re-run failed: no measurement run" in reason
    assert bench.reactions() == ["confused"]


async def test_github_refusing_the_rerun_is_confused(bench: Bench) -> None:
    busy_repository(bench)
    bench.fake.fail_next(1, 403, path_contains="/rerun")
    reason = await bench.run("issue_comment", bench.comment_payload("/perfbot rerun"))
    assert "re-run failed" in reason
    assert "403" in reason
    assert bench.reactions() == ["confused"]


# --- who may make perfbot talk ----------------------------------------------------------------


async def test_a_stranger_gets_at_most_one_reaction(bench: Bench) -> None:
    bench.world.repo.private = True
    bench.pull()
    first = await bench.run("issue_comment", bench.comment_payload("/perfbot help", "carol"))
    calls = len(bench.fake.rate_limited_calls())
    repeats = [
        await bench.run("issue_comment", bench.comment_payload(text, "carol"), f"d{index}")
        for index, text in enumerate(["/perfbot help"] * 4 + ["/perfbot rerun"] * 2)
    ]
    assert first == "help refused: carol has role none, write needed; reacted confused"
    assert all("carol was already told on PR 7" in reason for reason in repeats)
    assert len(bench.fake.rate_limited_calls()) == calls  # the repeats cost no REST call
    assert bench.fake.bot_comments(bench.world.repo, 7) == []
    assert bench.reactions() == ["confused"]


async def test_a_refusal_does_not_hold_back_someone_allowed(bench: Bench) -> None:
    busy_repository(bench)
    await bench.run("issue_comment", bench.comment_payload("/perfbot rerun", "mallory"), "d1")
    reason = await bench.run("issue_comment", bench.comment_payload("/perfbot rerun"), "d2")
    assert "re-run of run 1001 started for bob" in reason
    # bob's allowed command gave its record back: his next one is answered too.
    again = await bench.run("issue_comment", bench.comment_payload("/perfbot rerun"), "d3")
    assert "re-run not needed" in again


async def test_help_is_answered_once_per_person_and_window(bench: Bench) -> None:
    bench.pull()
    bench.fake.add_collaborator(bench.world.repo, "bob", "write")
    first = await bench.run("issue_comment", bench.comment_payload("/perfbot help"), "d1")
    again = await bench.run("issue_comment", bench.comment_payload("/perfbot help"), "d2")
    assert first.startswith("help: answered bob on PR 7 in comment ")
    assert again == "help: already answered for bob on PR 7"
    assert len(bench.fake.bot_comments(bench.world.repo, 7)) == 1
    assert bench.reactions() == []  # the answer is the one write
    # The same delivery retried (its comment failed, say) may still answer.
    retried = await bench.run("issue_comment", bench.comment_payload("/perfbot help"), "d1")
    assert retried.startswith("help: answered")
    bench.clock[0] += 3601
    later = await bench.run("issue_comment", bench.comment_payload("/perfbot help"), "d3")
    assert later.startswith("help: answered")
    assert len(bench.fake.bot_comments(bench.world.repo, 7)) == 3


# --- checked again just before each write -----------------------------------------------------


async def _report_with_download_held(
    bench: Bench,
    meanwhile: Callable[[Pull], Awaitable[None]],
    *,
    took: float = PROOF_FRESH_SECONDS + 1,
    update: bool = False,
    started: bool = False,
) -> str:
    """A report whose artifact download waits until ``meanwhile`` has changed the world,
    and takes ``took`` seconds (by default long enough that the proof is asked again);
    ``update``: the PR has perfbot's comment already (its first report, a minute before);
    ``started``: the run's start was handled first (GitHub's order), which noted its head."""
    pull = bench.pull()
    if update:
        first = bench.world.measured_run(pull, 1000)
        assert (await bench.run("workflow_run", bench.run_payload(first), "d0")).startswith(
            "comment "
        )
        bench.clock[0] += 60
    run = bench.world.measured_run(pull, 1001)
    if started:
        await bench.run("workflow_run", bench.run_payload(run, "requested"), "d1r")
    before = len(bench.fake.requests)
    hold: Hold = bench.fake.hold_next("/blobs/")
    task = asyncio.create_task(bench.run("workflow_run", bench.run_payload(run)))
    await until(hold.reached.is_set, "the report download")
    await until(lambda: answered(bench.fake.requests[before:], "GET", "/pulls/7"), "the PR's proof")
    await meanwhile(pull)
    bench.clock[0] += took
    hold.release()
    reason = await task
    bench.pull_reads = _pull_reads(bench.fake.requests[before:])
    return reason


def _pull_reads(requests: list[RecordedRequest]) -> int:
    return sum(1 for r in requests if r.method == "GET" and r.path.endswith("/pulls/7"))


async def _nothing(_pull: Pull) -> None:
    pass


async def test_a_quick_update_reads_its_pr_once(bench: Bench) -> None:
    took = PROOF_FRESH_SECONDS / 2
    reason = await _report_with_download_held(bench, _nothing, took=took, update=True)
    assert reason.startswith("comment ")
    assert bench.pull_reads == 1  # the proof's read is the PR as it is now


async def test_a_slow_update_reads_its_pr_again_before_writing(bench: Bench) -> None:
    reason = await _report_with_download_held(bench, _nothing, update=True)
    assert reason.startswith("comment ")
    assert bench.pull_reads == 2


async def test_a_first_comment_reads_its_pr_again_however_quick(bench: Bench) -> None:
    # Whether to look for an existing comment is decided from the PR's count of comments,
    # as GitHub gives it under the PR's lock. The run's start noted its head (the PR has
    # a state, and no comment): nothing noted since, and still read again.
    reason = await _report_with_download_held(bench, _nothing, took=0.0, started=True)
    assert reason.startswith("comment ")
    state = await bench.store.get_pull(REPO_ID, 7)
    assert state is not None
    assert state.newest_head_sha == HEAD
    assert bench.pull_reads == 2


async def test_a_newer_head_noted_during_a_quick_download_is_read_again(bench: Bench) -> None:
    """A run started on a newer push, handled while the report downloads (two jobs of one
    PR at once: a replica that stalled past its lease), noted the PR's new head: the
    proof's answer would undo that, so the PR is read again however recent the proof."""

    async def pushed_and_started(pull: Pull) -> None:
        pull.head_sha = NEXT_HEAD
        started = bench.fake.add_run(
            bench.world.repo, 1002, NEXT_HEAD, pull.head_ref, status="queued"
        )
        noted = await bench.run("workflow_run", bench.run_payload(started, "requested"), "d2")
        assert noted.startswith("comment ")  # marked stale at once

    reason = await _report_with_download_held(bench, pushed_and_started, took=0.0, update=True)
    assert reason.startswith("comment ")
    assert bench.pull_reads == 3  # the proof, the started run's own, and the read again
    (comment,) = bench.fake.bot_comments(bench.world.repo, 7)
    assert "These numbers are for the previous commit <code>aaaaaaa</code>" in comment.body
    state = await bench.store.get_pull(REPO_ID, 7)
    assert state is not None
    assert state.newest_head_sha == NEXT_HEAD


async def test_a_push_back_to_the_shown_head_during_a_quick_download_is_read_again(
    bench: Bench,
) -> None:
    """The comment shows HEAD; the PR moved to NEXT_HEAD, whose report downloads; meanwhile
    it is pushed back to HEAD and that run's start noted (the shown head, noted anew). The
    PR is read again, and the comment says NEXT_HEAD's numbers are for a previous commit."""
    pull = bench.pull()
    shown = bench.world.measured_run(pull, 1000)
    assert (await bench.run("workflow_run", bench.run_payload(shown), "d0")).startswith("comment ")
    bench.clock[0] += 60
    pull.head_sha = NEXT_HEAD
    moved = bench.world.measured_run(pull, 1001)
    await bench.run("workflow_run", bench.run_payload(moved, "requested"), "d1r")
    before = len(bench.fake.requests)
    hold: Hold = bench.fake.hold_next("/blobs/")
    task = asyncio.create_task(bench.run("workflow_run", bench.run_payload(moved), "d1"))
    await until(hold.reached.is_set, "the report download")
    await until(lambda: answered(bench.fake.requests[before:], "GET", "/pulls/7"), "the PR's proof")
    pull.head_sha = HEAD
    back = bench.fake.add_run(bench.world.repo, 1002, HEAD, pull.head_ref, status="queued")
    noted = await bench.run("workflow_run", bench.run_payload(back, "requested"), "d2r")
    assert noted.startswith("comment ")
    hold.release()
    assert (await task).startswith("comment ")
    # The proof, the started run's own, and the read again before the write.
    assert _pull_reads(bench.fake.requests[before:]) == 3
    state = await bench.store.get_pull(REPO_ID, 7)
    assert state is not None
    assert state.newest_head_sha == HEAD
    (comment,) = bench.fake.bot_comments(bench.world.repo, 7)
    assert "These numbers are for the previous commit <code>bbbbbbb</code>" in comment.body


async def test_two_first_reports_at_once_leave_one_comment(bench: Bench) -> None:
    """Two runs of a PR reported at once (a replica that stalled past its lease): the first
    one's comment lands and its check run fails, so the PR's state is not saved. The second
    reads the PR under the lock, sees the comment, and edits it rather than adding one."""
    pull = bench.pull()
    a, b = bench.world.measured_run(pull, 1001), bench.world.measured_run(pull, 1002)
    hold_a: Hold = bench.fake.hold_next("/blobs/")
    first = asyncio.create_task(bench.run("workflow_run", bench.run_payload(a), "da"))
    await until(hold_a.reached.is_set, "the first report's download")
    hold_b: Hold = bench.fake.hold_next("/blobs/")
    second = asyncio.create_task(bench.run("workflow_run", bench.run_payload(b), "db"))
    await until(hold_b.reached.is_set, "the second report's download")
    bench.fake.fail_next(count=1, status=422, path_contains="check-runs")
    hold_a.release()
    with pytest.raises(GitHubError):
        await first
    assert await bench.store.get_pull(REPO_ID, 7) is None
    hold_b.release()
    assert (await second).startswith("comment ")
    assert len(bench.fake.bot_comments(bench.world.repo, 7)) == 1


def test_a_proof_from_a_clock_that_stepped_back_does_not_stand() -> None:
    shown = PullState(REPO_ID, 7, comment_id=12, newest_head_sha=HEAD, reported_head_sha=HEAD)
    proved_at = 1_000.0
    assert proof_stands(shown, shown, 7, proved_at, proved_at + 1)
    assert not proof_stands(shown, shown, 7, proved_at, proved_at - 1)  # the clock went back
    assert not proof_stands(shown, shown, 8, proved_at, proved_at + 1)  # another PR's state
    assert not proof_stands(shown, None, 7, proved_at, proved_at + 1)  # not read before


async def test_a_pr_closed_while_its_report_downloads_gets_nothing(bench: Bench) -> None:
    async def close(pull: Pull) -> None:
        pull.state = "closed"

    reason = await _report_with_download_held(bench, close)
    assert reason == "not posted: PR 7 was closed while its report was read"
    assert bench.writes() == []


async def test_suspended_while_the_report_downloads_gets_nothing(bench: Bench) -> None:
    async def suspend(_pull: Pull) -> None:
        await bench.store.set_suspended(INSTALLATION, True, bench.clock[0])

    reason = await _report_with_download_held(bench, suspend)
    assert reason == f"not posted: installation {INSTALLATION} is suspended or uninstalled"
    assert bench.writes() == []


@pytest.mark.parametrize("how", ["mute-label", "operator"])
async def test_opted_out_while_the_report_downloads_gets_nothing(bench: Bench, how: str) -> None:
    async def opt(pull: Pull) -> None:
        if how == "operator":
            bench.disabled.add("acme/widget")
        else:
            pull.labels.append("perfbot: mute")

    reason = await _report_with_download_held(bench, opt)
    assert reason.startswith("not posted: ")
    assert OPT_OUTS[how][0] in reason
    assert bench.writes() == []


async def test_a_head_moved_during_the_download_gets_the_stale_banner(bench: Bench) -> None:
    async def push(pull: Pull) -> None:
        pull.head_sha = NEXT_HEAD

    reason = await _report_with_download_held(bench, push)
    assert reason.startswith("comment ")
    assert "is up to date; check run " in reason
    (comment,) = bench.fake.bot_comments(bench.world.repo, 7)
    assert "These numbers are for the previous commit <code>aaaaaaa</code>" in comment.body
    assert "<code>bbbbbbb</code> is being measured" in comment.body


async def test_suspended_between_comment_and_check_run_writes_no_check_run(bench: Bench) -> None:
    pull = bench.pull()
    run = bench.world.measured_run(pull, 1001)
    hold = bench.fake.hold_next("/issues/7/comments", method="POST")
    task = asyncio.create_task(bench.run("workflow_run", bench.run_payload(run)))
    await until(hold.reached.is_set, "the comment's creation")
    await bench.store.set_suspended(INSTALLATION, True, bench.clock[0])
    hold.release()
    reason = await task
    assert "check run not written: installation 1 is suspended or uninstalled" in reason
    assert len(bench.fake.bot_comments(bench.world.repo, 7)) == 1  # already under way
    assert bench.fake.check_runs == {}


async def test_suspended_while_waiting_for_the_prs_lock_gets_nothing(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No GitHub call between the measurements' check and the comment's (the proof is
    # fresh, the comment exists): the wait for the PR's lock alone must not let the
    # earlier "not suspended" stand.
    pull = bench.pull()
    first = bench.world.measured_run(pull, 1000)
    assert (await bench.run("workflow_run", bench.run_payload(first), "d0")).startswith("comment ")
    key = f"pull:{REPO_ID}:7"
    assert await bench.store.try_lock(key, "other", 15.0, bench.clock[0])
    tries: list[str] = []
    take = bench.store.try_lock

    async def counted(lock: str, owner: str, ttl: float, now: float) -> bool:
        if lock == key and owner != "other":
            tries.append(owner)
        return await take(lock, owner, ttl, now)

    monkeypatch.setattr(bench.store, "try_lock", counted)
    writes = len(bench.writes())
    task = asyncio.create_task(
        bench.run("workflow_run", bench.run_payload(bench.world.measured_run(pull, 1001)))
    )
    await until(lambda: len(tries) >= 2, "the job waiting for the PR's lock")
    await bench.store.set_suspended(INSTALLATION, True, bench.clock[0])
    await bench.store.unlock(key, "other")
    assert await task == f"not posted: installation {INSTALLATION} is suspended or uninstalled"
    assert len(bench.writes()) == writes


async def test_the_suspension_is_read_again_after_a_github_call_or_a_tenth_of_a_second(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[int] = []
    stored = bench.store.is_suspended

    async def counted(installation_id: int) -> bool:
        reads.append(installation_id)
        return await stored(installation_id)

    monkeypatch.setattr(bench.store, "is_suspended", counted)
    clock = [100.0]
    monkeypatch.setattr(context, "monotonic", lambda: clock[0])
    bench.pull()
    ctx = bench.context("d-1")
    assert not await ctx.suspended()
    assert not await ctx.suspended()
    assert reads == [INSTALLATION]  # nothing asked of GitHub between: the answer stands
    clock[0] += context.SUSPENSION_FRESH_SECONDS * 2
    assert not await ctx.suspended()
    assert len(reads) == 2  # nor anything else, but it is no longer fresh
    await bench.store.set_suspended(INSTALLATION, True, bench.clock[0])
    await ctx.installation.get_pull("acme", "widget", 7)
    assert await ctx.suspended()  # the call may have taken a while: the store is read
    assert await ctx.suspended()
    assert len(reads) == 4  # a suspension is never taken from memory


async def test_a_command_of_a_suspended_installation_writes_nothing(bench: Bench) -> None:
    busy_repository(bench)
    hold = bench.fake.hold_next("/collaborators/")
    payload = bench.comment_payload("/perfbot rerun")
    task = asyncio.create_task(bench.run("issue_comment", payload))
    await until(hold.reached.is_set, "the permission check")
    await bench.store.set_suspended(INSTALLATION, True, bench.clock[0])
    hold.release()
    reason = await task
    assert reason == "re-run not requested: installation 1 is suspended or uninstalled"
    assert bench.writes() == []


async def test_a_deleted_installation_counts_as_suspended(bench: Bench) -> None:
    payload = {"action": "deleted", "installation": {"id": INSTALLATION}, "repositories": []}
    reason = await bench.run("installation", payload)
    assert "installation 1: deleted" in reason
    assert await bench.store.is_suspended(INSTALLATION)


async def test_a_suspend_handled_after_its_unsuspend_is_ignored(bench: Bench) -> None:
    def payload(action: str, at: str) -> dict[str, Any]:
        times = {"updated_at": at, "suspended_at": at if action == "suspend" else None}
        return {"action": action, "installation": {"id": INSTALLATION, **times}}

    lifted = await bench.run("installation", payload("unsuspend", "2021-04-29T03:40:00Z"))
    assert lifted == "installation 1: unsuspend"
    late = await bench.run("installation", payload("suspend", "2021-04-29T02:32:50Z"), "d2")
    assert late == "installation 1: suspend ignored: a newer event is recorded"
    assert not await bench.store.is_suspended(INSTALLATION)
    # A newer suspend does suspend it (the control).
    newer = await bench.run("installation", payload("suspend", "2021-04-29T04:00:00Z"), "d3")
    assert newer == "installation 1: suspend"
    assert await bench.store.is_suspended(INSTALLATION)


async def test_the_started_notice_respects_the_mute_label(bench: Bench) -> None:
    pull = bench.pull()
    run = bench.world.measured_run(pull, 1001)
    assert "is up to date" in await bench.run("workflow_run", bench.run_payload(run))
    before = len(bench.writes())
    pull.labels.append("perfbot: mute")
    pull.head_sha = NEXT_HEAD
    started = bench.fake.add_run(bench.world.repo, 1002, NEXT_HEAD, pull.head_ref, status="queued")
    reason = await bench.run("workflow_run", bench.run_payload(started, "requested"), "d2")
    assert reason == "ignored: PR 7 carries the mute label"
    assert len(bench.writes()) == before
    assert (await bench.store.get_pull(REPO_ID, 7)) is not None
