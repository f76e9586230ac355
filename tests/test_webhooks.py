"""Signature checks and which deliveries become jobs, with GitHub's real payloads."""

from __future__ import annotations

import json

import pytest

from perfbot.app.jobs import (
    PullRunCompleted,
    PullRunStarted,
    PushRunCompleted,
    RunJob,
    read_workflow_run,
)
from perfbot.app.routes import decode, job_for
from perfbot.app.triage import (
    SignatureMismatch,
    WebhookError,
    parse_delivery,
    sign,
    verify_signature,
)
from tests.paths import shared


def test_github_documented_test_vector() -> None:
    # From GitHub's "Validating webhook deliveries" page.
    secret, body = "It's a Secret to Everybody", b"Hello, World!"
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert sign(secret, body) == expected
    verify_signature(secret, body, expected)


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "sha1=0123",
        "sha256=",
        "sha256=" + "0" * 64,
        sign("other secret", b"{}"),
        sign("s3cret", b"{} "),
    ],
    ids=["missing", "empty", "sha1", "no-digest", "zeros", "other-secret", "other-body"],
)
def test_bad_signatures_are_refused(header: str | None) -> None:
    with pytest.raises(SignatureMismatch):
        verify_signature("s3cret", b"{}", header)


def headers(event: str, delivery: str = "d-1") -> dict[str, str]:
    return {"x-github-event": event, "x-github-delivery": delivery}


def payload_of(path: str) -> bytes:
    return shared(path).read_bytes()


def test_completed_pull_request_run_becomes_a_job() -> None:
    body = json.loads(
        payload_of(
            "generated/github-webhooks-derived/workflow_run.completed.fork_pr.DERIVED.payload.json"
        )
    )
    raw = json.dumps(body).encode()
    job = job_for(parse_delivery(headers("workflow_run"), raw))
    assert job is not None
    run = body["workflow_run"]
    assert job.serial_key == (
        f"{body['repository']['id']}:{run['head_repository']['id']}:{run['head_branch']}"
    )
    assert job.installation_id == body["installation"]["id"]
    # The queue keeps a slim job, from which the handler reads the same run.
    assert decode("workflow_run", job.payload) == read_workflow_run(body, PullRunCompleted)
    assert len(job.payload) < len(raw) / 3


RUN_PAYLOADS = [
    "octokit-webhooks/workflow_run/completed.payload.json",
    "octokit-webhooks/workflow_run/completed.with-pull-requests.payload.json",
    "octokit-webhooks/workflow_run/requested.payload.json",
    "octokit-webhooks/workflow_run/requested.with-conclusion.payload.json",
    "generated/github-webhooks-derived/workflow_run.completed.fork_pr.DERIVED.payload.json",
]


@pytest.mark.parametrize("path", RUN_PAYLOADS)
@pytest.mark.parametrize("run_event", ["pull_request", "push"])
def test_triage_reads_a_run_as_the_handler_reads_the_whole_delivery(
    path: str, run_event: str
) -> None:
    body = json.loads(payload_of(path))
    body["workflow_run"]["event"] = run_event
    body["installation"] = {"id": 1}
    # Every hint kept: the same repository as the delivery's.
    for pull in body["workflow_run"]["pull_requests"]:
        pull["base"]["repo"]["id"] = body["repository"]["id"]
    job = job_for(parse_delivery(headers("workflow_run"), json.dumps(body).encode()))
    cls: type[RunJob] = (
        (PullRunCompleted if body["action"] == "completed" else PullRunStarted)
        if run_event == "pull_request"
        else PushRunCompleted
    )
    if run_event == "push" and body["action"] != "completed":
        assert job is None  # a push run is recorded once finished
        return
    assert job is not None
    assert decode("workflow_run", job.payload) == read_workflow_run(body, cls)


@pytest.mark.parametrize("pulls", [5, True], ids=["number", "bool"])
def test_a_run_whose_pull_requests_are_no_list_is_no_job(pulls: object) -> None:
    body = pull_request_run()
    run = body["workflow_run"]
    assert isinstance(run, dict)
    run["pull_requests"] = pulls
    # Refused as unusable, not a 500 from iterating what cannot be iterated.
    assert job_for(parse_delivery(headers("workflow_run"), json.dumps(body).encode())) is None


def test_runs_of_other_events_are_ignored() -> None:
    # octokit's examples are repository_dispatch runs: nothing to compare.
    raw = payload_of("octokit-webhooks/workflow_run/completed.payload.json")
    assert job_for(parse_delivery(headers("workflow_run"), raw)) is None


@pytest.mark.parametrize("event", ["issues", "push", "star"])
def test_unrelated_events_are_ignored(event: str) -> None:
    assert job_for(parse_delivery(headers(event), b'{"action": "opened"}')) is None


@pytest.mark.parametrize(
    ("hdrs", "body", "message"),
    [
        ({"x-github-event": "push"}, b"{}", "X-GitHub-Delivery"),
        ({"x-github-delivery": "x"}, b"{}", "X-GitHub-Event"),
        (headers("push"), b"not json", "not JSON"),
        (headers("push"), b"[1, 2]", "not a JSON object"),
        (headers("push"), b"\xff\xfe", "not JSON"),
        (headers("push"), b"[" * 100_000, "not JSON"),
    ],
    ids=["no-delivery", "no-event", "not-json", "array", "binary", "deep"],
)
def test_malformed_deliveries(hdrs: dict[str, str], body: bytes, message: str) -> None:
    with pytest.raises(WebhookError, match=message):
        parse_delivery(hdrs, body)


def test_slim_payload_keeps_the_pull_request_hints() -> None:
    body = json.loads(
        payload_of("octokit-webhooks/workflow_run/completed.with-pull-requests.payload.json")
    )
    body["workflow_run"]["event"] = "pull_request"
    body["workflow_run"]["pull_requests"][0]["base"]["repo"]["id"] = body["repository"]["id"]
    body["installation"] = {"id": 1}
    job = job_for(parse_delivery(headers("workflow_run"), json.dumps(body).encode()))
    assert job is not None
    queued = decode("workflow_run", job.payload)
    assert isinstance(queued, PullRunCompleted)
    run = queued.run
    assert run == read_workflow_run(body, PullRunCompleted).run
    assert run.hinted_pulls == (body["workflow_run"]["pull_requests"][0]["number"],)


def pull_request_run() -> dict[str, object]:
    body: dict[str, object] = json.loads(
        payload_of("octokit-webhooks/workflow_run/completed.with-pull-requests.payload.json")
    )
    run = body["workflow_run"]
    assert isinstance(run, dict)
    run["event"] = "pull_request"
    body["installation"] = {"id": 1, "node_id": "MDIz"}
    return body


def test_what_the_fast_parser_refuses_and_orjson_accepts_is_triaged_by_orjson() -> None:
    plain = json.dumps(pull_request_run()).encode()
    # 2**70: simdjson refuses integers beyond 64 bits; orjson reads it as a float.
    unusual = plain[:-1] + b', "big": 1180591620717411303424}'
    delivery = parse_delivery(headers("workflow_run"), unusual)
    assert isinstance(delivery.payload, dict)  # orjson's answer
    assert job_for(delivery) == job_for(parse_delivery(headers("workflow_run"), plain))


@pytest.mark.parametrize(
    "extra",
    [b'"huge": 1e400', b'"lone": "\\ud800"'],
    ids=["number-beyond-a-double", "escaped-lone-surrogate"],
)
def test_what_both_parsers_refuse_is_not_json(extra: bytes) -> None:
    plain = json.dumps(pull_request_run()).encode()
    with pytest.raises(WebhookError, match="not JSON"):
        parse_delivery(headers("workflow_run"), plain[:-1] + b", " + extra + b"}")


def test_containers_where_scalars_belong_become_null() -> None:
    body = pull_request_run()
    run = body["workflow_run"]
    assert isinstance(run, dict)
    run["head_sha"] = {"not": ["a", "sha"]}
    run["name"] = [1, {"two": 2}]
    deep: list[object] = []
    for _ in range(900):  # deeper than orjson writes (255 levels)
        deep = [deep]
    run["run_attempt"] = deep
    job = job_for(parse_delivery(headers("workflow_run"), json.dumps(body).encode()))
    assert job is not None
    kept = decode("workflow_run", job.payload)
    assert isinstance(kept, PullRunCompleted)
    assert kept.run.workflow_name == ""  # as if GitHub had sent null
    assert kept.run.attempt == 1
    assert job.installation_id == 1
    assert kept.run.head_sha == "None"  # matches no commit: proves no PR


def test_a_utf8_byte_order_mark_is_refused_as_before() -> None:
    # simdjson would skip it; the worker's json.loads would not, so it stays refused.
    body = b"\xef\xbb\xbf" + json.dumps(pull_request_run()).encode()
    with pytest.raises(WebhookError, match="not JSON"):
        parse_delivery(headers("workflow_run"), body)


def test_a_signature_header_that_is_not_ascii_is_a_mismatch() -> None:
    with pytest.raises(SignatureMismatch):
        verify_signature("s3cret", b"{}", "sha256=" + "é" * 64)
