"""One owner for the comment: every body is composed in perfbot/engine/show/render.py, and each
path's footer names only what that path offers (``/perfbot rerun`` needs the App). The
watch's issues, which are no PR comment, have their own composer: show/watch.py. The body is
the same whether its report is read back from the PR's state or handed over as it was just
laid out (``comment.body``'s ``prepared``)."""

from __future__ import annotations

import ast
from pathlib import Path

from perfbot.app.actions import CommentJob, comment_for_run
from perfbot.app.comment import body as comment_body
from perfbot.cli import main
from perfbot.engine.show.render import MARKER, Prepared
from perfbot.sandbox.fakegithub import ACTIONS_APP_ID, ACTIONS_BOT_LOGIN
from perfbot.store.base import PullState
from tests.harness import World, in_process_service, wait_until
from tests.paths import REPO

COMPOSER = REPO / "perfbot" / "engine" / "show" / "render.py"
# The issue's composer writes a footer of its own, and nothing else of the comment's layout.
ISSUE_COMPOSER = REPO / "perfbot" / "engine" / "show" / "watch.py"
ISSUE_PIECES = frozenset({"<sub>"})
# Pieces of the body's layout: whoever writes one of them builds comment markdown.
LAYOUT_PIECES = (
    MARKER,
    "### Performance report",
    "<sub>",
    "Re-measure with",
    "These numbers are for the previous commit",
    "Re-run requested by",
    "> ",
)


def string_constants(path: Path) -> list[str]:
    """Every string literal of a module, f-string parts included (docstrings excluded)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_only_the_composer_writes_the_bodys_layout() -> None:
    writers = {
        path.relative_to(REPO).as_posix(): piece
        for path in sorted((REPO / "perfbot").rglob("*.py"))
        if path != COMPOSER
        for constant in string_constants(path)
        for piece in LAYOUT_PIECES
        if constant.startswith(piece) or (piece != "> " and piece in constant)
        if not (path == ISSUE_COMPOSER and piece in ISSUE_PIECES)
    }
    assert writers == {}
    # The check sees the composer's own pieces: it would see them anywhere else too.
    own = string_constants(COMPOSER)
    assert all(any(piece in c for c in own) for piece in LAYOUT_PIECES)


def test_no_handler_imports_another() -> None:
    handlers = REPO / "perfbot" / "app" / "handlers"
    for path in handlers.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                target = node.module.removeprefix("perfbot.app.handlers.")
                assert target == node.module, f"{path.name} imports {node.module}"


def test_the_cli_markdown_offers_no_rerun(tmp_path: Path) -> None:
    markdown = tmp_path / "comment.md"
    assert main(["compare", str(REPO / "examples" / "demo"), "--markdown", str(markdown)]) == 1
    body = markdown.read_text(encoding="utf-8")
    assert body.startswith(MARKER)
    assert "/perfbot rerun" not in body
    assert body.splitlines()[-1] == "<sub>Noise floor ±1 %, tolerance 5 %.</sub>"


async def test_the_actions_only_comment_offers_no_rerun() -> None:
    world = World.create()
    pull = world.pull(7, "a" * 40)
    run = world.measured_run(pull, 3001)
    job = CommentJob(
        owner="acme",
        repo="widget",
        run_id=run.id,
        token=world.fake.issue_actions_token(world.repo),
        api_url=world.fake.api_url,
    )
    await comment_for_run(job, transport=world.fake.transport())
    (body,) = [
        c.body
        for c in world.fake.comments_on(world.repo, 7)
        if c.user == ACTIONS_BOT_LOGIN and c.app_id == ACTIONS_APP_ID
    ]
    assert "/perfbot rerun" not in body
    assert "`.github/perfbot.yml`" in body.splitlines()[-1]


def test_the_apps_comment_offers_the_rerun(tmp_path: Path) -> None:
    world = World.create()
    pull = world.pull(7, "a" * 40)
    with in_process_service(world, tmp_path / "db") as client:
        body, headers = world.delivery(world.measured_run(pull, 1001))
        assert client.post("/webhook", content=body, headers=headers).status_code == 202
        wait_until(lambda: len(world.bot_comments(7)) == 1, what="the comment")
    (comment,) = world.bot_comments(7)
    assert "Re-measure with `/perfbot rerun` (write access)" in comment.splitlines()[-1]


PREPARED = Prepared("🔴 1 regression", ("a notice",), "| metric | change |", "footer")


def test_a_report_handed_over_gives_the_body_read_back_from_the_state() -> None:
    state = PullState(
        1, 7, report_body=PREPARED.dump(), reported_head_sha="a" * 40, newest_head_sha="b" * 40
    )
    assert comment_body(state, PREPARED) == comment_body(state)
    assert "🔴 1 regression" in comment_body(state)


def test_the_report_handed_over_is_the_one_shown() -> None:
    other = Prepared("🟢 no change", (), "| metric |", "footer")
    state = PullState(1, 7, report_body=PREPARED.dump())
    assert "🟢 no change" in comment_body(state, other)
    assert "🔴" not in comment_body(state, other)
