"""The fake GitHub, driven by the real githubkit client: if these pass, perfbot's calls parse.

Every call reads ``.parsed_data`` so githubkit's pydantic models (REST API 2026-03-10) really
validate what the fake sends back.
"""

from __future__ import annotations

import base64
import io
import json
import time
import zipfile
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from githubkit import AppAuthStrategy, AppInstallationAuthStrategy, GitHub
from githubkit.exception import (
    RequestError,
    RequestFailed,
    RequestTimeout,
    SecondaryRateLimitExceeded,
)
from githubkit.webhooks import parse_obj, verify
from githubkit_schemas.latest import models

from perfbot.sandbox.fakegithub import (
    COMMENT_BODY_LIMIT,
    Artifact,
    FakeGitHub,
    Pull,
    Repo,
    Run,
    app_client,
    rsa_keypair,
    serve,
)

INSTALLATION = 77
OWNER, NAME = "octo-org", "net"
HEAD = "a" * 40
FORK_HEAD = "b" * 40
FORK = "mallory/net"
FORK_ID = 9001
CONFIG = "perfbot:\n  format: iperf3\n"

Installed = GitHub[AppInstallationAuthStrategy]
Pulls = list[models.PullRequestSimple]


def make_zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


@dataclass
class World:
    fake: FakeGitHub
    repo: Repo
    pull: Pull
    fork_pull: Pull
    run: Run
    fork_run: Run
    artifact: Artifact


@pytest.fixture
def world() -> World:
    """One installation, one repository, a same-repo PR and a fork PR, each with a run."""
    fake = FakeGitHub()
    fake.add_installation(INSTALLATION, OWNER)
    repo = fake.add_repo(
        f"{OWNER}/{NAME}", 501, INSTALLATION, files={".github/perfbot.yml": CONFIG}
    )
    pull = fake.add_pull(repo, 7, HEAD, "faster-tx", labels=["perf"])
    fork_pull = fake.add_pull(repo, 8, FORK_HEAD, "main", FORK, FORK_ID)
    run = fake.add_run(repo, 900, HEAD, "faster-tx")
    fork_run = fake.add_run(repo, 901, FORK_HEAD, "main", (FORK, FORK_ID))
    artifact = fake.add_artifact(repo, run, "perf-results", make_zip({"pr/iperf3.json": "{}"}))
    return World(fake, repo, pull, fork_pull, run, fork_run, artifact)


@pytest.fixture
def fake(world: World) -> FakeGitHub:
    return world.fake


@pytest.fixture
def github(fake: FakeGitHub) -> GitHub[AppAuthStrategy]:
    return app_client(fake)


@pytest.fixture
def gh(github: GitHub[AppAuthStrategy]) -> Installed:
    """githubkit as an installation, the way perfbot's workers call GitHub."""
    return github.with_auth(github.auth.as_installation(INSTALLATION))


def raw_client(fake: FakeGitHub, authorization: str | None = None) -> httpx.AsyncClient:
    """A plain httpx client on the fake, for what githubkit would refuse to send."""
    headers = {"Authorization": authorization} if authorization else {}
    return httpx.AsyncClient(transport=fake.transport(), base_url=fake.api_url, headers=headers)


def app_jwt(fake: FakeGitHub, **claims: Any) -> str:
    now = int(time.time())
    payload = {"iat": now - 60, "exp": now + 540, "iss": str(fake.app_id), **claims}
    return jwt.encode(payload, rsa_keypair().private_pem, algorithm="RS256")


async def failure(call: Any) -> RequestFailed:
    """The RequestFailed that awaiting ``call`` raises."""
    with pytest.raises(RequestFailed) as caught:
        await call
    return caught.value


# --- App identity and tokens ---------------------------------------------------------------------


async def test_app_identity_comes_from_the_jwt(
    fake: FakeGitHub, github: GitHub[AppAuthStrategy]
) -> None:
    app = (await github.rest.apps.async_get_authenticated()).parsed_data

    assert app is not None
    assert (app.id, app.slug) == (4242, "perfbot-test")
    assert [(r.path, r.auth, r.status) for r in fake.requests] == [("/app", "jwt", 200)]


async def test_installation_token_is_created_once_and_lasts_an_hour(
    fake: FakeGitHub, gh: Installed
) -> None:
    await gh.rest.pulls.async_get(OWNER, NAME, 7)
    await gh.rest.pulls.async_get(OWNER, NAME, 8)

    token_calls = [r for r in fake.requests if r.path.endswith("/access_tokens")]
    assert [(r.path, r.auth, r.status) for r in token_calls] == [
        (f"/app/installations/{INSTALLATION}/access_tokens", "jwt", 201)
    ]
    (token,) = fake.tokens.values()
    lifetime = token.expires_at - fake.now()
    assert timedelta(minutes=59) < lifetime <= timedelta(hours=1)
    assert [r.auth for r in fake.rate_limited_calls()] == ["token", "token"]


async def test_token_narrowed_to_one_repository_cannot_see_another(
    fake: FakeGitHub, github: GitHub[AppAuthStrategy]
) -> None:
    fake.add_repo(f"{OWNER}/other", 502, INSTALLATION)
    narrow = github.with_auth(github.auth.as_installation(INSTALLATION, repository_ids=[501]))

    assert (await narrow.rest.pulls.async_get(OWNER, NAME, 7)).parsed_data.number == 7
    error = await failure(narrow.rest.pulls.async_list(OWNER, "other"))
    assert error.response.status_code == 404
    (token,) = fake.tokens.values()
    assert token.repository_ids == frozenset({501})


async def test_token_narrowed_to_read_cannot_comment(
    fake: FakeGitHub, github: GitHub[AppAuthStrategy]
) -> None:
    readonly = github.with_auth(
        github.auth.as_installation(INSTALLATION, permissions={"issues": "read"})
    )

    error = await failure(readonly.rest.issues.async_create_comment(OWNER, NAME, 7, body="x"))

    assert error.response.status_code == 403
    accepted = error.response.raw_response.headers["x-accepted-github-permissions"]
    assert accepted == "issues=write; pull_requests=write"
    assert fake.comments_on(OWNER + "/" + NAME, 7) == []


async def test_token_cannot_ask_for_more_than_the_installation_grants(
    github: GitHub[AppAuthStrategy],
) -> None:
    greedy = github.with_auth(
        github.auth.as_installation(INSTALLATION, permissions={"administration": "write"})
    )

    # A failed token exchange surfaces from githubkit's auth flow wrapped in RequestError.
    with pytest.raises(RequestError) as caught:
        await greedy.rest.pulls.async_get(OWNER, NAME, 7)

    assert isinstance(caught.value.exc, RequestFailed)
    assert caught.value.exc.response.status_code == 422


# --- Authentication failures ---------------------------------------------------------------------


async def test_jwt_signed_with_another_key_is_refused(fake: FakeGitHub) -> None:
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = stranger.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()

    client = app_client(fake, pem)  # kept: githubkit's namespaces hold only a weak reference

    error = await failure(client.rest.apps.async_get_authenticated())

    assert error.response.status_code == 401
    assert fake.requests[-1].auth is None


@pytest.mark.parametrize(
    ("claims", "message"),
    [
        ({"iss": "999"}, "Issuer"),
        ({"iat": int(time.time()) - 1200, "exp": int(time.time()) - 600}, "Expiration time"),
        ({"exp": int(time.time()) + 3600}, "too far in the future"),
    ],
)
async def test_jwt_claims_are_checked(
    fake: FakeGitHub, claims: dict[str, Any], message: str
) -> None:
    async with raw_client(fake, f"Bearer {app_jwt(fake, **claims)}") as client:
        response = await client.get("/app")

    assert response.status_code == 401
    assert message in response.json()["message"]


async def test_a_valid_jwt_passes_and_a_token_is_not_a_jwt(fake: FakeGitHub) -> None:
    async with raw_client(fake, f"Bearer {app_jwt(fake)}") as client:
        assert (await client.get("/app")).status_code == 200
    token = fake.issue_token(INSTALLATION)
    async with raw_client(fake, f"token {token}") as client:
        assert (await client.get("/app")).status_code == 401


@pytest.mark.parametrize("scheme", ["token", "Bearer"])
async def test_installation_token_is_accepted_with_either_scheme(
    fake: FakeGitHub, scheme: str
) -> None:
    async with raw_client(fake, f"{scheme} {fake.issue_token(INSTALLATION)}") as client:
        response = await client.get(f"/repos/{OWNER}/{NAME}/pulls/7")

    assert response.status_code == 200
    assert fake.requests[-1].auth == "token"


async def test_unknown_missing_and_expired_tokens_are_refused(fake: FakeGitHub) -> None:
    token = fake.issue_token(INSTALLATION)
    path = f"/repos/{OWNER}/{NAME}/pulls/7"
    async with raw_client(fake, "token ghs_not_issued_here") as client:
        assert (await client.get(path)).status_code == 401
    async with raw_client(fake) as client:
        assert (await client.get(path)).status_code == 401
    async with raw_client(fake, f"token {token}") as client:
        assert (await client.get(path)).status_code == 200
        fake.advance(3601)
        response = await client.get(path)
    assert response.status_code == 401
    assert response.json()["message"] == "Bad credentials"


async def test_repository_of_another_installation_is_not_found(
    fake: FakeGitHub, gh: Installed
) -> None:
    fake.add_installation(88, "someone-else")
    fake.add_repo("someone-else/net", 777, 88)
    fake.add_pull("someone-else/net", 1, HEAD, "x")

    for owner, name in [("someone-else", "net"), ("nobody", "nothing")]:
        error = await failure(gh.rest.pulls.async_get(owner, name, 1))
        assert error.response.status_code == 404


# --- Workflow runs and artifacts -----------------------------------------------------------------


async def test_same_repo_run_lists_its_pull_request(world: World, gh: Installed) -> None:
    run = (await gh.rest.actions.async_get_workflow_run(OWNER, NAME, world.run.id)).parsed_data

    assert (run.id, run.head_sha, run.event, run.path) == (
        900,
        HEAD,
        "pull_request",
        ".github/workflows/net-perf.yml",
    )
    assert run.pull_requests is not None
    assert [p.number for p in run.pull_requests] == [7]
    assert run.repository.id == run.head_repository.id == 501


async def test_fork_run_has_no_pull_requests_and_the_fork_as_head(
    world: World, gh: Installed
) -> None:
    run = (await gh.rest.actions.async_get_workflow_run(OWNER, NAME, world.fork_run.id)).parsed_data

    assert run.pull_requests == []
    assert (run.head_repository.full_name, run.head_repository.id) == (FORK, FORK_ID)
    assert run.head_repository.fork is True
    assert run.repository.id == 501


async def test_fork_branch_named_like_a_pr_branch_lists_nothing(
    world: World, gh: Installed
) -> None:
    # A fork may call its branch "faster-tx" too; GitHub still lists no PR for a fork's run.
    world.fake.add_run(world.repo, 904, "e" * 40, "faster-tx", (FORK, FORK_ID))

    run = (await gh.rest.actions.async_get_workflow_run(OWNER, NAME, 904)).parsed_data

    assert run.pull_requests == []


async def test_run_artifacts_paginate_with_link_headers(world: World, gh: Installed) -> None:
    fake = world.fake
    ids = {world.artifact.id}
    for index in range(4):
        ids.add(fake.add_artifact(world.repo, world.run, f"extra-{index}", b"PK").id)
    fake.add_artifact(world.repo, world.fork_run, "perf-results", b"PK")  # another run's

    first = await gh.rest.actions.async_list_workflow_run_artifacts(
        OWNER, NAME, world.run.id, per_page=2
    )
    link = first.headers["link"]
    assert first.parsed_data.total_count == 5
    assert 'page=2>; rel="next"' in link
    assert 'page=3>; rel="last"' in link
    listed = [
        artifact.id
        async for artifact in gh.rest.paginate(
            gh.rest.actions.async_list_workflow_run_artifacts,
            map_func=lambda response: response.parsed_data.artifacts,
            owner=OWNER,
            repo=NAME,
            run_id=world.run.id,
            per_page=2,
        )
    ]
    assert sorted(listed) == sorted(ids)


async def test_run_artifacts_filter_by_name(world: World, gh: Installed) -> None:
    world.fake.add_artifact(world.repo, world.run, "logs", b"PK")

    listing = (
        await gh.rest.actions.async_list_workflow_run_artifacts(
            OWNER, NAME, world.run.id, name="perf-results"
        )
    ).parsed_data

    assert [a.name for a in listing.artifacts] == ["perf-results"]
    (artifact,) = listing.artifacts
    assert isinstance(artifact.workflow_run, models.ArtifactPropWorkflowRun)
    assert artifact.workflow_run.head_sha == HEAD
    assert artifact.size_in_bytes == len(world.artifact.data)
    assert artifact.digest == world.artifact.digest


async def test_artifact_download_reaches_storage_without_the_token(
    world: World, gh: Installed
) -> None:
    response = await gh.rest.actions.async_download_artifact(OWNER, NAME, world.artifact.id, "zip")

    assert response.content == world.artifact.data
    api_call = world.fake.requests[-1]
    assert (api_call.path, api_call.status, api_call.auth) == (
        f"/repos/{OWNER}/{NAME}/actions/artifacts/{world.artifact.id}/zip",
        302,
        "token",
    )
    (stored,) = world.fake.storage_requests
    assert stored.status == 200
    assert "authorization" not in stored.headers


async def test_redirect_points_at_storage_and_expires_after_a_minute(world: World) -> None:
    fake = world.fake
    path = f"/repos/{OWNER}/{NAME}/actions/artifacts/{world.artifact.id}/zip"
    async with raw_client(fake, f"token {fake.issue_token(INSTALLATION)}") as client:
        redirect = await client.get(path)
    location = redirect.headers["location"]
    assert redirect.status_code == 302
    assert location.startswith(fake.storage_url + "/blobs/")

    async with httpx.AsyncClient(transport=fake.transport()) as anonymous:
        assert (await anonymous.get(location)).content == world.artifact.data
        fake.advance(61)
        assert (await anonymous.get(location)).status_code == 403


async def test_storage_refuses_a_forwarded_token(world: World) -> None:
    fake = world.fake
    async with raw_client(fake, f"token {fake.issue_token(INSTALLATION)}") as client:
        location = (
            await client.get(f"/repos/{OWNER}/{NAME}/actions/artifacts/{world.artifact.id}/zip")
        ).headers["location"]
        leaked = await client.get(location)  # same client: its Authorization header goes along

    assert leaked.status_code == 400
    assert fake.storage_requests[-1].headers["authorization"].startswith("token ghs_")


async def test_expired_artifact_is_gone_and_unknown_is_not_found(
    world: World, gh: Installed
) -> None:
    expired = world.fake.add_artifact(world.repo, world.run, "old", b"PK", expired=True)

    gone = await failure(gh.rest.actions.async_download_artifact(OWNER, NAME, expired.id, "zip"))
    missing = await failure(gh.rest.actions.async_download_artifact(OWNER, NAME, 1, "zip"))

    assert (gone.response.status_code, missing.response.status_code) == (410, 404)
    assert world.fake.storage_requests == []


async def test_runs_are_filtered_by_head_sha_event_and_status(world: World, gh: Installed) -> None:
    world.fake.add_run(world.repo, 902, HEAD, "faster-tx", event="push")
    world.fake.add_run(world.repo, 903, HEAD, "faster-tx", status="in_progress", conclusion=None)

    listing = (
        await gh.rest.actions.async_list_workflow_runs_for_repo(
            OWNER, NAME, head_sha=HEAD, event="pull_request", status="success"
        )
    ).parsed_data

    assert [r.id for r in listing.workflow_runs] == [900]
    assert listing.total_count == 1


async def test_rerun_starts_a_new_attempt_once(world: World, gh: Installed) -> None:
    response = await gh.rest.actions.async_re_run_workflow(OWNER, NAME, world.run.id)
    again = await failure(gh.rest.actions.async_re_run_workflow(OWNER, NAME, world.run.id))

    assert response.status_code == 201
    assert again.response.status_code == 403  # the new attempt has not completed yet
    assert world.fake.reruns == [world.run.id]
    run = (await gh.rest.actions.async_get_workflow_run(OWNER, NAME, world.run.id)).parsed_data
    assert (run.run_attempt, run.status, run.conclusion) == (2, "queued", None)


# --- Pull requests -------------------------------------------------------------------------------


async def test_pull_request_carries_the_ids_perfbot_binds_to(world: World, gh: Installed) -> None:
    same = (await gh.rest.pulls.async_get(OWNER, NAME, 7)).parsed_data
    fork = (await gh.rest.pulls.async_get(OWNER, NAME, 8)).parsed_data

    assert same.state == "open"
    assert [label.name for label in same.labels] == ["perf"]
    assert same.head.repo is not None
    assert same.base.repo is not None
    assert (same.head.sha, same.head.ref, same.head.repo.id) == (HEAD, "faster-tx", 501)
    assert (same.base.ref, same.base.repo.id, same.base.repo.full_name) == (
        "main",
        501,
        "octo-org/net",
    )
    assert fork.head.repo is not None
    assert (fork.head.repo.full_name, fork.head.repo.id, fork.head.repo.fork) == (
        FORK,
        FORK_ID,
        True,
    )


async def test_open_pulls_are_found_by_fork_owner_and_branch(world: World, gh: Installed) -> None:
    world.fake.add_pull(world.repo, 9, "c" * 40, "main", FORK, FORK_ID, state="closed")

    found = await gh.rest.pulls.async_list(OWNER, NAME, state="open", head="mallory:main")
    every = await gh.rest.pulls.async_list(OWNER, NAME, state="all", head="mallory:main")

    # githubkit's PullsClient has a method named ``list`` that shadows the builtin in its own
    # annotations, so mypy cannot see the element type; the runtime model is right.
    assert [p.number for p in cast(Pulls, found.parsed_data)] == [8]
    assert sorted(p.number for p in cast(Pulls, every.parsed_data)) == [8, 9]


async def test_commit_pulls_include_open_and_closed(world: World, gh: Installed) -> None:
    world.fake.add_pull(world.repo, 3, HEAD, "faster-tx-old", state="closed")
    world.fake.add_pull(world.repo, 4, "d" * 40, "unrelated")

    pulls = (
        await gh.rest.repos.async_list_pull_requests_associated_with_commit(OWNER, NAME, HEAD)
    ).parsed_data

    assert [(p.number, p.state) for p in pulls] == [(3, "closed"), (7, "open")]


async def test_unknown_pull_is_not_found(gh: Installed) -> None:
    error = await failure(gh.rest.pulls.async_get(OWNER, NAME, 999))

    assert error.response.status_code == 404


# --- Comments and reactions ----------------------------------------------------------------------


async def test_app_comment_is_authored_by_the_bot(world: World, gh: Installed) -> None:
    response = await gh.rest.issues.async_create_comment(OWNER, NAME, 7, body="results")
    comment = response.parsed_data

    assert response.status_code == 201
    assert comment.user is not None
    assert isinstance(comment.performed_via_github_app, models.Integration)
    assert (comment.user.login, comment.user.type) == ("perfbot-test[bot]", "Bot")
    assert comment.performed_via_github_app.id == 4242
    assert [c.id for c in world.fake.bot_comments(world.repo, 7)] == [comment.id]
    assert comment.html_url.endswith(f"/pull/7#issuecomment-{comment.id}")


async def test_comments_list_oldest_first_across_pages(world: World, gh: Installed) -> None:
    fake = world.fake
    ids = [fake.add_comment(world.repo, 7, f"comment {n}").id for n in range(3)]
    ids.append(fake.add_bot_comment(world.repo, 7, "perfbot says").id)
    fake.delete_comment(ids[1])
    del ids[1]

    first = await gh.rest.issues.async_list_comments(OWNER, NAME, 7, per_page=2)
    listed: list[int] = []
    comment: models.IssueComment  # githubkit's paginator cannot infer it for mypy
    async for comment in gh.rest.paginate(
        gh.rest.issues.async_list_comments, owner=OWNER, repo=NAME, issue_number=7, per_page=2
    ):
        listed.append(comment.id)

    assert 'rel="next"' in first.headers["link"]
    assert listed == ids
    assert [c.id for c in fake.bot_comments(world.repo, 7)] == ids[-1:]


async def test_editing_comments_records_foreign_edits(world: World, gh: Installed) -> None:
    fake = world.fake
    ours = fake.add_bot_comment(world.repo, 7, "v1")
    theirs = fake.add_comment(world.repo, 7, "alice wrote this")

    updated = (
        await gh.rest.issues.async_update_comment(OWNER, NAME, ours.id, body="v2")
    ).parsed_data
    await gh.rest.issues.async_update_comment(OWNER, NAME, theirs.id, body="defaced")

    assert (updated.body, ours.body, ours.edits) == ("v2", "v2", 1)
    assert fake.foreign_comment_edits == [theirs.id]


async def test_deleted_comment_cannot_be_edited(world: World, gh: Installed) -> None:
    comment = world.fake.add_bot_comment(world.repo, 7, "v1")
    world.fake.delete_comment(comment.id)

    error = await failure(gh.rest.issues.async_update_comment(OWNER, NAME, comment.id, body="v2"))

    assert error.response.status_code == 404


async def test_comment_body_is_limited_like_github(world: World, gh: Installed) -> None:
    longest = "x" * COMMENT_BODY_LIMIT
    await gh.rest.issues.async_create_comment(OWNER, NAME, 7, body=longest)

    error = await failure(gh.rest.issues.async_create_comment(OWNER, NAME, 7, body=longest + "x"))

    body = error.response.raw_response.json()
    assert error.response.status_code == 422
    assert body["message"] == "Validation Failed"
    assert "too long" in body["errors"][0]["message"]
    assert [len(c.body) for c in world.fake.comments_on(world.repo, 7)] == [COMMENT_BODY_LIMIT]


async def test_comment_on_a_missing_issue_is_not_found(gh: Installed) -> None:
    error = await failure(gh.rest.issues.async_create_comment(OWNER, NAME, 404, body="x"))

    assert error.response.status_code == 404


async def test_reaction_is_created_once(world: World, gh: Installed) -> None:
    comment = world.fake.add_comment(world.repo, 7, "/perfbot rerun")

    first = await gh.rest.reactions.async_create_for_issue_comment(
        OWNER, NAME, comment.id, content="eyes"
    )
    second = await gh.rest.reactions.async_create_for_issue_comment(
        OWNER, NAME, comment.id, content="eyes"
    )

    assert (first.status_code, second.status_code) == (201, 200)
    assert first.parsed_data.id == second.parsed_data.id
    assert first.parsed_data.user is not None
    assert first.parsed_data.user.login == "perfbot-test[bot]"
    assert [r.content for r in comment.reactions] == ["eyes"]


async def test_reactions_of_an_issue_comment_are_listed_by_content(
    world: World, gh: Installed
) -> None:
    world.fake.add_issue(world.repo, 3, "A plain issue")
    comment = world.fake.add_comment(world.repo, 3, "/perfbot ignore")
    for content in ("eyes", "rocket"):
        await gh.rest.reactions.async_create_for_issue_comment(
            OWNER, NAME, comment.id, content=content
        )
    listed = await gh.rest.reactions.async_list_for_issue_comment(OWNER, NAME, comment.id)
    assert [r.content for r in listed.parsed_data] == ["eyes", "rocket"]
    rockets = await gh.rest.reactions.async_list_for_issue_comment(
        OWNER, NAME, comment.id, content="rocket"
    )
    assert [r.content for r in rockets.parsed_data] == ["rocket"]


async def test_invalid_reaction_is_refused(world: World) -> None:
    comment = world.fake.add_comment(world.repo, 7, "hello")
    token = world.fake.issue_token(INSTALLATION)
    async with raw_client(world.fake, f"token {token}") as client:
        path = f"/repos/{OWNER}/{NAME}/issues/comments/{comment.id}/reactions"
        response = await client.post(path, json={"content": "party"})

    assert response.status_code == 422
    assert comment.reactions == []


# --- Issues and commits ---------------------------------------------------------------------------


async def test_issue_requests_github_refuses_are_refused(world: World) -> None:
    issue = world.fake.add_issue(world.repo, title="A plain issue")
    token = world.fake.issue_token(INSTALLATION)
    base = f"/repos/{OWNER}/{NAME}"
    async with raw_client(world.fake, f"token {token}") as client:
        untitled = await client.post(f"{base}/issues", json={"body": "no title"})
        merged = await client.patch(f"{base}/issues/{issue.number}", json={"state": "merged"})
        why = await client.patch(
            f"{base}/issues/{issue.number}", json={"state": "closed", "state_reason": "fixed"}
        )
        listed = await client.get(f"{base}/issues", params={"state": "merged"})
        missing = await client.get(f"{base}/issues/99")
        two_dots = await client.get(f"{base}/compare/main..topic")
    assert [r.status_code for r in (untitled, merged, why, listed, missing, two_dots)] == [
        422,
        422,
        422,
        422,
        404,
        404,
    ]
    assert untitled.json()["errors"][0]["field"] == "title"
    assert world.repo.issues[issue.number].state == "open"


async def test_an_issue_lists_and_reads_as_github_shows_pull_requests(
    world: World, gh: Installed
) -> None:
    world.fake.add_pull(world.repo, 7, "a" * 40, "feature", labels=["perf"])
    issue = world.fake.add_issue(world.repo, title="Regression", labels=["perf"])
    response = await gh.rest.issues.async_list_for_repo(OWNER, NAME, labels="perf")
    listed: list[dict[str, Any]] = json.loads(response.content)
    assert [(i["number"], "pull_request" in i) for i in listed] == [
        (issue.number, False),
        (7, True),
    ]
    pull = (await gh.rest.issues.async_get(OWNER, NAME, 7)).parsed_data
    assert pull.pull_request is not None
    assert pull.html_url.endswith("/pull/7")


# --- Contents and permissions --------------------------------------------------------------------


async def test_contents_as_json_and_raw(world: World, gh: Installed) -> None:
    as_json = (
        await gh.rest.repos.async_get_content(OWNER, NAME, ".github/perfbot.yml")
    ).parsed_data
    raw = await gh.rest.repos.async_get_content(
        OWNER, NAME, ".github/perfbot.yml", headers={"Accept": "application/vnd.github.raw+json"}
    )

    assert isinstance(as_json, models.ContentFile)
    assert (as_json.encoding, as_json.path) == ("base64", ".github/perfbot.yml")
    assert base64.b64decode(as_json.content).decode() == CONFIG
    assert raw.text == CONFIG


async def test_contents_follow_the_ref(world: World, gh: Installed) -> None:
    world.repo.refs["faster-tx"] = {".github/perfbot.yml": "from the PR branch\n"}

    on_branch = await gh.rest.repos.async_get_content(
        OWNER, NAME, ".github/perfbot.yml", ref="faster-tx"
    )
    on_default = await gh.rest.repos.async_get_content(
        OWNER, NAME, ".github/perfbot.yml", ref="main"
    )

    assert isinstance(on_branch.parsed_data, models.ContentFile)
    assert isinstance(on_default.parsed_data, models.ContentFile)
    assert base64.b64decode(on_branch.parsed_data.content) == b"from the PR branch\n"
    assert base64.b64decode(on_default.parsed_data.content).decode() == CONFIG


@pytest.mark.parametrize(
    ("path", "ref"), [(".github/missing.yml", None), (".github/perfbot.yml", "nope")]
)
async def test_missing_content_or_ref_is_not_found(
    gh: Installed, path: str, ref: str | None
) -> None:
    call = (
        gh.rest.repos.async_get_content(OWNER, NAME, path)
        if ref is None
        else gh.rest.repos.async_get_content(OWNER, NAME, path, ref=ref)
    )
    error = await failure(call)

    assert error.response.status_code == 404


async def test_directory_lists_its_entries(gh: Installed) -> None:
    listing = (await gh.rest.repos.async_get_content(OWNER, NAME, ".github")).parsed_data

    assert isinstance(listing, list)
    assert [(e.type, e.name) for e in listing] == [("file", "perfbot.yml")]


@pytest.mark.parametrize(
    ("role", "permission"),
    [("admin", "admin"), ("maintain", "write"), ("write", "write"), ("triage", "read"),
     ("read", "read")],
)  # fmt: skip
async def test_collaborator_roles_fold_into_permissions(
    world: World, gh: Installed, role: str, permission: str
) -> None:
    world.fake.add_collaborator(world.repo, "bob", role)

    result = (
        await gh.rest.repos.async_get_collaborator_permission_level(OWNER, NAME, "bob")
    ).parsed_data

    assert (result.permission, result.role_name) == (permission, role)
    assert result.user is not None
    assert result.user.login == "bob"


@pytest.mark.parametrize(("private", "permission"), [(False, "read"), (True, "none")])
async def test_stranger_permission_depends_on_visibility(
    world: World, gh: Installed, private: bool, permission: str
) -> None:
    world.repo.private = private

    result = (
        await gh.rest.repos.async_get_collaborator_permission_level(OWNER, NAME, "stranger")
    ).parsed_data

    assert result.permission == permission


# --- Check runs ----------------------------------------------------------------------------------


async def test_check_run_is_created_and_completed(world: World, gh: Installed) -> None:
    created = (
        await gh.rest.checks.async_create(
            OWNER, NAME, data={"name": "perfbot", "head_sha": HEAD, "status": "in_progress"}
        )
    ).parsed_data
    updated = (
        await gh.rest.checks.async_update(
            OWNER,
            NAME,
            created.id,
            conclusion="neutral",
            output={"title": "No regressions", "summary": "3 metrics compared", "text": "x"},
        )
    ).parsed_data

    assert created.app is not None
    assert created.app.id == 4242
    assert [p.number for p in created.pull_requests] == [7]
    assert (updated.status, updated.conclusion) == ("completed", "neutral")
    assert updated.completed_at is not None
    assert updated.output.summary == "3 metrics compared"
    (stored,) = world.fake.check_runs_for(world.repo, HEAD)
    assert stored.output["title"] == "No regressions"


async def test_check_run_summary_is_limited(world: World) -> None:
    token = world.fake.issue_token(INSTALLATION)
    body = {
        "name": "perfbot",
        "head_sha": HEAD,
        "conclusion": "success",
        "output": {"title": "t", "summary": "x" * 65536},
    }
    async with raw_client(world.fake, f"token {token}") as client:
        response = await client.post(f"/repos/{OWNER}/{NAME}/check-runs", json=body)

    assert response.status_code == 422
    assert world.fake.check_runs == {}


async def test_another_apps_check_run_cannot_be_updated(world: World, gh: Installed) -> None:
    foreign = world.fake.add_check_run(world.repo, "ci", HEAD, app_id=1)

    error = await failure(
        gh.rest.checks.async_update(OWNER, NAME, foreign.id, data={"conclusion": "failure"})
    )

    assert error.response.status_code == 403
    assert foreign.conclusion == "success"


# --- Webhook deliveries (App JWT) ----------------------------------------------------------------


async def test_hook_deliveries_page_by_cursor_newest_first(
    fake: FakeGitHub, github: GitHub[AppAuthStrategy]
) -> None:
    ids = [fake.add_delivery("workflow_run", "completed", status_code=code).id
           for code in (200, 500, 200, 200, 502)]  # fmt: skip

    first = await github.rest.apps.async_list_webhook_deliveries(per_page=2)
    listed = [
        d.id
        async for d in github.rest.paginate(
            github.rest.apps.async_list_webhook_deliveries, per_page=2
        )
    ]
    failed = (await github.rest.apps.async_list_webhook_deliveries(status="failure")).parsed_data

    assert "cursor=v1_" in first.headers["link"]
    assert listed == ids[::-1]
    assert [d.status for d in failed] == [
        "Invalid HTTP Response: 502",
        "Invalid HTTP Response: 500",
    ]


async def test_redelivery_is_accepted_and_recorded(
    fake: FakeGitHub, github: GitHub[AppAuthStrategy]
) -> None:
    delivery = fake.add_delivery("workflow_run", "completed", status_code=500)

    response = await github.rest.apps.async_redeliver_webhook_delivery(delivery.id)
    missing = await failure(github.rest.apps.async_redeliver_webhook_delivery(1))

    assert response.status_code == 202
    assert missing.response.status_code == 404
    assert fake.redeliveries == [delivery.id]


# --- Unknown routes and the request log ----------------------------------------------------------


async def test_unknown_route_answers_501_and_is_recorded(world: World, gh: Installed) -> None:
    comment = world.fake.add_bot_comment(world.repo, 7, "v1")

    error = await failure(gh.rest.issues.async_delete_comment(OWNER, NAME, comment.id))

    path = f"/repos/{OWNER}/{NAME}/issues/comments/{comment.id}"
    assert error.response.status_code == 501
    assert error.response.raw_response.json()["message"] == (
        f"fake GitHub does not implement DELETE {path}"
    )
    assert world.fake.unknown_routes == [f"DELETE {path}"]
    assert world.fake.bot_comments(world.repo, 7) == [comment]


async def test_request_log_tells_writes_and_rate_limited_calls(world: World, gh: Installed) -> None:
    fake = world.fake
    pull = await gh.rest.pulls.async_get(OWNER, NAME, 7)
    comment = (await gh.rest.issues.async_create_comment(OWNER, NAME, 7, body="v1")).parsed_data
    await gh.rest.issues.async_update_comment(OWNER, NAME, comment.id, body="v2")

    assert [(r.method, r.path) for r in fake.write_calls()] == [
        ("POST", f"/repos/{OWNER}/{NAME}/issues/7/comments"),
        ("PATCH", f"/repos/{OWNER}/{NAME}/issues/comments/{comment.id}"),
    ]
    assert len(fake.rate_limited_calls()) == 3
    assert len(fake.requests) == 4  # plus the token exchange
    assert fake.write_calls()[0].body == {"body": "v1"}
    assert pull.headers["x-ratelimit-remaining"] == "4999"


# --- Failure knobs -------------------------------------------------------------------------------


async def test_fail_next_fails_perfbots_call_then_recovers(fake: FakeGitHub, gh: Installed) -> None:
    fake.fail_next(1, status=503)

    error = await failure(gh.rest.pulls.async_get(OWNER, NAME, 7))
    recovered = await gh.rest.pulls.async_get(OWNER, NAME, 7)

    assert error.response.status_code == 503
    assert recovered.parsed_data.number == 7
    assert [r.status for r in fake.requests] == [201, 503, 200]  # the token exchange was spared


async def test_fail_next_can_aim_at_one_path(fake: FakeGitHub, gh: Installed) -> None:
    fake.fail_next(2, status=500, path_contains="/pulls/8")

    assert (await gh.rest.pulls.async_get(OWNER, NAME, 7)).status_code == 200
    error = await failure(gh.rest.pulls.async_get(OWNER, NAME, 8))

    assert error.response.status_code == 500


async def test_fail_next_can_break_token_creation(fake: FakeGitHub, gh: Installed) -> None:
    fake.fail_next(1, status=502, path_contains="access_tokens")

    with pytest.raises(RequestError) as caught:
        await gh.rest.pulls.async_get(OWNER, NAME, 7)

    assert isinstance(caught.value.exc, RequestFailed)
    assert caught.value.exc.response.status_code == 502
    assert fake.tokens == {}


async def test_secondary_rate_limit_carries_retry_after(fake: FakeGitHub, gh: Installed) -> None:
    fake.secondary_rate_limit_next(1, retry_after=7)

    with pytest.raises(SecondaryRateLimitExceeded) as caught:
        await gh.rest.issues.async_create_comment(OWNER, NAME, 7, body="x")
    await gh.rest.issues.async_create_comment(OWNER, NAME, 7, body="y")

    assert caught.value.retry_after == timedelta(seconds=7)
    assert "secondary rate limit" in caught.value.response.raw_response.json()["message"]
    assert [c.body for c in fake.comments_on(f"{OWNER}/{NAME}", 7)] == ["y"]


async def test_latency_delays_every_api_response(fake: FakeGitHub, gh: Installed) -> None:
    fake.latency = 0.05

    await gh.rest.pulls.async_get(OWNER, NAME, 7)

    assert all(r.duration >= 0.05 for r in fake.requests)


async def test_hang_makes_the_client_time_out(fake: FakeGitHub) -> None:
    impatient = app_client(fake, timeout=0.2)
    gh = impatient.with_auth(impatient.auth.as_installation(INSTALLATION))
    fake.hang_next(1, seconds=5)

    with pytest.raises(RequestTimeout):
        await gh.rest.pulls.async_get(OWNER, NAME, 7)
    answered = await gh.rest.pulls.async_get(OWNER, NAME, 7)

    assert answered.parsed_data.number == 7
    assert [r.status for r in fake.rate_limited_calls()] == [0, 200]  # 0: never answered


# --- Webhook payloads ----------------------------------------------------------------------------


def test_workflow_run_payload_of_a_same_repo_pr_parses(world: World) -> None:
    payload = world.fake.webhook_payload_workflow_run(world.run)

    event = parse_obj("workflow_run", payload)

    assert event.action == "completed"
    assert isinstance(event.installation, models.SimpleInstallation)
    assert event.installation.id == INSTALLATION
    assert (event.repository.id, event.repository.full_name) == (501, "octo-org/net")
    assert event.workflow_run.id == 900
    assert [p.number for p in event.workflow_run.pull_requests if p is not None] == [7]


def test_workflow_run_payload_of_a_fork_pr_parses(world: World) -> None:
    payload = world.fake.webhook_payload_workflow_run(world.fork_run, action="requested")

    event = parse_obj("workflow_run", payload)

    assert event.action == "requested"
    assert event.workflow_run.pull_requests == []
    assert event.workflow_run.head_repository is not None
    assert event.workflow_run.head_repository.id == FORK_ID
    assert event.workflow_run.head_repository.full_name == FORK


def test_issue_comment_payload_on_a_pr_parses(world: World) -> None:
    comment = world.fake.add_comment(world.repo, 7, "/perfbot rerun", login="bob")

    event = parse_obj("issue_comment", world.fake.webhook_payload_issue_comment(comment))

    assert event.issue.pull_request is not None
    assert (event.issue.number, event.comment.id, event.comment.body) == (
        7,
        comment.id,
        "/perfbot rerun",
    )
    assert event.sender is not None
    assert event.sender.login == "bob"


def test_check_run_payload_parses(world: World) -> None:
    check = world.fake.add_check_run(world.repo, "perfbot", HEAD)

    event = parse_obj("check_run", world.fake.webhook_payload_check_run(check))

    assert event.action == "rerequested"
    assert event.check_run.id == check.id
    assert event.check_run.app is not None
    assert event.check_run.app.id == 4242


def test_webhook_headers_are_signed_with_the_secret(world: World) -> None:
    body = json.dumps(world.fake.webhook_payload_workflow_run(world.run)).encode()

    headers = world.fake.webhook_headers("workflow_run", body, "s3cret", delivery="guid-1")

    assert headers["X-GitHub-Event"] == "workflow_run"
    assert headers["X-GitHub-Delivery"] == "guid-1"
    assert verify("s3cret", body, headers["X-Hub-Signature-256"])
    assert not verify("other", body, headers["X-Hub-Signature-256"])


# --- Real sockets --------------------------------------------------------------------------------


async def test_serve_answers_over_loopback_and_stops(world: World) -> None:
    fake = world.fake
    with serve(fake):
        api_url, storage_url = fake.api_url, fake.storage_url
        gh_client = app_client(fake, in_process=False)
        gh = gh_client.with_auth(gh_client.auth.as_installation(INSTALLATION))
        pull = (await gh.rest.pulls.async_get(OWNER, NAME, 7)).parsed_data
        download = await gh.rest.actions.async_download_artifact(
            OWNER, NAME, world.artifact.id, "zip"
        )

    assert api_url.startswith("http://127.0.0.1:")
    assert storage_url.startswith("http://127.0.0.1:")
    assert storage_url != api_url
    assert pull.number == 7
    assert download.content == world.artifact.data
    assert "authorization" not in fake.storage_requests[-1].headers
    assert fake.api_url != api_url  # restored after the block
    async with httpx.AsyncClient() as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(api_url + "/app")
