"""The App end to end against the fake GitHub (in-process): deliveries in, PR comments out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from githubkit.core import GitHubCore

from perfbot.engine.show.render import MARKER
from perfbot.sandbox.fakegithub import Run
from tests.harness import (
    INSTALLATION,
    SECRET,
    ZPERF_BASE,
    World,
    assert_done,
    in_process_service,
    job_schedule,
    regressed,
    report_zip,
    wait_idle,
    wait_until,
    zip_of,
)

HEAD = "a" * 40
NEWER = "b" * 40


@pytest.fixture
def world() -> World:
    return World.create()


def test_first_comment_then_edit_in_place(world: World, tmp_path: Path) -> None:
    pull = world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        body, headers = world.delivery(world.measured_run(pull, 1001))
        assert client.post("/webhook", content=body, headers=headers).status_code == 202
        wait_until(lambda: len(world.bot_comments(7)) == 1, what="the first comment")
        (first,) = world.bot_comments(7)
        assert first.startswith(MARKER)
        assert "1 regression" in first
        assert "<code>tcp4_mbps</code>" in first
        assert "🔴 **−10.00 %**" in first
        first_id = world.fake.bot_comments(world.repo, 7)[0].id

        # A second run for the same head (a re-run) edits the same comment.
        report = report_zip({**ZPERF_BASE})
        body, headers = world.delivery(world.measured_run(pull, 1002, report=report))
        client.post("/webhook", content=body, headers=headers)
        wait_until(lambda: "no change beyond the noise floor" in world.bot_comments(7)[0])
        comments = world.fake.bot_comments(world.repo, 7)
        assert [c.id for c in comments] == [first_id]
        assert world.fake.foreign_comment_edits == []


def test_deleted_comment_is_recreated(world: World, tmp_path: Path) -> None:
    pull = world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        post_run(client, world, world.measured_run(pull, 1001))
        wait_until(lambda: len(world.bot_comments(7)) == 1)
        world.fake.delete_comment(world.fake.bot_comments(world.repo, 7)[0].id)
        post_run(client, world, world.measured_run(pull, 1002))
        wait_until(lambda: len(world.bot_comments(7)) == 1, what="the comment to come back")


def test_existing_own_comment_is_adopted_and_foreign_markers_ignored(
    world: World, tmp_path: Path
) -> None:
    pull = world.pull(7, HEAD)
    # Someone pastes perfbot's marker: that comment must never be edited.
    forged = world.fake.add_comment(world.repo, 7, f"{MARKER}\nfake all-green report")
    own = world.fake.add_bot_comment(world.repo, 7, f"{MARKER}\nold report from a lost database")
    with in_process_service(world, tmp_path / "db") as client:
        post_run(client, world, world.measured_run(pull, 1001))
        wait_until(lambda: "1 regression" in world.fake.comments[own.id].body)
    assert world.fake.comments[forged.id].body.endswith("fake all-green report")
    assert len(world.fake.bot_comments(world.repo, 7)) == 1


def test_fork_pr_without_pull_requests_in_the_run(world: World, tmp_path: Path) -> None:
    pull = world.pull(9, HEAD, fork=True)
    run = world.measured_run(pull, 1001, hint=None)
    with in_process_service(world, tmp_path / "db") as client:
        body, headers = world.delivery(run)
        assert b'"pull_requests": []' in body
        client.post("/webhook", content=body, headers=headers)
        wait_until(lambda: len(world.bot_comments(9)) == 1, what="the fork PR's comment")


@pytest.mark.parametrize(
    "hint",
    [8, 7_000, b"not a zip", zip_of({"n.txt": "abc"}), zip_of({"n.txt": "99999999999"})],
    ids=["other-open-pr", "missing-pr", "not-a-zip", "not-a-number", "huge"],
)
def test_forged_pr_number_posts_nowhere_else(
    world: World, tmp_path: Path, hint: int | bytes
) -> None:
    # A fork's run names no PR (pull_requests: []): the artifact is all there is.
    pull = world.pull(7, HEAD, fork=True)
    victim = world.pull(8, "c" * 40)
    with in_process_service(world, tmp_path / "db") as client:
        post_run(client, world, world.measured_run(pull, 1001, hint=hint))
        # The hint is rejected, and the run's real PR is derived from its head commit.
        wait_until(lambda: len(world.bot_comments(7)) == 1)
    assert world.bot_comments(victim.number) == []
    assert len(world.fake.storage_requests) == 2, "the PR-number artifact was read"


def test_pr_named_by_github_needs_no_pr_number_artifact(world: World, tmp_path: Path) -> None:
    pull = world.pull(7, HEAD)
    world.pull(8, "c" * 40)
    with in_process_service(world, tmp_path / "db") as client:
        post_run(client, world, world.measured_run(pull, 1001, hint=8))
        wait_until(lambda: len(world.bot_comments(7)) == 1)
    assert world.bot_comments(8) == []
    # Only the report was downloaded; the forged PR-number artifact was never read.
    assert len(world.fake.storage_requests) == 1


def test_two_prs_of_one_branch_are_told_apart_by_the_artifact(world: World, tmp_path: Path) -> None:
    pull = world.pull(7, HEAD)
    world.fake.add_pull(world.repo, 8, HEAD, pull.head_ref, base_ref="release")
    with in_process_service(world, tmp_path / "db") as client:
        post_run(client, world, world.measured_run(pull, 1001, hint=8))
        wait_until(lambda: len(world.bot_comments(8)) == 1)
    assert world.bot_comments(7) == []


def test_forged_pr_number_of_a_fork_with_no_open_pr_posts_nothing(
    world: World, tmp_path: Path
) -> None:
    closed = world.fake.add_pull(world.repo, 7, HEAD, "feature", state="closed")
    world.pull(8, "c" * 40)
    run = world.measured_run(closed, 1001, hint=8)
    with in_process_service(world, tmp_path / "db") as client:
        delivery = post_run(client, world, run)
        wait_idle(client.get)
    assert world.fake.write_calls() == []
    assert_done(client.database, delivery, "hint rejected: PR 8", "nothing posted")


def test_expired_artifact_posts_nothing(world: World, tmp_path: Path) -> None:
    pull = world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        delivery = post_run(client, world, world.measured_run(pull, 1001, expired=True))
        wait_idle(client.get)
    assert world.fake.write_calls() == []
    assert world.fake.unknown_routes == []
    assert_done(client.database, delivery, "no usable 'perf-report' artifact")


def test_missing_base_side_is_not_available(world: World, tmp_path: Path) -> None:
    pull = world.pull(7, HEAD)
    report = report_zip(head=regressed(), base=None)
    with in_process_service(world, tmp_path / "db") as client:
        post_run(client, world, world.measured_run(pull, 1001, report=report))
        wait_until(lambda: len(world.bot_comments(7)) == 1)
    (comment,) = world.bot_comments(7)
    assert "comparison not available (no base measurement)" in comment


@pytest.mark.parametrize(
    ("report", "expected"),
    [
        (b"PK\x03\x04 truncated", "could not be read"),
        (
            zip_of(
                {
                    "head/x/a.json": '{"perfbot": 1, "metrics": [{"name": "@x"}]}',
                    "base/x/a.json": "garbage",
                }
            ),
            "not a supported report format",
        ),
    ],
    ids=["broken-zip", "broken-files"],
)
def test_malformed_report_is_explained(
    world: World, tmp_path: Path, report: bytes, expected: str
) -> None:
    pull = world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        post_run(client, world, world.measured_run(pull, 1001, report=report))
        wait_until(lambda: len(world.bot_comments(7)) == 1)
    (comment,) = world.bot_comments(7)
    assert expected in comment
    assert "Traceback" not in comment
    assert "@x" not in comment


def test_repeated_delivery_runs_once(world: World, tmp_path: Path) -> None:
    pull = world.pull(7, HEAD)
    run = world.measured_run(pull, 1001)
    with in_process_service(world, tmp_path / "db") as client:
        body, headers = world.delivery(run, delivery_id="same-guid")
        first = client.post("/webhook", content=body, headers=headers)
        second = client.post("/webhook", content=body, headers=headers)
        assert first.json() == {"status": "queued"}
        assert second.json() == {"status": "duplicate"}
        wait_idle(client.get)
    posts = [r.path for r in world.fake.write_calls() if r.method == "POST"]
    assert sorted(posts) == [
        "/repos/acme/widget/check-runs",
        "/repos/acme/widget/issues/7/comments",
    ]


def test_a_delivery_naming_no_installation_is_done_and_ignored(
    world: World, tmp_path: Path
) -> None:
    """A delivery without ``installation`` (a repository's own webhook pointed at perfbot)
    has no one to act for: its job ends DONE with the reason, not FAILED, and GitHub is not
    asked anything."""
    run = world.measured_run(world.pull(7, HEAD), 1001)
    payload = world.fake.webhook_payload_workflow_run(run)
    del payload["installation"]
    body = json.dumps(payload).encode()
    headers = world.fake.webhook_headers("workflow_run", body, SECRET, "no-installation")
    with in_process_service(world, tmp_path / "db") as client:
        assert client.post("/webhook", content=body, headers=headers).status_code == 202
        wait_idle(client.get)
    assert_done(client.database, "no-installation", "ignored", "names no installation")
    assert world.fake.requests == []


def test_bad_signature_is_refused_and_nothing_stored(world: World, tmp_path: Path) -> None:
    pull = world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        body, headers = world.delivery(world.measured_run(pull, 1001), delivery_id="d1")
        forged = {**headers, "X-Hub-Signature-256": "sha256=" + "0" * 64}
        assert client.post("/webhook", content=body, headers=forged).status_code == 401
        unsigned = {k: v for k, v in headers.items() if not k.startswith("X-Hub-Signature")}
        assert client.post("/webhook", content=body, headers=unsigned).status_code == 401
        # The same delivery id, correctly signed, is still new: nothing was stored.
        assert client.post("/webhook", content=body, headers=headers).json()["status"] == "queued"


def test_storage_host_never_sees_the_token(world: World, tmp_path: Path) -> None:
    pull = world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        post_run(client, world, world.measured_run(pull, 1001))
        wait_until(lambda: len(world.bot_comments(7)) == 1)
    assert world.fake.storage_requests
    assert all("authorization" not in r.headers for r in world.fake.storage_requests)


def test_started_run_marks_the_comment_stale(world: World, tmp_path: Path) -> None:
    pull = world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        post_run(client, world, world.measured_run(pull, 1001))
        wait_until(lambda: len(world.bot_comments(7)) == 1)
        pull.head_sha = NEWER  # a new push
        started = world.measured_run(pull, 1002, status="in_progress")
        post_run(client, world, started, "in_progress")
        wait_until(lambda: "is being measured" in world.bot_comments(7)[0])
        (comment,) = world.bot_comments(7)
        assert f"previous commit <code>{HEAD[:7]}</code>" in comment
        assert "1 regression" in comment  # the old numbers are still shown


def test_a_late_start_event_clears_an_older_commits_notice(world: World, tmp_path: Path) -> None:
    """Under retries a run's `requested` can be handled after its `completed`."""
    pull = world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        post_run(client, world, world.measured_run(pull, 1001))
        wait_until(lambda: len(world.bot_comments(7)) == 1)
        pull.head_sha = NEWER  # pushed: its run starts...
        post_run(client, world, world.measured_run(pull, 1002, status="in_progress"), "requested")
        wait_until(lambda: "is being measured" in world.bot_comments(7)[0])
        pull.head_sha = "c" * 40  # ...pushed again before it finished
        third = world.measured_run(pull, 1003, report=report_zip({**ZPERF_BASE}))
        post_run(client, world, third)  # completed first,
        wait_until(lambda: "no change beyond the noise floor" in world.bot_comments(7)[0])
        post_run(client, world, third, "requested")  # its start handled last
        wait_until(lambda: "is being measured" not in world.bot_comments(7)[0], 10, "no notice")
        wait_idle(client.get)
    (comment,) = world.bot_comments(7)
    assert "previous commit" not in comment
    assert "no change beyond the noise floor" in comment


def test_old_run_finishing_late_does_not_replace_the_newer_result(
    world: World, tmp_path: Path
) -> None:
    pull = world.pull(7, HEAD)
    old = world.measured_run(pull, 1001)
    with in_process_service(world, tmp_path / "db") as client:
        pull.head_sha = NEWER
        new = world.measured_run(pull, 1002, report=report_zip({**ZPERF_BASE}))
        post_run(client, world, new)
        wait_until(lambda: len(world.bot_comments(7)) == 1)
        post_run(client, world, old)
        wait_idle(client.get)
    (comment,) = world.bot_comments(7)
    assert "no change beyond the noise floor" in comment


def test_concurrent_runs_for_one_pr_leave_one_comment(world: World, tmp_path: Path) -> None:
    pull = world.pull(7, HEAD)
    runs = [world.measured_run(pull, 2000 + n) for n in range(6)]
    with in_process_service(world, tmp_path / "db", PERFBOT_WORKERS="8") as client:
        for run in runs:
            post_run(client, world, run)
        wait_idle(client.get)
    assert len(world.bot_comments(7)) == 1


def test_a_burst_after_start_up_shares_one_token_and_one_read_of_each_file(
    world: World, tmp_path: Path
) -> None:
    # Every worker starts a job at once: the token, the App's login and the two
    # configuration files must each be fetched once, not once per worker.
    runs = [world.measured_run(world.pull(n, f"{n:040x}"), 3000 + n) for n in range(1, 13)]
    world.fake.latency = 0.2  # the jobs overlap: each call takes longer than all the posts
    with in_process_service(world, tmp_path / "db", PERFBOT_WORKERS="12") as client:
        for run in runs:
            post_run(client, world, run)
        wait_until(lambda: all(len(world.bot_comments(n)) == 1 for n in range(1, 13)), 30)
    paths = [r.path for r in world.fake.requests]
    assert len(world.fake.tokens) == 1
    assert sum(p.endswith("/access_tokens") for p in paths) == 1
    assert paths.count("/app") == 1
    assert sum(p.endswith("/contents/.github/perfbot.yml") for p in paths) == 2


def test_the_report_is_downloaded_while_the_pull_request_is_proven(
    world: World, tmp_path: Path
) -> None:
    pull = world.pull(7, HEAD)
    world.fake.hang_next(1, 5.0, path_contains="/pulls/7")
    with in_process_service(world, tmp_path / "db") as client:
        post_run(client, world, world.measured_run(pull, 1001))

        def downloading_during_the_proof() -> bool:
            proof = [r for r in world.fake.requests if r.path.endswith("/pulls/7")]
            download = [r for r in world.fake.requests if r.path.endswith("/zip")]
            return bool(proof and download) and proof[0].status == 0  # still unanswered

        wait_until(downloading_during_the_proof, 4, "the download during the proof")
        wait_until(lambda: len(world.bot_comments(7)) == 1, 20, "the comment")


def test_a_run_naming_its_pr_only_by_artifact_is_proven_before_its_report_is_fetched(
    world: World, tmp_path: Path
) -> None:
    closed = world.fake.add_pull(world.repo, 7, HEAD, "feature", state="closed")
    world.pull(8, "c" * 40)
    run = world.measured_run(closed, 1001, hint=8)  # names a PR it does not belong to
    with in_process_service(world, tmp_path / "db") as client:
        delivery = post_run(client, world, run)
        wait_idle(client.get)
    assert world.fake.write_calls() == []
    assert_done(client.database, delivery, "nothing posted")
    # Only the PR-number artifact was downloaded: a forged number costs no report download.
    assert len(world.fake.storage_requests) == 1


def test_an_unproven_run_named_by_github_posts_nothing_though_its_report_was_fetched(
    world: World, tmp_path: Path
) -> None:
    pull = world.pull(7, HEAD)
    run = world.measured_run(pull, 1001)
    world.fake.add_pull(world.repo, 7, "d" * 40, "feature")  # the PR has moved on
    world.fake.hang_next(1, 1.0, path_contains="/zip")  # the proof fails mid-download
    with in_process_service(world, tmp_path / "db") as client:
        delivery = post_run(client, world, run)
        wait_idle(client.get)
        assert_done(client.database, delivery, "nothing posted")
        # Past the hang, the abandoned download must not post either. Shown without a
        # sleep: another PR's download, hung longer and started later, ends after it.
        other = world.pull(8, NEWER)
        world.fake.hang_next(1, 1.5, path_contains="/zip")
        post_run(client, world, world.measured_run(other, 1002))
        wait_until(lambda: len(world.bot_comments(8)) == 1, what="the other PR's comment")
        wait_idle(client.get)
    assert world.bot_comments(7) == []
    assert world.fake.check_runs_for("acme/widget", run.head_sha) == []


def test_disabled_repository_gets_no_write(tmp_path: Path) -> None:
    world = World.create(files={".github/perfbot.yml": "enabled: false\n"})
    pull = world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        delivery = post_run(client, world, world.measured_run(pull, 1001))
        wait_idle(client.get)
    assert world.fake.write_calls() == []
    assert_done(client.database, delivery, "perfbot is disabled for acme/widget")


def test_operator_denied_repository_is_not_even_queued(world: World, tmp_path: Path) -> None:
    pull = world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db", PERFBOT_DISABLED_REPOS="acme/*") as client:
        body, headers = world.delivery(world.measured_run(pull, 1001))
        response = client.post("/webhook", content=body, headers=headers)
        assert response.status_code == 202, response.text
        assert response.json() == {"status": "ignored"}
    assert world.fake.requests == []


def test_invalid_config_is_one_line_in_the_comment(tmp_path: Path) -> None:
    world = World.create(files={".github/perfbot.yml": "threshold: lots\n"})
    pull = world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        post_run(client, world, world.measured_run(pull, 1001))
        wait_until(lambda: len(world.bot_comments(7)) == 1)
    (comment,) = world.bot_comments(7)
    assert "threshold" in comment
    assert "Noise floor ±1 %" in comment  # the default was used


def test_health_and_metrics(world: World, tmp_path: Path) -> None:
    with in_process_service(world, tmp_path / "db") as client:
        assert client.get("/healthz").json() == {"status": "ok", "queue_depth": 0}
        body = b'{"zen": "hi"}'
        client.post(
            "/webhook", content=body, headers=world.fake.webhook_headers("ping", body, SECRET)
        )
        metrics = client.get("/metrics").text
    assert 'perfbot_deliveries_total{event="ping",outcome="ping"} 1.0' in metrics
    assert "perfbot_queue_depth" in metrics


def test_oversized_body_is_refused(world: World, tmp_path: Path) -> None:
    with in_process_service(world, tmp_path / "db") as client:
        body = b" " * (25 * 1024 * 1024 + 1)
        headers = world.fake.webhook_headers("push", body, SECRET)
        response = client.post("/webhook", content=body, headers=headers)
    assert response.status_code == 413


def test_unsigned_requests_cannot_invent_metric_labels(world: World, tmp_path: Path) -> None:
    # Anyone can reach the endpoint; every distinct label value would be a new time series.
    with in_process_service(world, tmp_path / "db") as client:
        for n in range(5):
            headers = {"X-GitHub-Event": f"invented-{n}", "X-GitHub-Delivery": f"x{n}"}
            assert client.post("/webhook", content=b"{}", headers=headers).status_code == 401
        headers = {"X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "y"}
        assert client.post("/webhook", content=b"{}", headers=headers).status_code == 401
        metrics = client.get("/metrics").text
    assert "invented" not in metrics
    assert 'perfbot_deliveries_total{event="other",outcome="rejected_401"} 5.0' in metrics
    assert 'perfbot_deliveries_total{event="issue_comment",outcome="rejected_401"} 1.0' in metrics


def test_a_body_sent_in_chunks_is_read_whole(world: World, tmp_path: Path) -> None:
    pull = world.pull(7, HEAD)
    body, headers = world.delivery(world.measured_run(pull, 1001))
    pieces = [body[i : i + 1000] for i in range(0, len(body), 1000)]
    with in_process_service(world, tmp_path / "db") as client:
        chunked = {k: v for k, v in headers.items() if k.lower() != "content-length"}
        response = client.post("/webhook", content=iter(pieces), headers=chunked)
        assert response.json() == {"status": "queued"}
        assert client.get("/webhook").status_code == 405
        wait_until(lambda: len(world.bot_comments(7)) == 1)


def post_run(client: httpx.Client, world: World, run: Run, action: str = "completed") -> str:
    """Post ``run``'s delivery (answered 202); its delivery id."""
    body, headers = world.delivery(run, action)
    response = client.post("/webhook", content=body, headers=headers)
    assert response.status_code == 202, response.text
    return headers["X-GitHub-Delivery"]


@pytest.mark.parametrize("repo_says", ["", "enabled: true\n"], ids=["org-off", "repo-overrides"])
def test_org_wide_disable_and_repository_override(tmp_path: Path, repo_says: str) -> None:
    world = World.create(files={".github/perfbot.yml": repo_says} if repo_says else None)
    world.fake.add_repo(
        "acme/.github", 501, INSTALLATION, files={".github/perfbot.yml": "enabled: false\n"}
    )
    pull = world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        delivery = post_run(client, world, world.measured_run(pull, 1001))
        wait_idle(client.get)
    if repo_says:
        assert len(world.bot_comments(7)) == 1
    else:
        assert world.fake.write_calls() == []
        assert_done(client.database, delivery, "perfbot is disabled for acme/widget")


def test_rate_limit_delays_one_job_without_blocking_the_others(
    world: World, tmp_path: Path
) -> None:
    # A secondary limit holds its whole installation back (GitHub asks so): the other job
    # is another installation's.
    other = world.another(2, "globex/gadget", 600)
    slow, fast = world.pull(7, HEAD), other.pull(8, NEWER)
    slow_run = world.measured_run(slow, 1001)
    fast_run = other.measured_run(fast, 1002)
    world.fake.secondary_rate_limit_next(1, retry_after=3, path_contains="/runs/1001/")
    with in_process_service(world, tmp_path / "db") as client:
        slow_delivery = post_run(client, world, slow_run)
        wait_until(lambda: any(r.status == 403 for r in world.fake.requests), what="the rate limit")
        post_run(client, other, fast_run)
        wait_until(lambda: len(other.bot_comments(8)) == 1, what="the other PR's comment")
        assert world.bot_comments(7) == []  # still waiting out its Retry-After
        wait_until(lambda: len(world.bot_comments(7)) == 1, 20, "the delayed comment")
        wait_idle(client.get)
    # Retry-After was honoured: the retry was scheduled no sooner than GitHub asked (3 s
    # after the rate limit, so over 3 s after the delivery); the backoff alone says ~2 s.
    created_at, due_at, attempts = job_schedule(client.database, slow_delivery)
    assert due_at - created_at >= 3.0
    assert attempts == 2


def test_an_update_opens_no_githubkit_client(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A PR update's calls all go around githubkit (perfbot.github.direct): opening its HTTP
    # client for every job cost each update a client it never used.
    opened: list[object] = []
    create = GitHubCore._create_async_client

    async def counted(self: GitHubCore[Any]) -> Any:
        opened.append(self)
        return await create(self)

    monkeypatch.setattr(GitHubCore, "_create_async_client", counted)
    pull = world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        body, headers = world.delivery(world.measured_run(pull, 1001))
        client.post("/webhook", content=body, headers=headers)
        wait_until(lambda: len(world.bot_comments(7)) == 1, what="the first comment")
        wait_idle(client.get)
        before = len(opened)
        report = report_zip({**ZPERF_BASE})
        body, headers = world.delivery(world.measured_run(pull, 1002, report=report))
        client.post("/webhook", content=body, headers=headers)
        wait_until(lambda: "no change beyond the noise floor" in world.bot_comments(7)[0])
        wait_idle(client.get)
    assert len(opened) == before
