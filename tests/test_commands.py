"""Reviewer commands, perfbot's check run and opting out, end to end against the fake GitHub."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from perfbot.app.commands import PullCommand, parse_command, parse_pull_command
from perfbot.engine.show.render import help_body
from perfbot.store import open_store
from perfbot.store.base import PullState
from tests.harness import (
    REPO_ID,
    ZPERF_BASE,
    World,
    assert_done,
    in_process_service,
    regressed,
    report_zip,
    wait_idle,
    wait_until,
)

HEAD = "a" * 40
ROLES = ("admin", "maintain", "write", "triage", "read", "none")
RANK = {role: index for index, role in enumerate(reversed(ROLES))}


@pytest.fixture
def world() -> World:
    return World.create()


def post(client: httpx.Client, body: bytes, headers: dict[str, str]) -> httpx.Response:
    response = client.post("/webhook", content=body, headers=headers)
    assert response.status_code == 202, response.text
    return response


def post_run(client: httpx.Client, world: World, run_id: int, report: bytes | None = None) -> str:
    """Post run ``run_id``'s completion; returns its delivery id."""
    pull = world.fake.repo(world.repo).pulls[7]
    body, headers = world.delivery(world.measured_run(pull, run_id, report=report))
    post(client, body, headers)
    return headers["X-GitHub-Delivery"]


def measurement(world: World, run_id: int = 1001) -> int:
    """A finished measurement of PR 7's head (it uploaded its report), not yet reported."""
    return world.measured_run(world.fake.repo(world.repo).pulls[7], run_id).id


def private_world(files: dict[str, str] | None = None) -> World:
    world = World.create(files=files)
    world.repo.private = True  # strangers have no role at all ("none")
    return world


# --- /perfbot rerun ------------------------------------------------------------------------


@pytest.mark.parametrize("minimum", ["triage", "write", "maintain", "admin"])
@pytest.mark.parametrize("role", ROLES)
def test_rerun_permission_matrix(tmp_path: Path, role: str, minimum: str) -> None:
    config = "" if minimum == "write" else f"rerun:\n  permission: {minimum}\n"
    world = private_world({".github/perfbot.yml": config})
    world.pull(7, HEAD)
    world.fake.add_collaborator(world.repo, "bob", role)
    run_id = measurement(world)
    allowed = RANK[role] >= RANK[minimum]
    with in_process_service(world, tmp_path / "db") as client:
        comment, body, headers = world.comment_delivery(7, "/perfbot rerun")
        post(client, body, headers)
        wait_idle(client.get)
    assert world.fake.reruns == ([run_id] if allowed else [])
    # One reaction, saying how the command ended.
    assert world.reactions(comment) == (["rocket"] if allowed else ["confused"])
    assert world.fake.bot_comments(world.repo, 7) == []  # never a comment on refusal
    words = ("re-run of run 1001 started",) if allowed else ("re-run refused", f"role {role}")
    assert_done(client.database, headers["X-GitHub-Delivery"], *words)


def test_rerun_marks_the_comment_until_the_new_result_lands(world: World, tmp_path: Path) -> None:
    world.pull(7, HEAD)
    world.fake.add_collaborator(world.repo, "bob", "write")
    with in_process_service(world, tmp_path / "db") as client:
        post_run(client, world, 1001)
        wait_until(lambda: len(world.bot_comments(7)) == 1)
        _, body, headers = world.comment_delivery(7, "Looks noisy.\n/PerfBot ReRun please")
        post(client, body, headers)
        wait_until(lambda: "Re-run requested by <code>bob</code>" in world.bot_comments(7)[0])
        assert world.fake.reruns == [1001]
        # The re-run completes (attempt 2): the notice goes away.
        run = world.fake.runs[1001]
        run.status, run.conclusion = "completed", "success"
        post(client, *world.delivery(run))
        wait_until(lambda: "Re-run requested" not in world.bot_comments(7)[0])
    assert len(world.bot_comments(7)) == 1


def test_two_quick_reruns_start_one_run(world: World, tmp_path: Path) -> None:
    world.pull(7, HEAD)
    world.fake.add_collaborator(world.repo, "bob", "write")
    measurement(world)
    with in_process_service(world, tmp_path / "db") as client:
        first, body1, headers1 = world.comment_delivery(7, "/perfbot rerun")
        second, body2, headers2 = world.comment_delivery(7, "/perfbot rerun")
        post(client, body1, headers1)
        post(client, body2, headers2)
        wait_idle(client.get)
    assert world.fake.reruns == [1001]
    # 🚀 for the one that started it, 👀 for the one that found it pending.
    assert sorted([world.reactions(first), world.reactions(second)]) == [["eyes"], ["rocket"]]


def test_rerun_reruns_only_a_configured_workflow_and_fails_without_one(tmp_path: Path) -> None:
    world = World.create(files={".github/perfbot.yml": "workflows: [bench]\n"})
    world.pull(7, HEAD)
    world.fake.add_collaborator(world.repo, "bob", "admin")
    measurement(world)  # "net-perf": not configured, though it uploaded a report
    with in_process_service(world, tmp_path / "db") as client:
        comment, body, headers = world.comment_delivery(7, "/perfbot rerun")
        post(client, body, headers)
        wait_idle(client.get)
        assert_done(client.database, headers["X-GitHub-Delivery"], "no measurement run")
    assert world.fake.reruns == []
    assert world.reactions(comment) == ["confused"]


def test_rerun_github_error_is_confused(world: World, tmp_path: Path) -> None:
    world.pull(7, HEAD)
    world.fake.add_collaborator(world.repo, "bob", "write")
    measurement(world)
    world.fake.fail_next(1, 403, path_contains="/rerun")
    with in_process_service(world, tmp_path / "db") as client:
        comment, body, headers = world.comment_delivery(7, "/perfbot rerun")
        post(client, body, headers)
        wait_idle(client.get)
        assert_done(client.database, headers["X-GitHub-Delivery"], "re-run failed", "403")
    assert world.reactions(comment) == ["confused"]
    assert world.fake.bot_comments(world.repo, 7) == []


@pytest.mark.parametrize(
    ("text", "user_type", "action"),
    [
        ("/perfbot rerun", "Bot", "created"),
        ("/perfbot rerun", "User", "edited"),
        ("please /perfbot rerun", "User", "created"),
        ("```\n/perfbot rerun\n```", "User", "created"),
    ],
    ids=["bot", "edited", "not-at-line-start", "fenced"],
)
def test_ignored_comments_write_nothing(
    world: World, tmp_path: Path, text: str, user_type: str, action: str
) -> None:
    world.pull(7, HEAD)
    world.fake.add_collaborator(world.repo, "bob", "admin")
    world.fake.add_run(world.repo, 1001, HEAD, "feature-7")
    with in_process_service(world, tmp_path / "db") as client:
        _, body, headers = world.comment_delivery(7, text, user_type=user_type, action=action)
        assert post(client, body, headers).json() == {"status": "ignored"}
    assert world.fake.write_calls() == []


def test_help_replies_with_the_commands(world: World, tmp_path: Path) -> None:
    world.pull(7, HEAD)
    world.fake.add_collaborator(world.repo, "carol", "write")
    with in_process_service(world, tmp_path / "db") as client:
        comment, body, headers = world.comment_delivery(7, "/perfbot help", login="carol")
        post(client, body, headers)
        wait_idle(client.get)
    (reply,) = world.bot_comments(7)
    assert "/perfbot rerun" in reply
    assert "/perfbot help" in reply
    assert "<code>write</code>" in reply
    assert world.reactions(comment) == []  # the reply is the one write
    assert world.fake.reruns == []


def test_help_from_strangers_costs_one_reaction(tmp_path: Path) -> None:
    world = private_world()
    world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        deliveries = []
        for _ in range(5):
            _, body, headers = world.comment_delivery(7, "/perfbot help", login="mallory")
            post(client, body, headers)
            deliveries.append(headers["X-GitHub-Delivery"])
        wait_idle(client.get)
        reasons = [assert_done(client.database, d, "help", "mallory") for d in deliveries]
    assert world.bot_comments(7) == []
    writes = [f"{r.method} {r.path}" for r in world.fake.write_calls()]
    assert len(writes) == 1
    assert writes[0].endswith("/reactions")
    assert sum("already told" in (reason or "") for reason in reasons) == 4


def test_parse_command() -> None:
    assert parse_command("/perfbot rerun") == "rerun"
    assert parse_command("hi\n   /PERFBOT Help\n") == "help"
    assert parse_command("    /perfbot rerun") is None  # indented code
    assert parse_command("> /perfbot rerun") is None
    assert parse_command("/perfbot reruns") is None
    assert parse_command("~~~\n/perfbot rerun\n~~~\n/perfbot help") == "help"


# --- opting out: zero write calls ----------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "env", "labels", "reason"),
    [
        ({".github/perfbot.yml": "enabled: false\n"}, {}, (), "by its configuration"),
        ({}, {"PERFBOT_DISABLED_REPOS": "acme/widget"}, (), "the operator disabled acme/widget"),
        ({}, {}, ("PerfBot: Mute",), "PR 7 carries the mute label"),
        ({".github/perfbot.yml": "mute_label: QUIET\n"}, {}, ("quiet",), "the mute label"),
    ],
    ids=["repo-config", "operator", "mute-label", "custom-mute-label"],
)
def test_opted_out_rerun_writes_nothing(
    tmp_path: Path,
    files: dict[str, str],
    env: dict[str, str],
    labels: tuple[str, ...],
    reason: str,
) -> None:
    world = World.create(files=files)
    world.pull(7, HEAD, labels=labels)
    world.fake.add_collaborator(world.repo, "bob", "admin")
    measurement(world)
    with in_process_service(world, tmp_path / "db", **env) as client:
        deliveries = []
        for text in ("/perfbot rerun", "/perfbot help"):
            _, body, headers = world.comment_delivery(7, text)
            answer = post(client, body, headers).json()
            deliveries.append((headers["X-GitHub-Delivery"], answer))
        wait_idle(client.get)
        for delivery, answer in deliveries:
            if env:  # the operator's deny list is applied on receipt: not even a job
                assert answer == {"status": "ignored"}
            else:
                assert_done(client.database, delivery, "ignored: ", reason)
    assert world.fake.write_calls() == []
    assert world.fake.reruns == []


def test_org_exclude_writes_nothing(tmp_path: Path) -> None:
    world = World.create()
    world.fake.add_repo(
        "acme/.github", 501, 1, files={".github/perfbot.yml": "exclude: [widget]\n"}
    )
    pull = world.pull(7, HEAD)
    world.fake.add_collaborator(world.repo, "bob", "admin")
    with in_process_service(world, tmp_path / "db") as client:
        run_body, run_headers = world.delivery(world.measured_run(pull, 1001))
        post(client, run_body, run_headers)
        _, body, headers = world.comment_delivery(7, "/perfbot rerun")
        post(client, body, headers)
        wait_idle(client.get)
        for delivery in (run_headers["X-GitHub-Delivery"], headers["X-GitHub-Delivery"]):
            assert_done(client.database, delivery, "ignored: acme/.github excludes widget")
    assert world.fake.write_calls() == []


def test_mute_label_mutes_the_report_and_check_run_until_removed(
    world: World, tmp_path: Path
) -> None:
    pull = world.pull(7, HEAD, labels=("perfbot: mute",))
    with in_process_service(world, tmp_path / "db") as client:
        delivery = post_run(client, world, 1001)
        wait_idle(client.get)
        assert_done(client.database, delivery, "ignored: PR 7 carries the mute label")
        assert world.fake.write_calls() == []
        pull.labels = []
        post_run(client, world, 1002)
        wait_until(lambda: len(world.bot_comments(7)) == 1)


# --- perfbot's check run ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "head", "conclusion"),
    [
        ("", regressed(), "neutral"),
        ("fail_on_regression: true\n", regressed(), "failure"),
        ("fail_on_regression: true\n", {**ZPERF_BASE}, "success"),
        ("", {**ZPERF_BASE}, "success"),
    ],
    ids=["regressed-advisory", "regressed-failing", "clean-failing", "clean"],
)
def test_check_run_conclusion(
    tmp_path: Path, config: str, head: dict[str, float], conclusion: str
) -> None:
    world = World.create(files={".github/perfbot.yml": config})
    world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        post_run(client, world, 1001, report_zip(head))
        wait_until(lambda: len(world.fake.check_runs_for(world.repo, HEAD)) == 1)
    (check,) = world.fake.check_runs_for(world.repo, HEAD)
    assert (check.name, check.status, check.conclusion) == ("perfbot", "completed", conclusion)
    expected_title = "1 regression" if head != ZPERF_BASE else "no change beyond the noise floor"
    assert check.output["title"] == expected_title
    assert check.output["summary"] == world.bot_comments(7)[0]


def test_check_run_is_updated_not_duplicated(world: World, tmp_path: Path) -> None:
    world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        post_run(client, world, 1001)
        wait_until(lambda: len(world.fake.check_runs_for(world.repo, HEAD)) == 1)
        post_run(client, world, 1002, report_zip({**ZPERF_BASE}))
        wait_until(lambda: world.fake.check_runs_for(world.repo, HEAD)[0].conclusion == "success")
    assert len(world.fake.check_runs_for(world.repo, HEAD)) == 1
    assert any(r.method == "PATCH" and "/check-runs/" in r.path for r in world.fake.requests)


def test_check_run_off(tmp_path: Path) -> None:
    world = World.create(files={".github/perfbot.yml": "check_run: false\n"})
    world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        delivery = post_run(client, world, 1001)
        wait_until(lambda: len(world.bot_comments(7)) == 1)
        wait_idle(client.get)
        reason = assert_done(client.database, delivery, "is up to date")
    assert "check run" not in (reason or "")
    assert world.fake.check_runs == {}


@pytest.mark.parametrize("event", ["check_run", "check_suite"])
@pytest.mark.parametrize(("role", "started"), [("write", True), ("read", False)])
def test_check_run_button_reruns_with_permission(
    world: World, tmp_path: Path, event: str, role: str, started: bool
) -> None:
    world.pull(7, HEAD)
    world.fake.add_collaborator(world.repo, "bob", role)
    with in_process_service(world, tmp_path / "db") as client:
        post_run(client, world, 1001)
        wait_until(lambda: len(world.fake.check_runs_for(world.repo, HEAD)) == 1)
        (check,) = world.fake.check_runs_for(world.repo, HEAD)
        body, headers = world.check_run_delivery(check, "bob", event)
        post(client, body, headers)
        wait_idle(client.get)
        if started:
            wait_until(lambda: "Re-run requested by <code>bob</code>" in world.bot_comments(7)[0])
        words = ("re-run of run 1001 started",) if started else ("re-run refused", "role read")
        assert_done(client.database, headers["X-GitHub-Delivery"], *words)
    assert world.fake.reruns == ([1001] if started else [])


def test_another_apps_check_run_button_is_ignored(world: World, tmp_path: Path) -> None:
    world.pull(7, HEAD)
    world.fake.add_collaborator(world.repo, "bob", "admin")
    world.fake.add_run(world.repo, 1001, HEAD, "feature-7")
    foreign = world.fake.add_check_run(world.repo, "ci", HEAD, app_id=1)
    with in_process_service(world, tmp_path / "db") as client:
        body, headers = world.check_run_delivery(foreign, "bob")
        post(client, body, headers)
        wait_idle(client.get)
        assert_done(client.database, headers["X-GitHub-Delivery"], "not of this app")
    assert world.fake.write_calls() == []


# --- uninstalling ----------------------------------------------------------------------------


@pytest.mark.parametrize("event", ["installation", "installation_repositories"])
def test_uninstall_forgets_pull_state(world: World, tmp_path: Path, event: str) -> None:
    world.pull(7, HEAD)
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        post_run(client, world, 1001)
        wait_until(lambda: len(world.bot_comments(7)) == 1)
        wait_idle(client.get)
    assert stored_pull(database, REPO_ID, 7) is not None
    with in_process_service(world, database) as client:
        body, headers = world.uninstall_delivery(event, [REPO_ID])
        post(client, body, headers)
        wait_idle(client.get)
        forgot = "forgot the pull requests of 1 repositories"
        assert_done(client.database, headers["X-GitHub-Delivery"], forgot)
    assert stored_pull(database, REPO_ID, 7) is None


def stored_pull(database: Path, repo_id: int, number: int) -> PullState | None:
    async def read() -> PullState | None:
        store = open_store(str(database))
        await store.setup()
        try:
            return await store.get_pull(repo_id, number)
        finally:
            await store.close()

    return asyncio.run(read())


def test_suspended_installation_gets_no_call_until_unsuspended(
    world: World, tmp_path: Path
) -> None:
    world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        post(client, *world.installation_delivery("suspend"))
        wait_idle(client.get)
        delivery = post_run(client, world, 1001)
        wait_idle(client.get)
        assert_done(client.database, delivery, "skipped: installation 1 is suspended")
        assert world.fake.requests == []  # not even a token was asked for
        post(client, *world.installation_delivery("unsuspend"))
        wait_idle(client.get)
        post_run(client, world, 1002)
        wait_until(lambda: len(world.bot_comments(7)) == 1, what="the comment after unsuspend")


# --- the PR command --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "/perfbot accept udp* -- larger buffers",
            PullCommand("accept", ("udp*",), "larger buffers"),
        ),
        ("/perfbot accept", PullCommand("accept")),
        ("/perfbot accept -- why not", PullCommand("accept", (), "why not")),
        ("/Perfbot ACCEPT udp* tcp_rx.*", PullCommand("accept", ("udp*", "tcp_rx.*"))),
        ("/perfbot unaccept udp* -- ignored", PullCommand("unaccept", ("udp*",))),
        ("/perfbot unaccept", PullCommand("unaccept")),
        ("/perfbot rerun udp*", PullCommand("rerun")),
        ("/perfbot acceptance", None),
        ("```\n/perfbot accept\n```", None),
        ("    /perfbot accept", None),
    ],
)
def test_the_pr_accept_grammar(body: str, expected: PullCommand | None) -> None:
    assert parse_pull_command(body) == expected


def test_a_reason_is_cut_to_a_line_and_globs_are_bounded() -> None:
    said = parse_pull_command(f"/perfbot accept {'a* ' * 30}-- {'x' * 400}")
    assert said is not None
    assert len(said.globs) == 20
    assert len(said.reason) == 300


def test_help_lists_accept_and_unaccept_with_their_permission() -> None:
    body = help_body("write", "maintain")
    assert "`/perfbot accept [metric-glob …] [-- reason]`" in body
    assert "`/perfbot unaccept [metric-glob …]`" in body
    assert "needs at least <code>maintain</code> permission" in body
