"""What the fake's shortcuts for speed must not change: the indexes its lookups go through,
the templates its answers are copied from, and the methods its two apps answer."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx

from perfbot.sandbox.fakegithub import Artifact, Comment, FakeGitHub, Repo
from perfbot.sandbox.repo_json import pull_json

INSTALLATION = 77


def scene() -> tuple[FakeGitHub, Repo]:
    fake = FakeGitHub()
    fake.add_installation(INSTALLATION, "octo-org", account_type="Organization")
    repo = fake.add_repo("octo-org/net", 501, INSTALLATION)
    fake.add_pull(repo, 7, "a" * 40, "faster-tx")
    return fake, repo


def test_a_comment_put_in_the_state_directly_is_listed_with_the_added_ones() -> None:
    fake, repo = scene()
    first = fake.add_comment(repo, 7, "one")
    moment = datetime(2026, 1, 5, tzinfo=UTC)
    direct = Comment(
        id=fake.next_id(),
        repo=repo.full_name,
        issue_number=7,
        body="put in directly",
        user="bob",
        created_at=moment,
        updated_at=moment,
    )
    fake.comments[direct.id] = direct
    last = fake.add_comment(repo, 7, "three")
    fake.add_comment(repo, 8, "another issue")

    assert [c.id for c in fake.comments_on(repo, 7)] == [first.id, direct.id, last.id]
    fake.delete_comment(direct.id)
    assert [c.id for c in fake.comments_on(repo, 7)] == [first.id, last.id]


def test_an_artifact_put_in_the_state_directly_is_its_runs() -> None:
    fake, repo = scene()
    run = fake.add_run(repo, 900, "a" * 40, "faster-tx")
    added = fake.add_artifact(repo, run, "perf-results", b"zip")
    direct = Artifact(
        id=fake.next_id(),
        repo=repo.full_name,
        run_id=run.id,
        name="direct",
        data=b"zip",
        created_at=fake.now(),
    )
    fake.artifacts[direct.id] = direct
    fake.add_artifact(repo, 901, "other run", b"zip")

    assert [a.id for a in fake.artifacts_of_run(run.id)] == [added.id, direct.id]


def test_an_answer_shares_nothing_with_the_next_one() -> None:
    fake, repo = scene()
    pull = repo.pulls[7]
    first = pull_json(fake, pull)
    first["title"] = "changed"
    first["base"]["repo"]["owner"]["login"] = "changed"
    first["head"]["repo"]["name"] = "changed"
    first["_links"]["self"]["href"] = "changed"

    again = pull_json(fake, pull)

    assert again["title"] == pull.title
    assert again["base"]["repo"]["owner"]["login"] == "octo-org"
    assert again["base"]["repo"]["owner"]["type"] == "Organization"
    assert again["head"]["repo"]["name"] == "net"
    assert again["_links"]["self"]["href"].endswith("/repos/octo-org/net/pulls/7")


async def test_a_method_the_fake_does_not_serve_is_answered_405() -> None:
    fake, _ = scene()
    async with httpx.AsyncClient(transport=fake.transport(), base_url=fake.api_url) as client:
        response = await client.request("OPTIONS", "/repos/octo-org/net/pulls/7")
        served = await client.get("/repos/octo-org/net/pulls/7")

    assert response.status_code == 405
    assert "GET" in response.headers["allow"]
    assert served.status_code == 401  # handled by the fake: no credentials
    assert [r.method for r in fake.requests] == ["GET"]


def test_an_accounts_type_follows_its_installation_when_it_changes() -> None:
    fake, repo = scene()
    assert pull_json(fake, repo.pulls[7])["base"]["repo"]["owner"]["type"] == "Organization"
    # Installed again under the same id, on a user's account this time.
    fake.add_installation(INSTALLATION, "octo-org", account_type="User")
    assert pull_json(fake, repo.pulls[7])["base"]["repo"]["owner"]["type"] == "User"
    # And a field changed in the state directly.
    fake.installations[INSTALLATION].account_type = "Organization"
    assert pull_json(fake, repo.pulls[7])["base"]["repo"]["owner"]["type"] == "Organization"
