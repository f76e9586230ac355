"""The fake GitHub, perfbot's requests and the harness's payloads against GitHub's own
OpenAPI descriptions (tests/apispec.py, pinned by scripts/bootstrap).

Every test of the suite has its exchanges with the fake checked (tests/conftest.py); here:
the descriptions themselves (one file, two API versions), the checks catching what they
must (each on a deliberately broken request, answer or payload), a scene that makes every
call perfbot has and checks each exchange, the harness's webhook payloads, and every example
payload of the events perfbot receives going through triage.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from githubkit.versions import LATEST_VERSION

from perfbot.app import routes
from perfbot.app.settings import Settings
from perfbot.app.triage import parse_delivery
from perfbot.github.app import GitHubApp
from perfbot.github.installation import Installation
from perfbot.github.transport import API_VERSION, USER_AGENT
from perfbot.sandbox.fakegithub import CheckRun, FakeGitHub, RecordedRequest, rsa_keypair
from perfbot.store.base import NewJob
from tests import apispec
from tests.apispec import Example, Violation
from tests.conformance import (
    ExchangeLog,
    Tally,
    is_perfbots,
    request_violations,
    response_violations,
)
from tests.harness import (
    INSTALLATION,
    REPO_ID,
    World,
    in_process_service,
    report_zip,
    wait_idle,
    wait_until,
)

HEAD = "a" * 40
LATEST = "2026-03-10"
# The events perfbot's App receives (its subscriptions and its own installation's), and
# those the next features will: every example of theirs goes through triage.
RECEIVED_EVENTS = (
    "workflow_run",
    "issue_comment",
    "check_run",
    "check_suite",
    "installation",
    "installation_repositories",
    "issues",
    "push",
)


# --- The descriptions ------------------------------------------------------------------------


def test_perfbot_speaks_the_version_githubkit_models() -> None:
    """The models that parse GitHub's answers are githubkit's latest: perfbot asks for it."""
    assert API_VERSION == LATEST_VERSION == LATEST


def test_one_file_describes_both_versions() -> None:
    """2026-03-10 is 2022-11-28 with GitHub's breaking-change patches applied: the fields it
    removed must be absent, not merely undeclared."""
    old, new = apispec.rest("2022-11-28"), apispec.rest(LATEST)
    pull = old.document["components"]["schemas"]["pull-request"]
    assert {"merge_commit_sha", "assignee"} <= set(pull["required"])
    latest_pull = new.document["components"]["schemas"]["pull-request"]
    assert not {"merge_commit_sha", "assignee"} & set(latest_pull["required"])
    assert latest_pull["properties"]["merge_commit_sha"] == {
        "not": {},
        apispec.REMOVED_IN: LATEST,
    }
    repository = new.document["components"]["schemas"]["repository"]["properties"]
    assert repository["has_downloads"]["not"] == {}
    assert repository["master_branch"]["not"] == {}
    # A patched operation: deleting an installation answers 202 from 2026-03-10 on.
    deleting = "/app/installations/{installation_id}"
    assert set(old.document["paths"][deleting]["delete"]["responses"]) >= {"204"}
    assert "202" in new.document["paths"][deleting]["delete"]["responses"]
    assert "204" not in new.document["paths"][deleting]["delete"]["responses"]


def test_operations_are_found_by_their_most_literal_template() -> None:
    description = apispec.rest(LATEST)

    def template(method: str, path: str) -> str | None:
        operation = description.operation(method, path)
        return operation.template if operation else None

    assert template("GET", "/repos/o/r/issues/comments/5") == (
        "/repos/{owner}/{repo}/issues/comments/{comment_id}"
    )
    assert template("GET", "/repos/o/r/issues/5") == "/repos/{owner}/{repo}/issues/{issue_number}"
    assert template("GET", "/repos/o/r/contents/.github/perfbot.yml") == (
        "/repos/{owner}/{repo}/contents/{path}"
    )
    assert template("GET", "/repos/o/r/compare/main...feature/x") == (
        "/repos/{owner}/{repo}/compare/{basehead}"
    )
    assert template("PUT", "/repos/o/r/issues/5") is None


# --- The checks catch what they must -----------------------------------------------------------


def record(
    method: str,
    path: str,
    *,
    status: int = 200,
    answer: Any = None,
    body: Any = None,
    query: dict[str, str] | None = None,
    version: str | None = LATEST,
    agent: str = USER_AGENT,
) -> RecordedRequest:
    """One exchange as the fake records it."""
    return RecordedRequest(
        method=method,
        path=path,
        query=query or {},
        status=status,
        auth="token",
        duration=0.0,
        body=body,
        api_version=version,
        user_agent=agent,
        response_type="application/json" if answer is not None else "",
        response_body=json.dumps(answer).encode() if answer is not None else b"",
    )


def rules(violations: list[Violation]) -> set[str]:
    return {f"{v.location}: {v.message}" for v in violations}


@pytest.fixture
def world() -> World:
    return World.create()


async def served(world: World, method: str, path: str, **kwargs: Any) -> RecordedRequest:
    """One request through the fake (as perfbot, in the latest version), as recorded."""
    token = world.fake.issue_token(INSTALLATION)
    headers = {
        "authorization": f"token {token}",
        "user-agent": USER_AGENT,
        "x-github-api-version": LATEST,
    }
    async with httpx.AsyncClient(
        transport=world.fake.transport(), base_url=world.fake.api_url
    ) as client:
        await client.request(method, path, headers=headers, **kwargs)
    return world.fake.requests[-1]


async def test_a_pull_answered_by_the_fake_conforms(world: World) -> None:
    world.pull(7, HEAD)
    exchange = await served(world, "GET", "/repos/acme/widget/pulls/7")
    assert exchange.status == 200
    assert response_violations(exchange) == []
    assert request_violations(exchange) == []


async def test_a_pull_without_head_is_caught(world: World) -> None:
    world.pull(7, HEAD)
    pull = json.loads((await served(world, "GET", "/repos/acme/widget/pulls/7")).response_body)
    del pull["head"]
    broken = record("GET", "/repos/acme/widget/pulls/7", answer=pull)
    assert rules(response_violations(broken)) == {"$: 'head' is a required property"}


async def test_a_field_the_version_removed_is_caught_in_that_version_only(world: World) -> None:
    world.pull(7, HEAD)
    pull = json.loads((await served(world, "GET", "/repos/acme/widget/pulls/7")).response_body)
    assert "merge_commit_sha" not in pull
    pull["merge_commit_sha"] = "f" * 40
    latest = record("GET", "/repos/acme/widget/pulls/7", answer=pull)
    assert rules(response_violations(latest)) == {
        "$.merge_commit_sha: API version 2026-03-10 removed this field"
    }
    # The 2022-11-28 answer must have it, its assignee and its repositories' has_downloads.
    old = record("GET", "/repos/acme/widget/pulls/7", answer=pull, version=None)
    assert rules(response_violations(old)) == {
        "$: 'assignee' is a required property",
        "$.head.repo: 'has_downloads' is a required property",
        "$.base.repo: 'has_downloads' is a required property",
    }


async def test_the_fake_answers_each_version_in_its_own_shape(world: World) -> None:
    world.pull(7, HEAD)
    token = world.fake.issue_token(INSTALLATION)
    async with httpx.AsyncClient(
        transport=world.fake.transport(), base_url=world.fake.api_url
    ) as client:
        for version in ("2022-11-28", LATEST):
            answer = await client.get(
                "/repos/acme/widget/pulls/7",
                headers={"authorization": f"token {token}", "x-github-api-version": version},
            )
            assert answer.headers["x-github-api-version-selected"] == version
            pull = answer.json()
            assert ("merge_commit_sha" in pull) is (version == "2022-11-28")
            assert ("has_downloads" in pull["base"]["repo"]) is (version == "2022-11-28")
    for exchange in world.fake.requests:
        assert response_violations(exchange) == []


def test_a_comment_body_that_is_a_number_is_caught() -> None:
    wrong = record("POST", "/repos/acme/widget/issues/7/comments", body={"body": 42})
    assert rules(request_violations(wrong)) == {"$.body: 42 is not of type 'string'"}


def test_an_unknown_query_parameter_is_caught() -> None:
    wrong = record("GET", "/repos/acme/widget/issues/7/comments", query={"per_page": "100"})
    assert request_violations(wrong) == []
    wrong = record("GET", "/repos/acme/widget/issues/7/comments", query={"order": "asc"})
    assert rules(request_violations(wrong)) == {"?order: unknown query parameter"}


def test_a_query_parameter_of_the_wrong_type_is_caught() -> None:
    wrong = record("GET", "/repos/acme/widget/issues/7/comments", query={"per_page": "many"})
    assert rules(request_violations(wrong)) == {"query per_page: 'many' is not of type 'integer'"}


def test_a_request_naming_another_version_or_none_is_caught() -> None:
    for version, named in ((None, "none"), ("2022-11-28", "2022-11-28")):
        wrong = record("GET", "/repos/acme/widget/pulls/7", version=version)
        assert rules(request_violations(wrong)) == {
            f"X-GitHub-Api-Version: {named}, where perfbot sends {API_VERSION}"
        }


def test_an_operation_github_does_not_have_is_caught() -> None:
    wrong = record("POST", "/repos/acme/widget/pulls/7/rerun")
    assert rules(request_violations(wrong)) == {"$: no such operation in the description"}


def test_a_body_for_an_operation_without_one_is_caught() -> None:
    wrong = record("GET", "/repos/acme/widget/pulls/7", body={"state": "open"})
    assert rules(request_violations(wrong)) == {"$: the operation takes no request body"}


def test_an_undocumented_success_is_caught_and_an_error_is_not() -> None:
    created = record("GET", "/repos/acme/widget/pulls/7", status=201, answer={})
    assert [v.message for v in response_violations(created)] == [
        "undocumented status (documented: ['200', '304', '404', '406', '500', '503'])"
    ]
    # GitHub answers 401, rate limits and 5xx on any route.
    refused = record("GET", "/repos/acme/widget/pulls/7", status=401, answer={"message": "x"})
    assert response_violations(refused) == []


def test_only_perfbots_requests_are_held_to_its_version() -> None:
    assert is_perfbots(record("GET", "/app"))
    assert not is_perfbots(record("GET", "/app", agent="python-httpx/0.28"))


def test_the_suites_check_fails_on_a_broken_exchange() -> None:
    """What tests/conftest.py runs after each test: a broken exchange is reported, once
    per distinct exchange however often it was made."""
    tally = Tally()
    log = ExchangeLog(tally)  # not the session's: its summary counts the suite's own
    wrong = record("GET", "/repos/acme/widget/pulls", query={"order": "asc"}, answer={})
    for _ in range(2):
        log.add(FakeGitHub(), wrong)
    assert [str(v) for v in log.violations()] == [
        "GET /repos/{owner}/{repo}/pulls → 200: $: {} is not of type 'array'",
        "GET /repos/{owner}/{repo}/pulls request: ?order: unknown query parameter",
    ]
    assert log.violations() == []  # each exchange is checked once, at the test's end
    assert (tally.exchanges, sum(tally.violations.values())) == (2, 2)


# --- Every call perfbot makes, in one scene ----------------------------------------------------


@pytest.fixture
async def app(world: World) -> AsyncIterator[GitHubApp]:
    github = world.github_app()
    try:
        yield github
    finally:
        await github.close()


async def scene(world: World, app: GitHubApp) -> None:
    """Every call of perfbot's GitHub adapter, once (the token exchange comes first)."""
    fake, repo = world.fake, world.repo
    fake.add_collaborator(repo, "bob", "maintain")
    repo.files[".github/perfbot.yml"] = "tolerance: 5\n"
    pull = world.pull(7, HEAD)
    run = world.measured_run(pull, 1001, report=report_zip({"tcp4_mbps": 5.0}))
    command = fake.add_comment(repo, 7, "/perfbot rerun", "bob")
    fake.add_delivery(
        "workflow_run",
        "completed",
        status_code=502,
        installation_id=INSTALLATION,
        payload={"action": "completed", "installation": {"id": INSTALLATION}},
    )
    owner, name = repo.owner, repo.name
    installation: Installation = app.installation(INSTALLATION)
    async with installation:
        artifacts = await installation.list_run_artifacts(owner, name, run.id)
        report = next(a for a in artifacts if a.name == "perf-report")
        assert await installation.download_artifact(owner, name, report.id, 1 << 20)
        assert await installation.get_pull(owner, name, 7) is not None
        assert await installation.pulls_for_commit(owner, name, HEAD)
        assert await installation.get_run_json(owner, name, run.id)
        assert await installation.runs_for_head(owner, name, HEAD)
        assert await installation.get_file(owner, name, ".github/perfbot.yml") == "tolerance: 5\n"
        assert await installation.collaborator_role(owner, name, "bob") == "maintain"
        posted = await installation.create_comment(owner, name, 7, "first")
        assert await installation.update_comment(owner, name, posted.id, "edited in place")
        assert len(await installation.list_comments(owner, name, 7)) == 2
        await installation.add_reaction(owner, name, command.id, "eyes")
        check = await installation.upsert_check_run(
            owner,
            name,
            check_run_id=None,
            name="perfbot",
            head_sha=HEAD,
            conclusion="neutral",
            title="perfbot",
            summary="no change",
        )
        await installation.upsert_check_run(
            owner,
            name,
            check_run_id=check,
            name="perfbot",
            head_sha=HEAD,
            conclusion="failure",
            title="perfbot",
            summary="1 regression",
        )
        await installation.rerun_workflow_run(owner, name, run.id)
        # The issues of performance changes on the default branch, and their commits.
        (base,) = world.commits("measured")
        world.merge(pull)
        merged, measured = await installation.list_commits(owner, name, "main")
        assert merged.parents[0] == measured.sha == base.sha
        assert [p.number for p in await installation.pulls_for_commit(owner, name, merged.sha)]
        issue = await installation.create_issue(owner, name, "tcp4 fell", "at #7", ["perfbot"])
        assert await installation.get_issue(owner, name, issue.number) == issue
        assert await installation.list_issues(owner, name, labels=["perfbot"]) == [issue]
        await installation.create_comment(owner, name, issue.number, "still there")
        assert await installation.update_issue(
            owner, name, issue.number, state="closed", state_reason="completed"
        )
    assert await app.bot_login() == fake.bot_login
    (attempt,) = await app.list_hook_deliveries(since=0, max_pages=2)
    await app.redeliver(attempt.id)
    recorded = await app.hook_delivery(attempt.id)  # what `perfbot replay ID` reads
    assert recorded is not None
    assert recorded.event == "workflow_run"


# Every operation perfbot's adapter uses: the scene must reach each of them.
PERFBOTS_OPERATIONS = {
    "POST /app/installations/{installation_id}/access_tokens",
    "GET /app",
    "GET /app/hook/deliveries",
    "POST /app/hook/deliveries/{delivery_id}/attempts",
    "GET /app/hook/deliveries/{delivery_id}",
    "GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts",
    "GET /repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}",
    "GET /repos/{owner}/{repo}/pulls/{pull_number}",
    "GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls",
    "GET /repos/{owner}/{repo}/actions/runs/{run_id}",
    "GET /repos/{owner}/{repo}/actions/runs",
    "GET /repos/{owner}/{repo}/contents/{path}",
    "GET /repos/{owner}/{repo}/collaborators/{username}/permission",
    "POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
    "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}",
    "GET /repos/{owner}/{repo}/issues/{issue_number}/comments",
    "POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
    "POST /repos/{owner}/{repo}/check-runs",
    "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}",
    "POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun",
    "GET /repos/{owner}/{repo}/commits",
    "POST /repos/{owner}/{repo}/issues",
    "GET /repos/{owner}/{repo}/issues/{issue_number}",
    "GET /repos/{owner}/{repo}/issues",
    "PATCH /repos/{owner}/{repo}/issues/{issue_number}",
}


async def test_every_call_perfbot_makes_conforms(world: World, app: GitHubApp) -> None:
    await scene(world, app)
    exchanges = world.fake.requests
    assert world.fake.unknown_routes == []
    description = apispec.rest(LATEST)
    reached = set()
    for exchange in exchanges:
        operation = description.operation(exchange.method, exchange.path)
        assert operation is not None, f"{exchange.method} {exchange.path}"
        reached.add(str(operation))
        assert request_violations(exchange) == [], str(operation)
        assert response_violations(exchange) == [], str(operation)
    assert reached == PERFBOTS_OPERATIONS


async def test_every_perfbot_request_names_one_api_version(world: World, app: GitHubApp) -> None:
    """The token exchange (inside githubkit's auth flow) and the artifact download (a plain
    request) included: without a version GitHub would answer them in 2022-11-28."""
    await scene(world, app)
    versions = {(r.method, r.path.split("/")[-1]): r.api_version for r in world.fake.requests}
    assert versions[("POST", "access_tokens")] == API_VERSION
    assert versions[("GET", "zip")] == API_VERSION
    assert set(versions.values()) == {API_VERSION}
    assert all(r.served_version == API_VERSION for r in world.fake.requests)
    # The storage hop is not the API's: it names no version (and no credential).
    (download,) = world.fake.storage_requests
    assert "x-github-api-version" not in download.headers


# --- The harness's webhook payloads ------------------------------------------------------------


def harness_payloads(world: World) -> list[tuple[str, bytes]]:
    """(event, body) of every delivery the harness and the fake build."""
    fake = world.fake
    pull = world.pull(7, HEAD)
    fork = world.pull(8, "b" * 40, fork=True)
    run, fork_run = world.measured_run(pull, 1001), world.measured_run(fork, 1002)
    check: CheckRun = fake.add_check_run(world.repo, "perfbot", HEAD)
    built: list[tuple[str, bytes]] = [
        ("workflow_run", world.delivery(run)[0]),
        ("workflow_run", world.delivery(fork_run)[0]),
        ("workflow_run", world.delivery(run, "requested")[0]),
        ("workflow_run", world.delivery(run, "in_progress")[0]),
        ("issue_comment", world.comment_delivery(7, "/perfbot rerun")[1]),
        ("issue_comment", world.comment_delivery(7, "edited", action="edited")[1]),
        ("check_run", world.check_run_delivery(check)[0]),
        ("check_suite", world.check_run_delivery(check, event="check_suite")[0]),
        ("installation", world.uninstall_delivery("installation", [REPO_ID])[0]),
        ("installation_repositories", world.uninstall_delivery("x", [REPO_ID, 501])[0]),
        ("installation", world.installation_delivery("suspend")[0]),
        ("installation", world.installation_delivery("unsuspend")[0]),
        ("installation", world.installation_delivery("created")[0]),
    ]
    requested = fake.webhook_payload_check_run(check, "requested_action", "bob", "rerun")
    added = fake.webhook_payload_installation_repositories(
        INSTALLATION, "added", added=[("acme/widget", REPO_ID)]
    )
    built += [
        ("check_run", json.dumps(requested).encode()),
        ("installation_repositories", json.dumps(added).encode()),
    ]
    return built


def test_the_harness_builds_payloads_github_describes(world: World) -> None:
    description = apispec.webhooks()
    checked = 0
    for event, body in harness_payloads(world):
        payload = json.loads(body)
        assert description.check(event, payload) == [], f"{event} {payload.get('action')}"
        checked += 1
    assert checked == 15


def test_a_payload_without_its_sender_is_caught(world: World) -> None:
    payload = world.fake.webhook_payload_workflow_run(world.measured_run(world.pull(7, HEAD), 1))
    del payload["sender"]
    payload["workflow_run"]["id"] = "1"
    assert rules(apispec.webhooks().check("workflow_run", payload)) == {
        "$: 'sender' is a required property",
        "$.workflow_run.id: '1' is not of type 'integer'",
    }


def test_an_event_github_does_not_describe_is_caught() -> None:
    assert rules(apispec.webhooks().check("workflow_run", {"action": "exploded"})) == {
        "$: no such event and action in the description"
    }


# --- GitHub's example payloads through triage --------------------------------------------------


def received_examples() -> list[Example]:
    return [e for e in apispec.webhook_examples() if e.event in RECEIVED_EVENTS]


@pytest.mark.parametrize("example", received_examples(), ids=lambda e: e.name)
def test_an_example_payload_becomes_a_known_job_or_none(example: Example) -> None:
    body = json.dumps(example.payload).encode()
    headers = {"x-github-event": example.event, "x-github-delivery": f"example-{example.name}"}
    delivery = parse_delivery(headers, body)
    job = routes.job_for(delivery)
    run = example.payload.get("workflow_run")
    run_event = run.get("event") if isinstance(run, dict) else None
    route = routes.route_for(example.event, example.action, run_event)
    if route is None:
        assert job is None
        return
    if example.event == "issue_comment":
        # A job only for a person's command on a pull request: none of the examples is.
        assert job is None
        return
    assert isinstance(job, NewJob)
    queued = routes.decode(job.event, job.payload)
    assert routes.route_of(queued).handler == route.handler
    assert route.handler in {r.handler for r in routes.ROUTES}
    assert callable(routes.handler_of(queued))
    assert job.installation_id == delivery.installation_id


def test_the_examples_cover_every_event_perfbot_receives() -> None:
    events = {e.event for e in received_examples()}
    assert events == set(RECEIVED_EVENTS)
    queued = [
        e
        for e in received_examples()
        if routes.job_for(
            parse_delivery(
                {"x-github-event": e.event, "x-github-delivery": "x"},
                json.dumps(e.payload).encode(),
            )
        )
    ]
    assert len(queued) == 9  # the re-run buttons and the installation's changes


# Where GitHub's examples break GitHub's description (tests/CONFORMANCE.md): the fake and
# the harness follow the description; triage takes both.
EXAMPLES_AGAINST_THE_DESCRIPTION = {
    "check_run.rerequested": {
        "$.check_run.app.created_at: '2018-04-25 20:42:10' is not a 'date-time'",
        "$.check_run.app: 'permissions' is a required property",
    },
    "installation": {
        "$.installation.created_at: 1557933591 is not of type 'string'",
        "$.installation: 'app_slug' is a required property",
    },
}


def test_examples_that_contradict_the_description_are_the_known_ones() -> None:
    description = apispec.webhooks()
    broken: dict[str, set[str]] = {}
    for example in received_examples():
        for violation in description.check(example.event, example.payload):
            broken.setdefault(example.name, set()).add(f"{violation.location}: {violation.message}")
    assert len(broken) == 21
    assert (
        EXAMPLES_AGAINST_THE_DESCRIPTION["check_run.rerequested"]
        <= broken["check_run.rerequested.7"]
    )
    assert EXAMPLES_AGAINST_THE_DESCRIPTION["installation"] <= broken["installation.created.1"]


OLDER = "2022-11-28"


@pytest.mark.api_version(OLDER)
async def test_set_to_the_older_version_every_call_speaks_it(world: World) -> None:
    """``PERFBOT_GITHUB_API_VERSION=2022-11-28``, for a GitHub Enterprise Server that does
    not serve 2026-03-10: every request names it (githubkit's generated calls, the token
    exchange and the download too), every answer is that version's, both conform to its
    description, and perfbot reads every answer the scene asks for."""
    settings = Settings.from_env(
        {
            "PERFBOT_APP_ID": str(world.fake.app_id),
            "PERFBOT_PRIVATE_KEY": rsa_keypair().private_pem,
            "PERFBOT_WEBHOOK_SECRET": "s3cret",
            "PERFBOT_GITHUB_API_VERSION": OLDER,
        }
    )
    app = GitHubApp(
        settings.app_id,
        settings.private_key,
        world.fake.api_url,
        transport=world.fake.transport(),
        api_version=settings.github_api_version,
    )
    try:
        await scene(world, app)
    finally:
        await app.close()
    assert {r.api_version for r in world.fake.requests} == {OLDER}
    assert {r.served_version for r in world.fake.requests} == {OLDER}
    for exchange in world.fake.requests:
        assert request_violations(exchange, OLDER) == []
        assert response_violations(exchange) == []
        # The same request checked as if perfbot spoke the newer version: caught.
        assert request_violations(exchange)[0].location == "X-GitHub-Api-Version"


@pytest.mark.api_version(OLDER)
def test_the_service_set_to_the_older_version_comments(tmp_path: Path) -> None:
    world = World.create()
    pull = world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db", PERFBOT_GITHUB_API_VERSION=OLDER) as client:
        body, headers = world.delivery(world.measured_run(pull, 1001))
        assert client.post("/webhook", content=body, headers=headers).status_code == 202
        wait_until(lambda: bool(world.bot_comments(7)), 30, "the comment")
        wait_idle(client.get, 30)
    assert {r.api_version for r in world.fake.requests} == {OLDER}
