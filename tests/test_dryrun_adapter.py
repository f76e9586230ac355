"""Every method of perfbot's GitHub adapter, called in a dry run, sends GitHub no write.

The methods are not listed by hand: every public coroutine of ``Installation`` and
``GitHubApp`` is called, with arguments made from its signature, against the fake GitHub.
A write method added later that gets past the dry run's gate (a second client, a request
through the storage transport, a call made outside the choke point) makes the fake see a
write, and this test fails. The same calls without a dry run show that the fake does see
each write method's write, so the test can tell.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import typing
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from perfbot.errors import PerfbotError
from perfbot.github.app import GitHubApp
from perfbot.github.dryrun import DryRun
from perfbot.github.installation import Installation
from tests.harness import INSTALLATION, World, report_zip

# The adapter's write methods, as the fake sees them without a dry run. A method that
# writes and is not here fails the control test: add it, and the dry run covers it.
WRITES = {
    "Installation.add_reaction",
    "Installation.create_comment",
    "Installation.create_issue",
    "Installation.rerun_workflow_run",
    "Installation.update_comment",
    "Installation.update_issue",
    "Installation.upsert_check_run",
    "GitHubApp.redeliver",
}
# Not calls to GitHub.
NOT_CALLS = {"GitHubApp.close"}
HEAD = "a" * 40


@dataclass
class Stage:
    """What the arguments name: a PR with a comment, an issue, a run with an artifact, a
    check run and a logged delivery, all on the fake."""

    world: World
    samples: dict[str, Any]

    @classmethod
    def create(cls) -> Stage:
        world = World.create({".github/perfbot.yml": "threshold: 1\n"})
        fake, repo = world.fake, world.repo
        fake.add_collaborator(repo, "bob", "write")
        pull = world.pull(7, HEAD)
        run = world.measured_run(pull, 1001, report=report_zip({"tcp4_mbps": 5.0}))
        artifact = fake.add_artifact(repo, run, "extra", b"not a zip")
        comment = fake.add_comment(repo, 7, "/perfbot rerun", "bob")
        issue = fake.add_issue(repo, title="tcp4_mbps fell", body="since a")
        check = fake.add_check_run(repo, "perfbot", HEAD)
        delivery = fake.add_delivery("workflow_run", "completed", payload={"action": "x"})
        samples: dict[str, Any] = {
            "owner": "acme",
            "repo": "widget",
            "number": issue.number,
            "comment_id": comment.id,
            "run_id": run.id,
            "artifact_id": artifact.id,
            "max_bytes": 10_000_000,
            "sha": HEAD,
            "head_sha": HEAD,
            "ref": "main",
            "path": ".github/perfbot.yml",
            "username": "bob",
            "body": "perfbot's words",
            "title": "a title",
            "name": "perfbot",
            "summary": "a summary",
            "labels": ("perfbot",),
            "check_run_id": check.id,
            "delivery_id": delivery.id,
            "since": 0.0,
            "max_pages": 1,
        }
        return cls(world, samples)

    def arguments(self, qualified: str, method: Callable[..., Any]) -> dict[str, Any]:
        """Keyword arguments for ``method``: a sample by name, else a Literal's first value,
        else the parameter's default."""
        hints = typing.get_type_hints(method)
        given: dict[str, Any] = {}
        for name, parameter in inspect.signature(method).parameters.items():
            if name == "self":
                continue
            if name in self.samples:
                given[name] = self.samples[name]
                continue
            literal = _literal(hints.get(name))
            if literal is not None:
                given[name] = literal
            elif parameter.default is inspect.Parameter.empty:
                pytest.fail(f"{qualified}({name}=…): add a sample for {name} to Stage.samples")
        return given


def _literal(hint: object) -> object | None:
    """The first value of a Literal (or of an Optional Literal) hint."""
    for candidate in (hint, *typing.get_args(hint)):
        if typing.get_origin(candidate) is typing.Literal:
            first: object = typing.get_args(candidate)[0]
            return first
    return None


def public_coroutines(cls: type) -> list[tuple[str, str]]:
    return [
        (f"{cls.__name__}.{name}", name)
        for name, _ in inspect.getmembers(cls, inspect.iscoroutinefunction)
        if not name.startswith("_") and f"{cls.__name__}.{name}" not in NOT_CALLS
    ]


@asynccontextmanager
async def adapter(world: World, dry_run: DryRun | None) -> AsyncIterator[GitHubApp]:
    app = world.github_app(dry_run=dry_run)
    try:
        yield app
    finally:
        await app.close()


Call = tuple[str, Callable[[], Awaitable[object]]]


def calls(stage: Stage, app: GitHubApp, installation: Installation) -> list[Call]:
    """Every public coroutine of the adapter, bound to its arguments."""
    found: list[Call] = []
    for owner, cls in ((installation, Installation), (app, GitHubApp)):
        for qualified, name in public_coroutines(cls):
            method = getattr(owner, name)
            kwargs = stage.arguments(qualified, getattr(cls, name))
            found.append((qualified, functools.partial(method, **kwargs)))
    return found


async def play(stage: Stage, dry_run: DryRun | None) -> dict[str, tuple[int, int]]:
    """Each method's (writes the fake saw, writes the dry run held back)."""
    fake, seen = stage.world.fake, {}
    async with adapter(stage.world, dry_run) as app, app.installation(INSTALLATION) as inst:
        for qualified, call in calls(stage, app, inst):
            before, held = len(fake.write_calls()), dry_run.total if dry_run else 0
            # GitHub's refusal is an answer too: what matters is what was sent.
            with contextlib.suppress(PerfbotError):
                await call()
            after = dry_run.total if dry_run else 0
            seen[qualified] = (len(fake.write_calls()) - before, after - held)
    return seen


async def test_no_method_of_the_adapter_writes_to_github_in_a_dry_run() -> None:
    stage = Stage.create()
    seen = await play(stage, DryRun())
    sent = {name: counts[0] for name, counts in seen.items() if counts[0]}
    assert sent == {}, f"written to GitHub in a dry run: {stage.world.fake.write_calls()}"
    held = {name for name, counts in seen.items() if counts[1]}
    assert held == WRITES


async def test_without_a_dry_run_the_fake_sees_each_write_method_write() -> None:
    """The control: the calls above do reach GitHub's writes when nothing holds them."""
    seen = await play(Stage.create(), None)
    assert {name for name, counts in seen.items() if counts[0]} == WRITES
    assert {"Installation.get_pull", "GitHubApp.list_hook_deliveries"} <= set(seen)
