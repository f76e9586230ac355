"""The scene `perfbot try` plays: a measured pull request on the stand-in GitHub, delivered
to `perfbot serve` step by step, each step told in one line as perfbot answers it.

1. the PR's measurement run finishes with the report (``base/`` and ``head/``);
2. a second push, measured again;
3. ``/perfbot rerun`` by a reviewer (write permission), and the re-run finishing;
4. ``/perfbot rerun`` by a stranger (no permission);
5. a push run on main, measuring main (the report's ``base/``).

A re-run perfbot starts by itself (confirming a regression before calling it) is finished
as the next step, as GitHub Actions would. What perfbot did is read from the stand-in's
state (comments, check runs, reactions, re-runs) and, when it posted nothing, from the
job's own reason in the store.
"""

from __future__ import annotations

import asyncio
import io
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from perfbot.cli.localfiles import read_tree
from perfbot.cli.try_service import WEBHOOK_SECRET
from perfbot.errors import PerfbotError
from perfbot.sandbox.fakegithub import FakeGitHub, Pull, Repo, Run
from perfbot.sandbox.hookshot import Hookshot
from perfbot.sandbox.page import EMOJI, Conversation
from perfbot.store import JobStatus, Store

OWNER, NAME, NUMBER = "acme", "widget", 7
INSTALLATION, REPO_ID = 1, 500
AUTHOR, REVIEWER, STRANGER = "alice", "bob", "mallory"
STEP_SECONDS = 30.0
POLL_SECONDS = 0.02


class SceneError(PerfbotError):
    """A step of the scene did not end as perfbot should end it (a bug, said plainly)."""


def zipped(report: Path, *, head_from: str | None = None) -> bytes:
    """``report``'s ``base/`` and ``head/`` as the perf-report artifact; with ``head_from``,
    only that side, named ``head/`` (a push run measures one commit). Each side is read as
    `perfbot compare` reads it: no link out of it followed, no file read past the cap."""
    buffer = io.BytesIO()
    sides = [head_from] if head_from else ["base", "head"]
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for side in sides:
            for file in read_tree(report / side).files:
                archive.writestr(f"{'head' if head_from else side}/{file.path}", file.data)
    return buffer.getvalue()


def _pr_number() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("pr_number.txt", f"{NUMBER}\n")
    return buffer.getvalue()


@dataclass(frozen=True)
class Seen:
    """The stand-in's state that a step may change."""

    comments: dict[int, tuple[int, tuple[tuple[str, str], ...]]]  # id → (edits, reactions)
    checks: dict[int, tuple[str, str | None]]  # id → (status, conclusion)
    reruns: int

    @classmethod
    def of(cls, fake: FakeGitHub) -> Seen:
        return cls(
            {
                c.id: (c.edits, tuple((r.content, r.user) for r in c.reactions))
                for c in list(fake.comments.values())
                if not c.deleted
            },
            {c.id: (c.status, c.conclusion) for c in list(fake.check_runs.values())},
            len(fake.reruns),
        )


@dataclass
class Scene:
    fake: FakeGitHub
    repo: Repo
    pull: Pull
    report: Path
    perfbot_url: str
    store: Store
    conversation: Conversation
    say: Callable[[str], None]
    lines: list[str] = field(default_factory=list)
    _next_run: int = 1001

    async def play(self) -> None:
        webhook = f"{self.perfbot_url}/webhook"
        async with Hookshot(self.fake, webhook, WEBHOOK_SECRET) as client:
            run = self._measured_push(self.pull.head_sha)
            await self._step(client, f"PR #{NUMBER} opened: run {run.id} finished", *self._run(run))
            await self._finish_reruns(client)
            sha = self.fake.add_commit(self.repo, "Tune the TCP window", branch=self.pull.head_ref)
            self.pull.head_sha = sha.sha
            run = self._measured_push(sha.sha)
            await self._step(
                client, f"second push {sha.sha[:7]}: run {run.id} finished", *self._run(run)
            )
            await self._finish_reruns(client)
            for login, who in ((REVIEWER, "a reviewer (write)"), (STRANGER, "a stranger (none)")):
                comment = self.fake.add_comment(self.repo, NUMBER, "/perfbot rerun", login)
                payload = self.fake.webhook_payload_issue_comment(comment)
                await self._step(
                    client, f"/perfbot rerun by {login}, {who}", "issue_comment", payload
                )
                await self._finish_reruns(client)
            main = self.fake.add_commit(self.repo, "Merge the TCP work", author=AUTHOR)
            run = self._run_record(main.sha, self.repo.default_branch, event="push")
            self.fake.add_artifact(
                self.repo, run, "perf-report", zipped(self.report, head_from="base")
            )
            await self._step(
                client, f"push run {run.id} on main {main.sha[:7]} finished", *self._run(run)
            )

    def _run_record(self, sha: str, branch: str, *, event: str = "pull_request") -> Run:
        run_id, self._next_run = self._next_run, self._next_run + 1
        return self.fake.add_run(self.repo, run_id, sha, branch, event=event, actor=AUTHOR)

    def _measured_push(self, sha: str) -> Run:
        run = self._run_record(sha, self.pull.head_ref)
        self.fake.add_artifact(self.repo, run, "perf-report", zipped(self.report))
        self.fake.add_artifact(self.repo, run, "pr-number", _pr_number())
        return run

    def _run(self, run: Run) -> tuple[str, dict[str, object]]:
        return "workflow_run", self.fake.webhook_payload_workflow_run(run)

    async def _finish_reruns(self, client: Hookshot) -> None:
        """Every run perfbot re-ran and that is still queued finishes, as Actions would."""
        for run in list(self.fake.runs.values()):
            if run.status == "queued":
                run.status, run.conclusion = "completed", "success"
                what = f"re-run of run {run.id} (attempt {run.run_attempt}) finished"
                await self._step(client, what, *self._run(run))

    async def _step(
        self, client: Hookshot, what: str, event: str, payload: dict[str, object]
    ) -> None:
        before, started = Seen.of(self.fake), time.monotonic()
        status, delivery = await client.deliver(event, payload)
        if status != 202:
            raise SceneError(f"perfbot answered the {event} delivery with {status}")
        reason = await self._done(delivery)
        did = self._what_changed(before, Seen.of(self.fake)) or [f"posted nothing ({reason})"]
        line = (
            f"{len(self.lines) + 1}. {what} → {'; '.join(did)} [{time.monotonic() - started:.1f} s]"
        )
        self.lines.append(line)
        self.conversation.steps.append(line)
        self.say(line)

    async def _done(self, delivery: str) -> str:
        """Until the delivery's job has ended and nothing else is queued; its reason."""
        deadline = time.monotonic() + STEP_SECONDS
        while time.monotonic() < deadline:
            outcome = await self.store.job_outcome(delivery)
            if outcome is not None and outcome.status is JobStatus.FAILED:
                raise SceneError(f"perfbot's job failed: {outcome.last_error}")
            ended = outcome is not None and outcome.status is JobStatus.DONE
            # Done, and so is what it queued (a watch of main, a confirmation).
            if outcome is not None and ended and await self.store.queue_depth(time.time()) == 0:
                return outcome.reason or "done"
            await asyncio.sleep(POLL_SECONDS)
        raise SceneError(f"perfbot did not finish delivery {delivery} in {STEP_SECONDS:.0f} s")

    def _what_changed(self, before: Seen, after: Seen) -> list[str]:
        fake, did = self.fake, []
        for comment_id, (edits, reactions) in after.comments.items():
            comment = fake.comments[comment_id]
            if comment.app_id == fake.app_id:
                if comment_id not in before.comments:
                    did.append(f"comment {comment_id} created")
                elif edits > before.comments[comment_id][0]:
                    did.append(f"comment {comment_id} edited in place")
            old = set(before.comments.get(comment_id, (0, ()))[1])
            for content, _user in (r for r in reactions if r not in old):
                did.append(f"reacted {EMOJI.get(content, content)} to {comment.user}'s comment")
        for check_id, (status, conclusion) in after.checks.items():
            if before.checks.get(check_id) != (status, conclusion):
                check = fake.check_runs[check_id]
                state = conclusion or status
                did.append(f"check run {check.name!r} on {check.head_sha[:7]}: {state}")
        for run_id in fake.reruns[before.reruns :]:
            did.append(f"re-ran run {run_id}")
        return did


def set_stage(fake: FakeGitHub) -> tuple[Repo, Pull]:
    """acme/widget with perfbot installed, a reviewer, and PR #7 from a branch of it."""
    fake.add_installation(INSTALLATION, OWNER)
    repo = fake.add_repo(f"{OWNER}/{NAME}", REPO_ID, INSTALLATION)
    fake.add_collaborator(repo, AUTHOR, "write")
    fake.add_collaborator(repo, REVIEWER, "write")
    base = fake.add_commit(repo, "Start the widget", author=AUTHOR)
    head = fake.add_commit(
        repo, "Speed up the TCP path", branch="feature-7", parents=[base.sha], author=AUTHOR
    )
    pull = fake.add_pull(repo, NUMBER, head.sha, "feature-7", title="Speed up the TCP path")
    return repo, pull
