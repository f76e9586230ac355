"""The issues, comparison and commit calls of perfbot's GitHub adapter against the fake.

The next feature opens one issue per performance change on the default branch, and edits,
closes and comments on them; it finds the pull requests that merged the commits between two
measurements. Every exchange here is checked against GitHub's description by the suite's
conformance check (tests/conftest.py), and the webhook payloads by the last tests.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from perfbot.app import routes
from perfbot.app.triage import parse_delivery
from perfbot.github.errors import GitHubError, GitHubUnavailable
from perfbot.github.installation import Installation
from tests import apispec
from tests.harness import INSTALLATION, World

OWNER, NAME = "acme", "widget"
HEAD = "a" * 40


@pytest.fixture
def world() -> World:
    return World.create()


@asynccontextmanager
async def installed(world: World) -> AsyncIterator[Installation]:
    """perfbot's calls for the world's installation, over the fake's transport."""
    app = world.github_app()
    try:
        async with app.installation(INSTALLATION) as installation:
            yield installation
    finally:
        await app.close()


@pytest.fixture
async def github(world: World) -> AsyncIterator[Installation]:
    async with installed(world) as installation:
        yield installation


# --- Issues ------------------------------------------------------------------------------------


async def test_an_issue_is_opened_by_the_app(world: World, github: Installation) -> None:
    world.pull(7, HEAD)
    opened = await github.create_issue(
        OWNER, NAME, "tcp4_mbps fell 10 %", "Since abc1234.", labels=("perfbot", "regression")
    )
    assert opened.number == 8  # after pull request 7: one numbering for both
    assert (opened.title, opened.body, opened.state) == (
        "tcp4_mbps fell 10 %",
        "Since abc1234.",
        "open",
    )
    assert opened.labels == ("perfbot", "regression")
    assert (opened.user_login, opened.app_id) == (world.fake.bot_login, world.fake.app_id)
    assert not opened.is_pull_request
    assert opened.html_url == "https://github.com/acme/widget/issues/8"
    stored = world.repo.issues[8]
    assert (stored.user, stored.labels) == (world.fake.bot_login, ["perfbot", "regression"])


async def test_an_issue_a_pull_request_or_nothing(world: World, github: Installation) -> None:
    world.pull(7, HEAD)
    issue = world.issue("Old regression", "text", labels=("perfbot",))
    found = await github.get_issue(OWNER, NAME, issue.number)
    assert found is not None
    assert (found.number, found.title, found.body, found.labels) == (
        issue.number,
        "Old regression",
        "text",
        ("perfbot",),
    )
    pull = await github.get_issue(OWNER, NAME, 7)
    assert pull is not None
    assert pull.is_pull_request
    assert await github.get_issue(OWNER, NAME, 99) is None


async def test_an_issue_is_edited_closed_and_reopened(world: World, github: Installation) -> None:
    issue = world.issue(login=world.fake.bot_login, labels=("perfbot", "regression"))
    edited = await github.update_issue(
        OWNER, NAME, issue.number, title="Fixed?", body="Maybe.", labels=("perfbot",)
    )
    assert edited is not None
    assert (edited.title, edited.body, edited.labels, edited.state) == (
        "Fixed?",
        "Maybe.",
        ("perfbot",),
        "open",
    )
    closed = await github.update_issue(
        OWNER, NAME, issue.number, state="closed", state_reason="not_planned"
    )
    assert closed is not None
    assert (closed.state, closed.state_reason) == ("closed", "not_planned")
    assert world.repo.issues[issue.number].closed_by == world.fake.bot_login
    reopened = await github.update_issue(OWNER, NAME, issue.number, state="open")
    assert reopened is not None
    assert (reopened.state, reopened.state_reason) == ("open", "reopened")
    done = await github.update_issue(OWNER, NAME, issue.number, state="closed")
    assert done is not None
    assert done.state_reason == "completed"
    # Nothing but the changed fields was sent.
    patches = [r.body for r in world.fake.requests if r.method == "PATCH"]
    assert patches[1] == {"state": "closed", "state_reason": "not_planned"}
    assert patches[2] == {"state": "open"}


async def test_editing_a_missing_issue_is_none(github: Installation) -> None:
    assert await github.update_issue(OWNER, NAME, 404, state="closed") is None


async def test_issues_are_listed_by_labels_creator_and_state(
    world: World, github: Installation
) -> None:
    world.pull(7, HEAD, labels=("perfbot", "regression"))  # a pull request is no issue here
    bot = world.fake.bot_login
    mine = world.issue("tcp4", login=bot, labels=("perfbot", "regression"))
    other = world.issue("udp4", login=bot, labels=("perfbot",))
    by_hand = world.issue("by hand", login="alice", labels=("perfbot", "regression"))
    closed = world.issue("old", login=bot, labels=("perfbot", "regression"))
    await github.update_issue(OWNER, NAME, closed.number, state="closed")

    found = await github.list_issues(OWNER, NAME, labels=("perfbot", "regression"))
    # GitHub lists the pull request among the issues; perfbot leaves it out.
    assert b'"pull_request"' in world.fake.requests[-1].response_body
    assert [i.number for i in found] == [by_hand.number, mine.number]
    found = await github.list_issues(OWNER, NAME, labels=("perfbot", "regression"), creator=bot)
    assert [i.number for i in found] == [mine.number]
    assert [i.number for i in await github.list_issues(OWNER, NAME, creator=bot)] == [
        other.number,
        mine.number,
    ]
    everything = await github.list_issues(
        OWNER, NAME, labels=("perfbot",), creator=bot, state="all"
    )
    assert [i.number for i in everything] == [closed.number, other.number, mine.number]
    (listed,) = [r for r in world.fake.requests if r.query.get("creator") == bot][:1]
    assert listed.query == {
        "state": "open",
        "labels": "perfbot,regression",
        "creator": bot,
        "per_page": "100",
        "page": "1",
    }


async def test_issues_are_listed_across_pages(world: World, github: Installation) -> None:
    for number in range(1, 131):
        world.issue(f"change {number}", login=world.fake.bot_login, labels=("perfbot",))
    found = await github.list_issues(OWNER, NAME, labels=("perfbot",))
    assert [i.number for i in found] == list(range(130, 0, -1))
    pages = [r.query["page"] for r in world.fake.requests if r.path.endswith("/issues")]
    assert pages == ["1", "2"]


async def test_an_issue_is_commented_on_and_its_comments_reacted_to(
    world: World, github: Installation
) -> None:
    """The comment calls are the issues API's: they work on plain issues as on PRs."""
    issue = world.issue(login=world.fake.bot_login)
    posted = await github.create_comment(OWNER, NAME, issue.number, "Still there at def5678.")
    assert posted.app_id == world.fake.app_id
    reply = world.fake.add_comment(world.repo, issue.number, "/perfbot ignore", "bob")
    await github.add_reaction(OWNER, NAME, reply.id, "eyes")
    comments = await github.list_comments(OWNER, NAME, issue.number)
    assert [c.body for c in comments] == ["Still there at def5678.", "/perfbot ignore"]
    assert world.reactions(reply) == ["eyes"]
    assert await github.update_comment(OWNER, NAME, posted.id, "Gone at 0123abc.") is not None


async def test_issue_calls_map_errors_like_every_call(world: World, github: Installation) -> None:
    issue = world.issue()
    world.fake.fail_next(1, status=502, path_contains="/issues/")
    # A GET is retried by perfbot itself...
    assert await github.get_issue(OWNER, NAME, issue.number) is not None
    # ...a write is not (the job queue retries the whole job).
    world.fake.fail_next(1, status=502, path_contains="/issues")
    with pytest.raises(GitHubUnavailable):
        await github.create_issue(OWNER, NAME, "x", "y")


async def test_an_installation_that_may_not_write_issues_is_refused(world: World) -> None:
    world.fake.installations[INSTALLATION].permissions["issues"] = "read"
    async with installed(world) as github:
        with pytest.raises(GitHubError) as refused:
            await github.create_issue(OWNER, NAME, "x", "y")
    assert refused.value.status == 403
    assert not refused.value.retryable


# --- Commits -----------------------------------------------------------------------------------


async def test_a_branch_s_commits_newest_first_and_their_pull_requests(
    world: World, github: Installation
) -> None:
    (base,) = world.commits("measured: 5.97 Mbit/s")
    first = world.pull(7, "b" * 40)
    second = world.pull(8, "c" * 40)
    merged = [world.merge(first), world.merge(second, squash=False)]
    (head,) = world.commits("docs")
    listed = await github.list_commits(OWNER, NAME, "main")
    assert [c.sha for c in listed[:4]] == [head.sha, merged[1].sha, merged[0].sha, base.sha]
    assert listed[2].message == "Improve throughput (#7)"
    assert listed[1].parents == (merged[0].sha, second.head_sha)
    made = world.fake.repo(world.repo).commits[head.sha].date.timestamp()
    assert listed[0].committed_at == int(made)  # GitHub's dates are in whole seconds
    pulls = [await github.pulls_for_commit(OWNER, NAME, c.sha) for c in listed[:3]]
    assert [[p.number for p in found] for found in pulls] == [[], [8], [7]]
    assert pulls[2][0].state == "closed"


async def test_commits_are_listed_from_a_sha_or_a_branch(
    world: World, github: Installation
) -> None:
    root, main_tip = world.commits("root", "on main")
    (topic,) = world.commits("on topic", branch="topic")
    world.fake.repo(world.repo).commits[topic.sha].parents = [root.sha]
    assert [c.sha for c in await github.list_commits(OWNER, NAME, root.sha)] == [root.sha]
    on_topic = await github.list_commits(OWNER, NAME, "topic")
    assert [c.sha for c in on_topic] == [topic.sha, root.sha]
    assert main_tip.sha not in {c.sha for c in on_topic}
    with pytest.raises(GitHubError) as unknown:
        await github.list_commits(OWNER, NAME, "nowhere")
    assert unknown.value.status == 404


async def test_a_long_history_is_read_page_by_page(world: World, github: Installation) -> None:
    later = world.commits(*(f"commit {n}" for n in range(130)))
    first = await github.list_commits(OWNER, NAME, "main")
    second = await github.list_commits(OWNER, NAME, "main", page=2)
    assert [c.sha for c in first + second][:130] == [c.sha for c in reversed(later)]
    pages = [r.query.get("page") for r in world.fake.requests if r.path.endswith("/commits")]
    assert pages == ["1", "2"]


# --- Webhook payloads of issues ------------------------------------------------------------


def test_issue_payloads_are_what_github_describes(world: World) -> None:
    issue = world.issue(login=world.fake.bot_login, labels=("perfbot",))
    description = apispec.webhooks()
    built: list[tuple[str, str | None, dict[str, str] | None]] = [
        ("opened", None, None),
        ("labeled", "perfbot", None),
        ("unlabeled", "regression", None),
        ("edited", None, {"title": "Before"}),
        ("closed", None, None),
        ("reopened", None, None),
    ]
    for action, label, changes in built:
        body, headers = world.issue_delivery(issue, action, label=label, changes=changes)
        assert headers["X-GitHub-Event"] == "issues"
        assert description.check("issues", json.loads(body)) == [], action
    comment, body, _headers = world.comment_delivery(issue.number, "/perfbot ignore")
    payload = json.loads(body)
    assert "pull_request" not in payload["issue"]
    assert payload["issue"]["number"] == issue.number == comment.issue_number
    assert description.check("issue_comment", payload) == []


def test_a_comment_on_an_issue_or_an_issues_event_queues_no_job(world: World) -> None:
    """perfbot takes commands on pull requests only, and no issues event yet."""
    issue = world.issue()
    _comment, body, headers = world.comment_delivery(issue.number, "/perfbot rerun")
    lower = {k.lower(): v for k, v in headers.items()}
    assert routes.job_for(parse_delivery(lower, body)) is None
    body, headers = world.issue_delivery(issue, "closed")
    assert routes.job_for(parse_delivery({k.lower(): v for k, v in headers.items()}, body)) is None
    # The same command on a pull request is a job: the issue is what makes the difference.
    world.pull(7, HEAD)
    _comment, body, headers = world.comment_delivery(7, "/perfbot rerun")
    assert routes.job_for(parse_delivery({k.lower(): v for k, v in headers.items()}, body))
