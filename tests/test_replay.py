"""``perfbot replay`` against the fake GitHub (served on loopback ports): a recorded
workflow_run delivery is run through the App's pipeline and each decision printed, with
nothing written to GitHub; an opted-out repository's payload says why nothing happens;
bad input gets one sentence and exit status 2."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfbot.cli import main
from perfbot.sandbox.fakegithub import FakeGitHub, serve
from tests.harness import INSTALLATION, World, in_process_service, settings_env, wait_idle


@pytest.fixture
def world() -> World:
    return World.create()


@pytest.fixture
def fake(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    """The fake served on loopback, and perfbot's settings pointing at it (no .env read)."""
    monkeypatch.chdir(tmp_path)
    with serve(world.fake) as served:
        for name, value in settings_env(served.api_url, tmp_path / "unused.db").items():
            monkeypatch.setenv(name, value)
        yield served


def workflow_run_payload(world: World, run_id: int = 1001) -> dict[str, object]:
    run = world.measured_run(world.pull(7, "a" * 40), run_id)
    payload = world.fake.webhook_payload_workflow_run(run, "completed")
    payload["installation"] = {"id": INSTALLATION}
    return payload


def test_a_recorded_delivery_prints_each_decision_and_writes_nothing(
    world: World, fake: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    logged = fake.add_delivery(
        "workflow_run",
        "completed",
        installation_id=INSTALLATION,
        payload=workflow_run_payload(world),
    )
    assert main(["replay", str(logged.id)]) == 0
    out = capsys.readouterr().out
    assert f"delivery {logged.guid}: workflow_run completed, repository acme/widget" in out
    assert "triage: a job for on_pull_run_completed" in out
    assert "artifacts: GET /repos/acme/widget/actions/runs/1001/artifacts → 200" in out
    assert "artifact download: GET /repos/acme/widget/actions/artifacts/" in out
    assert "PR proof: GET /repos/acme/widget/pulls/7 → 200" in out
    assert "would write: comment on #7 (POST /repos/acme/widget/issues/7/comments)" in out
    assert "    | " in out  # the comment it would post
    assert "would write: create check run 'perfbot'" in out
    assert "outcome: comment 4611686018427387905 on PR 7 is up to date" in out
    assert "dry run: 2 write(s) held back; nothing was written to GitHub" in out
    # Read from GitHub's log, then only reads and token exchanges.
    assert any(r.path == f"/app/hook/deliveries/{logged.id}" for r in fake.requests)
    assert fake.write_calls() == []
    assert world.bot_comments(7) == []


def test_an_opted_out_repository_says_why_nothing_happens(
    world: World, fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world.repo.files[".github/perfbot.yml"] = "enabled: false\n"
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps(workflow_run_payload(world)))
    assert main(["replay", str(payload), "--event", "workflow_run"]) == 0
    out = capsys.readouterr().out
    assert "triage: a job for on_pull_run_completed" in out
    assert "configuration: GET /repos/acme/widget/contents/.github/perfbot.yml → 200" in out
    assert "outcome: ignored: perfbot is disabled for acme/widget by its configuration" in out
    assert "would write" not in out
    assert "artifacts:" not in out  # stopped before reading the run
    assert fake.write_calls() == []


def test_a_denied_repository_gets_no_job(
    world: World,
    fake: FakeGitHub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PERFBOT_DISABLED_REPOS", "acme/*")
    logged = {
        "event": "workflow_run",
        "guid": "abc-123",
        "request": {
            "headers": {"X-GitHub-Event": "workflow_run"},
            "payload": workflow_run_payload(world),
        },
    }
    exported = tmp_path / "delivery.json"
    exported.write_text(json.dumps(logged))  # a delivery as GitHub's log shows it
    assert main(["replay", str(exported)]) == 0
    out = capsys.readouterr().out
    assert "delivery abc-123: workflow_run completed" in out
    assert "triage: the operator disabled acme/widget (PERFBOT_DISABLED_REPOS): no job" in out
    assert fake.requests == []  # nothing to read either


def test_a_payload_cannot_drive_the_terminal(
    world: World, fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The event name, the delivery id and the action come from the file: an escape
    sequence or a bidirectional override in them is printed as its code, never obeyed."""
    payload = workflow_run_payload(world)
    payload["action"] = "completed\u202e\x1b[2J"
    logged = {
        "event": "workflow_run\x1b]0;owned\x07",
        "guid": "abc\x9b31m-123",
        "request": {"headers": {}, "payload": payload},
    }
    exported = tmp_path / "delivery.json"
    exported.write_text(json.dumps(logged))
    main(["replay", str(exported)])
    out = capsys.readouterr().out
    for control in ("\x1b", "\x9b", "\x07", "\u202e"):
        assert control not in out
    assert "delivery abc\\x9b31m-123: workflow_run\\x1b]0;owned\\x07" in out
    assert "completed\\u202e\\x1b[2J" in out


@pytest.mark.parametrize(
    ("content", "arguments", "sentence"),
    [
        ("not json {", [], "is not JSON."),
        ("[1, 2]", [], "holds no JSON object"),
        ('{"action": "completed"}', [], "is a bare payload: name its event with --event"),
    ],
)
def test_a_bad_file_gets_one_sentence(
    fake: FakeGitHub,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str,
    arguments: list[str],
    sentence: str,
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert main(["replay", str(path), *arguments]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith(f"perfbot: {path} ")
    assert sentence in line
    assert "Traceback" not in captured.err
    assert captured.out == ""
    assert fake.requests == []


def test_a_missing_file_or_unknown_delivery_gets_one_sentence(
    fake: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", "nowhere.json"]) == 2
    assert capsys.readouterr().err == (
        "perfbot: nowhere.json is neither a delivery id (digits) nor a file.\n"
    )
    assert main(["replay", "987654"]) == 2
    assert capsys.readouterr().err == (
        "perfbot: GitHub's delivery log has no delivery 987654 (it keeps three days).\n"
    )


def test_a_store_is_replayed_on_a_copy(
    world: World,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The run starts from the store's state (the PR's comment is edited, not created) and
    the store itself is left as it was."""
    payload = workflow_run_payload(world)
    database = tmp_path / "perfbot.db"
    with in_process_service(world, database) as client:
        body, headers = world.delivery(world.fake.runs[1001])
        assert client.post("/webhook", content=body, headers=headers).status_code == 202
        wait_idle(client.get)
    (comment,) = world.fake.bot_comments(world.repo, 7)
    before = database.read_bytes()
    path = tmp_path / "payload.json"
    path.write_text(json.dumps(payload))
    monkeypatch.chdir(tmp_path)
    with serve(world.fake) as served:
        for name, value in settings_env(served.api_url, database).items():
            monkeypatch.setenv(name, value)
        writes_before = len(served.write_calls())
        code = main(["replay", str(path), "--event", "workflow_run", "--store", str(database)])
        assert code == 0
        assert len(served.write_calls()) == writes_before
    out = capsys.readouterr().out
    assert f"would write: edit comment {comment.id}" in out
    assert database.read_bytes() == before
    assert main(["replay", str(path), "--event", "x", "--store", "postgresql://h/db"]) == 2
    assert "--store takes a SQLite file" in capsys.readouterr().err
