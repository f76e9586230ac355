"""The job contract (perfbot.app.jobs): what triage queues, what handlers get, and jobs the
previous release queued, which still run after an upgrade."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from perfbot.app.job_payloads import encode
from perfbot.app.jobs import (
    AnyJob,
    BadPayload,
    InstallationJob,
    IssueCommandJob,
    IssueCommentJob,
    JobTooNew,
    PullRunCompleted,
    PullRunStarted,
    Repository,
    RerequestJob,
    Run,
    UnknownJob,
)
from perfbot.app.routes import INTERNAL_WATCH, ROUTES, decode, job_for
from perfbot.app.triage import parse_delivery
from perfbot.app.worker import Worker
from perfbot.store.base import JobOutcome, JobStatus, NewJob
from perfbot.store.sqlite import SQLiteStore
from perfbot.support.metrics import Metrics
from tests.harness import INSTALLATION, REPO_ID, World

# The previous release's queue, verbatim: see "about" in the file.
PREVIOUS = json.loads((Path(__file__).parent / "jobs_previous_release.json").read_text())["jobs"]
HEAD = "a" * 40
ACME_WIDGET = Repository(REPO_ID, "acme", "widget")
SUSPENDED_AT = 1619663570.0  # 2021-04-29T02:32:50Z, GitHub's example installation's time


def previous(name: str) -> NewJob:
    return NewJob(**PREVIOUS[name])


# What each job of the previous release means to this one.
EXPECTED: dict[str, AnyJob] = {
    "workflow_run completed": PullRunCompleted(
        "completed",
        Run(
            id=1001,
            attempt=1,
            number=1,
            event="pull_request",
            status="completed",
            conclusion="success",
            head_sha=HEAD,
            head_branch="feature-7",
            head_repo_id=REPO_ID,
            run_repo_id=REPO_ID,
            repo_id=REPO_ID,
            owner="acme",
            name="widget",
            workflow_name="net-perf",
            workflow_path=".github/workflows/net-perf.yml",
            html_url="https://github.com/acme/widget/actions/runs/1001",
            hinted_pulls=(7,),
        ),
    ),
    "workflow_run requested (a fork's PR)": PullRunStarted(
        "requested",
        Run(
            id=1002,
            attempt=1,
            number=2,
            event="pull_request",
            status="completed",
            conclusion="success",
            head_sha="c" * 40,
            head_branch="feature-8",
            head_repo_id=900,
            run_repo_id=REPO_ID,
            repo_id=REPO_ID,
            owner="acme",
            name="widget",
            workflow_name="net-perf",
            workflow_path=".github/workflows/net-perf.yml",
            html_url="https://github.com/acme/widget/actions/runs/1002",
            hinted_pulls=(),
        ),
    ),
    "issue_comment created": IssueCommentJob(ACME_WIDGET, 7, 10013, "bob", "rerun"),
    "check_run rerequested": RerequestJob("check_run", ACME_WIDGET, 4242, HEAD, "bob", False),
    "check_suite rerequested": RerequestJob("check_suite", ACME_WIDGET, 4242, HEAD, "bob", False),
    "installation suspend": InstallationJob(
        "installation", "suspend", INSTALLATION, SUSPENDED_AT, ()
    ),
    "installation unsuspend": InstallationJob(
        "installation", "unsuspend", INSTALLATION, SUSPENDED_AT, ()
    ),
    "installation deleted": InstallationJob(
        "installation", "deleted", INSTALLATION, None, (41, 42)
    ),
    "installation_repositories removed": InstallationJob(
        "installation_repositories", "removed", INSTALLATION, None, (43,)
    ),
}


def test_every_kind_of_job_has_a_job_of_the_previous_release() -> None:
    # Every kind GitHub delivers (perfbot's own watch jobs are new in this release).
    delivered = {route.event for route in ROUTES} - {INTERNAL_WATCH}
    assert {job["event"] for job in PREVIOUS.values()} == delivered
    assert set(EXPECTED) == set(PREVIOUS)


@pytest.mark.parametrize("name", sorted(PREVIOUS))
def test_a_job_of_the_previous_release_reads_as_its_typed_job(name: str) -> None:
    queued = previous(name)
    assert "version" not in json.loads(queued.payload)  # the previous release wrote none
    assert decode(queued.event, queued.payload) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(PREVIOUS))
def test_triage_queues_the_same_job_as_the_previous_release_did(name: str) -> None:
    # The previous release queued the delivery itself for all but workflow_run, whose slim
    # copy triage reads as it would the delivery: either way, the same delivery again.
    queued = previous(name)
    headers = {"x-github-delivery": "d-1", "x-github-event": queued.event}
    job = job_for(parse_delivery(headers, queued.payload.encode()))
    assert job is not None
    assert (job.event, job.serial_key, job.installation_id) == (
        queued.event,
        queued.serial_key,
        queued.installation_id,
    )
    assert json.loads(job.payload)["version"] == type(EXPECTED[name]).version
    assert decode(job.event, job.payload) == EXPECTED[name]
    # The slim job: the 12 KB comment delivery is queued in a few hundred bytes.
    assert len(job.payload) <= max(len(queued.payload), 600)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_job_reads_back_as_written_in_plain_json(name: str) -> None:
    job = EXPECTED[name]
    kind = PREVIOUS[name]["event"]
    text = encode(job)
    document = json.loads(text)  # readable JSON, no pickle
    newest = 3 if kind in ("workflow_run", "issue_comment") else 2
    assert document["version"] == type(job).version == newest
    assert decode(kind, text) == job


def test_a_job_with_an_integer_beyond_64_bits_is_still_written() -> None:
    big = IssueCommentJob(Repository(2**70, "acme", "widget"), 7, 1, "bob", "help")
    assert decode("issue_comment", encode(big)) == big


def test_a_job_from_a_newer_perfbot_is_refused_by_its_version() -> None:
    payload = json.dumps({**json.loads(encode(EXPECTED["installation deleted"])), "version": 3})
    with pytest.raises(JobTooNew) as refused:
        decode("installation", payload)
    assert str(refused.value) == (
        "job payload version 3 is newer than this perfbot (knows 1–2 of installation):"
        " upgrade, or it is dropped"
    )


# A PR command as version 2 (the release before accept) wrote it, verbatim.
PR_COMMAND_V2 = (
    '{"version":2,"repo":{"id":500,"owner":"acme","name":"widget"},"number":7,'
    '"comment_id":10013,"login":"bob","command":"help","subject":"pull_request"}'
)
# A watch issue's command, version 2 still (this release did not change it).
ISSUE_COMMAND_V2 = (
    '{"version":2,"repo":{"id":500,"owner":"acme","name":"widget"},"number":12,'
    '"comment_id":10014,"login":"bob","command":"accept","reason":"known","subject":"issue"}'
)


def test_a_pr_command_of_version_2_reads_with_no_globs_and_no_reason() -> None:
    assert decode("issue_comment", PR_COMMAND_V2) == IssueCommentJob(
        ACME_WIDGET, 7, 10013, "bob", "help", (), ""
    )
    assert decode("issue_comment", ISSUE_COMMAND_V2) == IssueCommandJob(
        ACME_WIDGET, 12, 10014, "bob", "accept", "known"
    )


def test_a_pr_accept_is_queued_with_its_globs_and_reason() -> None:
    headers, body = comment_delivery(body="thanks\n/perfbot accept udp* tcp_rx.* -- larger buffers")
    job = job_for(parse_delivery(headers, body))
    assert job is not None
    assert json.loads(job.payload)["version"] == 3
    assert decode(job.event, job.payload) == IssueCommentJob(
        ACME_WIDGET, 7, 10013, "bob", "accept", ("udp*", "tcp_rx.*"), "larger buffers"
    )
    assert job.serial_key == "500:pr:7"  # the PR-command route: one after the PR's others


def comment_job(**changes: Any) -> str:
    document = json.loads(encode(EXPECTED["issue_comment created"]))
    for key, value in changes.items():
        if value is None:
            del document[key]
        else:
            document[key] = value
    return json.dumps(document)


@pytest.mark.parametrize(
    ("kind", "payload", "message"),
    [
        ("push", "{}", "no handler for event 'push'"),
        ("issue_comment", "{not json", "payload is not JSON"),
        ("issue_comment", "[1, 2]", "payload is not a JSON object"),
        ("issue_comment", comment_job(version="2"), 'no usable version ("2")'),
        ("issue_comment", comment_job(version=0), "no usable version (0)"),
        ("issue_comment", comment_job(version=True), "no usable version (true)"),
        ("issue_comment", comment_job(login=None), "lacks login"),
        ("issue_comment", comment_job(extra=1), "has unknown extra"),
        ("issue_comment", comment_job(number="7"), 'number is "7", not a int'),
        ("issue_comment", comment_job(number=True), "number is true, not a int"),
        ("issue_comment", comment_job(command="merge"), 'command is "merge", not one of'),
        ("issue_comment", comment_job(repo={"id": 1, "owner": "a"}), "repo's payload lacks name"),
        ("check_suite", encode(EXPECTED["check_run rerequested"]), "is a check_run job"),
        ("workflow_run", '{"action": "completed"}', "without a usable 'workflow_run'"),
        ("workflow_run", '{"action": "deleted"}', 'with the action "deleted"'),
    ],
    ids=lambda value: value if isinstance(value, str) and len(value) < 30 else None,
)
def test_a_payload_that_cannot_be_read_says_why(kind: str, payload: str, message: str) -> None:
    with pytest.raises(BadPayload, match=None) as refused:
        decode(kind, payload)
    assert message in str(refused.value)
    assert isinstance(refused.value, UnknownJob) == (kind == "push")


# --- the filters, in one place ----------------------------------------------------------------


def comment_delivery(**comment: Any) -> tuple[dict[str, str], bytes]:
    payload = json.loads(previous("issue_comment created").payload)
    payload["comment"].update(comment)
    headers = {"x-github-delivery": "d-1", "x-github-event": "issue_comment"}
    return headers, json.dumps(payload).encode()


@pytest.mark.parametrize(
    "comment",
    [
        {"user": {"login": "ci[bot]", "type": "Bot"}},
        {"body": "looks good"},
        {"body": "```\n/perfbot rerun\n```"},
    ],
    ids=["bot", "no-command", "fenced"],
)
def test_what_is_no_persons_command_gets_no_job_and_no_run(comment: dict[str, Any]) -> None:
    headers, body = comment_delivery(**comment)
    assert job_for(parse_delivery(headers, body)) is None
    # Queued by some older triage all the same, it is refused by the same filter.
    with pytest.raises(BadPayload, match="no person's new command on a pull request"):
        decode("issue_comment", body)
    # The control: the same delivery as a person's command is a job.
    assert job_for(parse_delivery(*comment_delivery())) is not None


def test_the_operator_deny_list_gets_no_job() -> None:
    headers, body = comment_delivery()
    delivery = parse_delivery(headers, body)
    assert job_for(delivery, lambda name: name == "acme/widget") is None
    assert job_for(delivery, lambda name: name == "acme/other") is not None


# --- through the worker -----------------------------------------------------------------------


@pytest.fixture
async def worker(tmp_path: Path) -> AsyncIterator[tuple[SQLiteStore, Worker]]:
    world = World.create()
    store = SQLiteStore(str(tmp_path / "db"))
    await store.setup()
    github = world.github_app()
    worker = Worker(store, github, concurrency=2, repo_disabled=lambda _: False, metrics=Metrics())
    worker.start()
    try:
        yield store, worker
    finally:
        await worker.stop()
        await github.close()
        await store.close()


async def ended(store: SQLiteStore, delivery: str) -> JobOutcome:
    async with asyncio.timeout(20):
        while True:
            outcome = await store.job_outcome(delivery)
            if outcome is not None and outcome.status in (JobStatus.DONE, JobStatus.FAILED):
                return outcome
            await asyncio.sleep(0.02)


async def test_the_worker_runs_a_job_of_the_previous_release(
    worker: tuple[SQLiteStore, Worker],
) -> None:
    store, running = worker
    await store.record_delivery(
        "old", "installation", "deleted", previous("installation deleted"), time.time()
    )
    running.wake()
    outcome = await ended(store, "old")
    assert outcome.status is JobStatus.DONE
    assert outcome.reason is not None
    assert outcome.reason.startswith(
        "installation 1: deleted; forgot the pull requests of 2 repositories"
    )
    assert await store.is_suspended(INSTALLATION)


async def test_a_job_the_worker_cannot_read_fails_at_once_and_the_worker_goes_on(
    worker: tuple[SQLiteStore, Worker],
) -> None:
    store, running = worker
    newer = json.dumps({**json.loads(encode(EXPECTED["installation suspend"])), "version": 3})
    for delivery, payload in (("newer", newer), ("garbled", "{not json")):
        job = NewJob("installation", payload, "installation:1", INSTALLATION)
        await store.record_delivery(delivery, "installation", "suspend", job, time.time())
    running.wake()
    too_new, garbled = await ended(store, "newer"), await ended(store, "garbled")
    assert (too_new.status, too_new.attempts) == (JobStatus.FAILED, 1)
    assert too_new.last_error is not None
    assert "job payload version 3 is newer than this perfbot" in too_new.last_error
    assert (garbled.status, garbled.attempts) == (JobStatus.FAILED, 1)
    assert garbled.last_error is not None
    assert "payload is not JSON" in garbled.last_error
    assert not await store.is_suspended(INSTALLATION)  # neither ran
    # The worker is still at work: a good job after them runs.
    await store.record_delivery(
        "good", "installation", "suspend", previous("installation suspend"), time.time()
    )
    running.wake()
    assert (await ended(store, "good")).status is JobStatus.DONE
    assert await store.is_suspended(INSTALLATION)
