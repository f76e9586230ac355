"""``perfbot comment``: the Actions-only path, with a workflow's token, on the fake GitHub."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfbot.app.actions import CommentJob, comment_for_run
from perfbot.engine.show.render import MARKER
from perfbot.github.errors import GitHubError
from perfbot.sandbox.fakegithub import ACTIONS_APP_ID, ACTIONS_BOT_LOGIN, serve
from tests.harness import World, report_zip

HEAD_A, HEAD_B = "a" * 40, "b" * 40
ROOT = Path(__file__).resolve().parent.parent


def job_for(world: World, run_id: int, token: str | None = None) -> CommentJob:
    return CommentJob(
        owner="acme",
        repo="widget",
        run_id=run_id,
        token=token or world.fake.issue_actions_token(world.repo),
        api_url=world.fake.api_url,
    )


def actions_comments(world: World, number: int) -> list[str]:
    return [
        c.body
        for c in world.fake.comments_on(world.repo, number)
        if c.user == ACTIONS_BOT_LOGIN and c.app_id == ACTIONS_APP_ID
    ]


async def test_first_run_posts_the_comment_as_the_workflow_bot() -> None:
    world = World.create()
    pull = world.pull(7, HEAD_A)
    run = world.measured_run(pull, 3001)

    await comment_for_run(job_for(world, run.id), transport=world.fake.transport())

    bodies = actions_comments(world, 7)
    assert len(bodies) == 1
    assert bodies[0].startswith(MARKER)
    assert "tcp4" in bodies[0]
    assert "regress" in bodies[0].lower()
    # The App-only check run is not attempted with a workflow token.
    assert world.fake.check_runs_for(world.repo, HEAD_A) == []
    assert world.fake.storage_requests, "the report was downloaded from storage"
    assert all("authorization" not in r.headers for r in world.fake.storage_requests)


async def test_a_later_run_edits_the_same_comment() -> None:
    world = World.create()
    pull = world.pull(7, HEAD_A)
    first = world.measured_run(pull, 3001)
    await comment_for_run(job_for(world, first.id), transport=world.fake.transport())
    [original] = world.fake.comments_on(world.repo, 7)

    pull.head_sha = HEAD_B
    unchanged = report_zip({"tcp4_mbps": 5.97}, {"tcp4_mbps": 5.97})
    second = world.measured_run(pull, 3002, report=unchanged)
    await comment_for_run(job_for(world, second.id), transport=world.fake.transport())

    comments = world.fake.comments_on(world.repo, 7)
    assert [c.id for c in comments] == [original.id]
    assert comments[0].edits == 1
    assert HEAD_B[:7] in comments[0].body


async def test_a_pasted_marker_is_not_adopted() -> None:
    world = World.create()
    pull = world.pull(7, HEAD_A)
    pasted = world.fake.add_comment(world.repo, 7, f"{MARKER}\nlooks like perfbot", "mallory")
    run = world.measured_run(pull, 3001)

    await comment_for_run(job_for(world, run.id), transport=world.fake.transport())

    assert pasted.body == f"{MARKER}\nlooks like perfbot"
    assert pasted.edits == 0
    assert len(actions_comments(world, 7)) == 1


async def test_a_forged_pr_number_posts_nothing() -> None:
    world = World.create()
    pull = world.pull(7, HEAD_A)
    world.pull(8, "c" * 40)  # the victim: another open PR of the repository
    run = world.measured_run(pull, 3001, hint=8)

    await comment_for_run(job_for(world, run.id), transport=world.fake.transport())

    assert world.fake.comments_on(world.repo, 8) == []
    # The hint is refused; the run's head commit still proves PR 7.
    assert len(actions_comments(world, 7)) == 1


async def test_an_unknown_run_is_a_clear_error() -> None:
    world = World.create()
    world.pull(7, HEAD_A)
    with pytest.raises(GitHubError) as caught:
        await comment_for_run(job_for(world, 999_999), transport=world.fake.transport())
    assert caught.value.status == 404
    assert world.fake.write_calls() == []


async def test_a_bad_token_is_refused_without_writing() -> None:
    world = World.create()
    pull = world.pull(7, HEAD_A)
    run = world.measured_run(pull, 3001)
    with pytest.raises(GitHubError) as caught:
        await comment_for_run(
            job_for(world, run.id, token="ghs_not-a-token"), transport=world.fake.transport()
        )
    assert caught.value.status == 401
    assert world.fake.comments_on(world.repo, 7) == []


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run(
        [sys.executable, "-m", "perfbot.cli", "comment", *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )


def test_the_command_posts_with_the_actions_environment() -> None:
    world = World.create()
    pull = world.pull(7, HEAD_A)
    run = world.measured_run(pull, 3001)
    with serve(world.fake) as fake:
        token = fake.issue_actions_token(world.repo)
        done = run_cli(
            ["--run-id", str(run.id)],
            {
                "GITHUB_TOKEN": token,
                "GITHUB_API_URL": fake.api_url,
                "GITHUB_REPOSITORY": "acme/widget",
            },
        )
    assert done.returncode == 0, done.stderr
    assert len(actions_comments(world, 7)) == 1
    assert token not in done.stdout + done.stderr
    assert "is up to date" in done.stderr


@pytest.mark.api_version("2022-11-28")
def test_the_command_speaks_the_api_version_it_is_given() -> None:
    """PERFBOT_GITHUB_API_VERSION in a GitHub Enterprise Server's workflow: every request
    of ``perfbot comment`` names it, and the comment is posted."""
    world = World.create()
    run = world.measured_run(world.pull(7, HEAD_A), 3001)
    with serve(world.fake) as fake:
        done = run_cli(
            ["--run-id", str(run.id), "--repo", "acme/widget"],
            {
                "GITHUB_TOKEN": fake.issue_actions_token(world.repo),
                "GITHUB_API_URL": fake.api_url,
                "PERFBOT_GITHUB_API_VERSION": "2022-11-28",
            },
        )
    assert done.returncode == 0, done.stderr
    assert len(actions_comments(world, 7)) == 1
    assert {r.api_version for r in world.fake.requests} == {"2022-11-28"}


def test_the_command_reports_github_errors_in_one_line() -> None:
    world = World.create()
    world.pull(7, HEAD_A)
    with serve(world.fake) as fake:
        token = fake.issue_actions_token(world.repo)
        done = run_cli(
            ["--run-id", "424242", "--repo", "acme/widget"],
            {"GITHUB_TOKEN": token, "GITHUB_API_URL": fake.api_url},
        )
    assert done.returncode == 1
    assert "run 424242 of acme/widget" in done.stderr
    assert "Traceback" not in done.stderr
    assert token not in done.stderr


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--run-id", "5"], {"GITHUB_TOKEN": "x"}, "--repo OWNER/NAME"),
        (["--run-id", "5", "--repo", "acme"], {"GITHUB_TOKEN": "x"}, "--repo OWNER/NAME"),
        (["--run-id", "5", "--repo", "acme/widget"], {}, "set GITHUB_TOKEN"),
        (["--run-id", "five", "--repo", "acme/widget"], {"GITHUB_TOKEN": "x"}, "not a workflow"),
        (["--run-id", "-3", "--repo", "acme/widget"], {"GITHUB_TOKEN": "x"}, "not a workflow"),
        (
            ["--run-id", "5", "--repo", "acme/widget"],
            {"GITHUB_TOKEN": "x", "PERFBOT_GITHUB_API_VERSION": "v3"},
            "PERFBOT_GITHUB_API_VERSION must be one of 2022-11-28, 2026-03-10",
        ),
    ],
)
def test_usage_errors(args: list[str], env: dict[str, str], message: str) -> None:
    done = run_cli(args, env)
    assert done.returncode == 2
    assert message in done.stderr


async def test_a_run_still_going_is_left_for_its_completion() -> None:
    world = World.create()
    pull = world.pull(7, HEAD_A)
    run = world.measured_run(pull, 3001, status="in_progress")

    await comment_for_run(job_for(world, run.id), transport=world.fake.transport())

    assert world.fake.comments_on(world.repo, 7) == []
    assert world.fake.storage_requests == []


def test_a_refused_token_is_named_as_such() -> None:
    world = World.create()
    pull = world.pull(7, HEAD_A)
    run = world.measured_run(pull, 3001)
    with serve(world.fake) as fake:
        done = run_cli(
            ["--run-id", str(run.id), "--repo", "acme/widget"],
            {"GITHUB_TOKEN": "ghs_not-a-token", "GITHUB_API_URL": fake.api_url},
        )
    assert done.returncode == 1
    assert "GitHub refused the token (401)" in done.stderr
    assert "App" not in done.stderr
    assert "ghs_not-a-token" not in done.stderr


async def test_on_change_posts_once_something_changed_and_then_keeps_it_current(
    caplog: pytest.LogCaptureFixture,
) -> None:
    world = World.create({".github/perfbot.yml": "comment: on-change\n"})
    pull = world.pull(7, HEAD_A)
    unchanged = report_zip({"tcp4_mbps": 5.97}, {"tcp4_mbps": 5.97})
    quiet = world.measured_run(pull, 3001, report=unchanged)
    with caplog.at_level("INFO", logger="perfbot.comment"):
        said = await comment_for_run(job_for(world, quiet.id), transport=world.fake.transport())
    assert said is None
    assert actions_comments(world, 7) == []
    assert "no comment on PR 7 (comment: on-change)" in caplog.text
    pull.head_sha = HEAD_B
    moved = world.measured_run(pull, 3002)  # tcp4 down 10 %
    await comment_for_run(job_for(world, moved.id), transport=world.fake.transport())
    assert len(actions_comments(world, 7)) == 1
    pull.head_sha = "c" * 40
    again = world.measured_run(pull, 3003, report=unchanged)
    await comment_for_run(job_for(world, again.id), transport=world.fake.transport())
    (body,) = actions_comments(world, 7)
    assert "no change beyond the noise floor" in body  # edited, never left stale
