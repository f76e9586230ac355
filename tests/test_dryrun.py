"""``perfbot serve --dry-run`` against the fake GitHub: a whole PR scene (a measured PR run,
a second push, ``/perfbot rerun``, a push run on main) sends GitHub no write at all, and
the comment it would have posted is on ``/dry-run``; the same store then run for real
posts the comment, and never names a comment, check run or issue the dry run made up."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from perfbot.app.dryrun_page import markdown_renderer, page_html
from perfbot.app.settings import Settings
from perfbot.cli import main
from perfbot.github.dryrun import SYNTHETIC_BASE, WouldWrite, names_synthetic
from tests.harness import (
    ZPERF_BASE,
    World,
    in_process_service,
    report_zip,
    settings_env,
    wait_idle,
    zip_of,
)

HEAD, NEWER = "a" * 40, "b" * 40


def post(client: httpx.Client, body: bytes, headers: dict[str, str]) -> str:
    response = client.post("/webhook", content=body, headers=headers)
    assert response.status_code == 202, response.text
    return headers["X-GitHub-Delivery"]


def pr_scene(world: World, client: httpx.Client) -> None:
    """A measured PR run, a second push measured, a reviewer's `/perfbot rerun`, and a
    measured push on main: every kind of write the App makes for a PR."""
    world.fake.add_collaborator(world.repo, "bob", "write")
    pull = world.pull(7, HEAD)
    post(client, *world.delivery(world.measured_run(pull, 1001)))
    wait_idle(client.get)
    pull.head_sha = NEWER
    post(client, *world.delivery(world.measured_run(pull, 1002, report=report_zip(ZPERF_BASE))))
    wait_idle(client.get)
    _, body, headers = world.comment_delivery(7, "/perfbot rerun", "bob")
    post(client, body, headers)
    wait_idle(client.get)
    (commit,) = world.commits("measured on main")
    run = world.fake.add_run(world.repo, 3000, commit.sha, "main", event="push")
    files = {"head/qemu_x86/zperf.log": "ZPERF-RESULT tcp4_mbps=5.9\nZPERF-DONE\n"}
    world.fake.add_artifact(world.repo, run, "perf-report", zip_of(files))
    post(client, *world.delivery(run))
    wait_idle(client.get)


def dry_run_writes(client: httpx.Client) -> list[dict[str, Any]]:
    answer = client.get("/dry-run", params={"format": "json"})
    assert answer.status_code == 200, answer.text
    writes: list[dict[str, Any]] = answer.json()["writes"]
    return writes


def test_a_dry_run_writes_nothing_and_shows_the_comment_it_would_post(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    world = World.create()
    caplog.set_level(logging.INFO, logger="perfbot.dry_run")
    with in_process_service(world, tmp_path / "db", PERFBOT_DRY_RUN="1") as client:
        pr_scene(world, client)
        writes = dry_run_writes(client)
        page = client.get("/dry-run")
    # Not one request but reads and the token exchange reached GitHub.
    assert world.fake.write_calls() == []
    assert world.fake.bot_comments(world.repo, 7) == []
    assert world.fake.reruns == []
    assert world.fake.check_runs_for(world.repo, HEAD) == []
    assert world.reactions(world.fake.comments_on(world.repo, 7)[-1]) == []
    # What it would have done, newest first: the first run's comment, edited by the second
    # push (the comment the dry run made up, not a second one), the re-run and its rocket.
    kinds = [w["kind"] for w in reversed(writes)]
    assert kinds.count("comment") == 1
    assert "comment_edit" in kinds
    assert {"check_run", "rerun", "reaction"} <= set(kinds)
    (comment,) = [w for w in writes if w["kind"] == "comment"]
    assert comment["path"] == "/repos/acme/widget/issues/7/comments"
    assert comment["repository"] == "acme/widget"
    assert comment["installation"] == 1
    assert comment["delivery"]
    assert "1 regression" in comment["body"]
    # The page shows the comment it would have posted, rendered.
    assert page.status_code == 200
    assert "content-security-policy" in page.headers
    assert "would comment on #7" in page.text
    assert "<table>" in page.text
    assert "tcp4_mbps" in page.text
    # Each write is one JSON line of the log, with the comment's body.
    logged = [getattr(r, "would_write", None) for r in caplog.records]
    assert comment in [entry for entry in logged if entry is not None]


def test_turning_the_dry_run_off_starts_from_the_same_store(tmp_path: Path) -> None:
    world = World.create()
    database = tmp_path / "db"
    pull = world.pull(7, HEAD)
    run = world.measured_run(pull, 1001)
    with in_process_service(world, database, PERFBOT_DRY_RUN="1") as client:
        post(client, *world.delivery(run, delivery_id="dry"))
        wait_idle(client.get)
        assert [w["kind"] for w in dry_run_writes(client)] == ["check_run", "comment"]
    assert world.fake.write_calls() == []
    before = len(world.fake.requests)
    with in_process_service(world, database) as client:
        assert client.get("/dry-run").status_code == 404  # no dry run, no page
        post(client, *world.delivery(run, delivery_id="real"))
        wait_idle(client.get)
    (posted,) = world.bot_comments(7)
    assert "1 regression" in posted
    assert len(world.fake.check_runs_for(world.repo, HEAD)) == 1
    # The ids the dry run stored were never sent to GitHub: perfbot took them as gone.
    later = world.fake.requests[before:]
    assert not any(names_synthetic(r.path) for r in later)
    assert all(c.id < SYNTHETIC_BASE for c in world.fake.comments_on(world.repo, 7))


def test_the_page_runs_nothing_a_pull_request_wrote() -> None:
    """The comment's text is other people's: raw HTML is left out, the markdown escaped."""
    entry = WouldWrite(
        at=0.0,
        method="POST",
        path="/repos/acme/widget/issues/7/comments",
        kind="comment",
        summary="comment on #7",
        repository="acme/widget",
        installation=1,
        delivery="d",
        body="`tcp4` <script>alert(1)</script> <img src=x onerror=alert(1)>",
    )
    for render in (markdown_renderer(), None):
        page = page_html([entry], 1, render)
        assert "<script>" not in page
        assert "<img" not in page
        assert "&lt;script&gt;" in page  # the markdown itself, shown escaped


def test_the_flag_and_the_variable_both_turn_the_dry_run_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--dry-run`` puts PERFBOT_DRY_RUN in the environment, where the processes of
    ``PERFBOT_PROCESSES`` read their settings too."""
    monkeypatch.chdir(tmp_path)  # no .env
    # Set, so that monkeypatch takes it away again after the test (the flag sets it).
    monkeypatch.setenv("PERFBOT_DRY_RUN", "off")
    for name in ("PERFBOT_APP_ID", "PERFBOT_PRIVATE_KEY", "PERFBOT_PRIVATE_KEY_PATH"):
        monkeypatch.delenv(name, raising=False)
    assert main(["serve", "--dry-run"]) == 2  # no credentials: stops before serving
    assert os.environ["PERFBOT_DRY_RUN"] == "1"
    env = settings_env("http://127.0.0.1:1", tmp_path / "db")
    assert Settings.from_env({**env, "PERFBOT_DRY_RUN": os.environ["PERFBOT_DRY_RUN"]}).dry_run
    assert not Settings.from_env(env).dry_run


@pytest.mark.parametrize(
    ("path", "synthetic"),
    [
        (f"/repos/o/r/issues/comments/{SYNTHETIC_BASE}", True),
        (f"/repos/o/r/check-runs/{SYNTHETIC_BASE + 5}/annotations", True),
        (f"/api/v3/repos/o/r/issues/comments/{SYNTHETIC_BASE * 10}", True),
        (f"/repos/o/r/issues/comments/{SYNTHETIC_BASE - 1}", False),
        ("/repos/o/r/issues/comments/12", False),
        (f"/repos/o/r{SYNTHETIC_BASE}/pulls/1", False),  # a name with digits in it
        (f"/repos/o/r/issues/{SYNTHETIC_BASE}x", False),
        ("/repos/o/r/issues/\u0663\u0663", False),  # digits, but not ASCII ones
    ],
)
def test_a_path_names_an_object_a_dry_run_made_up_by_a_part_that_is_its_number(
    path: str, synthetic: bool
) -> None:
    assert names_synthetic(path) is synthetic
