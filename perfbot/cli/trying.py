"""`perfbot try`: the App's whole pipeline on this machine, with no GitHub account.

It serves the stand-in GitHub (``perfbot.sandbox``) on 127.0.0.1, starts `perfbot serve`
against it on a SQLite file, plays the scene (``perfbot.cli.try_scene``) one line per
step, and serves the pull request's conversation as GitHub would show it, updated as the
scene goes. It ends by saying where the page and the database are, then keeps the page
up until Ctrl-C (or stops at once with ``--exit``).
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
import webbrowser
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from perfbot.cli.usage import EXIT_FAILED, EXIT_OK, UsageError
from perfbot.errors import PerfbotError

if TYPE_CHECKING:
    from perfbot.sandbox.markdown import Assets
    from perfbot.sandbox.page import Conversation

DEMO_REPORT = Path(__file__).resolve().parents[2] / "examples" / "demo"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--report",
        type=Path,
        metavar="DIR",
        help="play the scene with DIR/base and DIR/head (default: the demo's, examples/demo)",
    )
    parser.add_argument(
        "--dir",
        type=Path,
        metavar="DIR",
        help="keep the SQLite database here (default: a new temporary folder)",
    )
    parser.add_argument(
        "--port", type=int, default=0, help="port of the conversation page (default: any free)"
    )
    parser.add_argument("--open", action="store_true", help="open the page in a web browser")
    parser.add_argument(
        "--exit", action="store_true", help="stop once the scene is played (no page kept up)"
    )


def report_dir(given: Path | None) -> Path:
    """The folder the scene measures: it must hold ``base/`` and ``head/``, each with at
    least one report file perfbot can read (read as `perfbot compare` reads it)."""
    from perfbot.cli.localfiles import read_tree
    from perfbot.engine.read.sides import read_side

    folder = given or DEMO_REPORT
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder: --report needs a DIR with base/ and head/")
    for side in ("base", "head"):
        if not (folder / side).is_dir():
            raise UsageError(f"{folder} has no {side}/ folder: --report needs base/ and head/")
    for side in ("base", "head"):
        if read_side(read_tree(folder / side).files).files_read == 0:
            raise UsageError(
                f"{folder / side} holds no report file perfbot can read: "
                f"`perfbot compare {folder}` says why"
            )
    return folder


def run(
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
    played: Callable[[Conversation], None] | None = None,
) -> int:
    """`perfbot try`; ``played`` is told of the conversation once the scene is played."""
    if not 0 <= args.port < 65536:
        raise UsageError(f"--port {args.port} is not a port number (0 to 65535)")
    report = report_dir(args.report)
    # Imported here: `perfbot compare` must not pay for the service stack.
    from perfbot.sandbox.fixtures import templates
    from perfbot.sandbox.markdown import check_markdown, render_assets

    try:
        check_markdown()
        assets = render_assets()
        templates()
    except PerfbotError as exc:
        raise UsageError(str(exc)) from None
    # A folder of its own, kept: the database can be read afterwards (perfbot history).
    folder = args.dir or Path(tempfile.mkdtemp(prefix="perfbot-try-"))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--dir {folder} cannot be made: {exc.strerror}") from None
    try:
        with ExitStack() as stack:
            return _play(
                args,
                report=report,
                folder=folder,
                assets=assets,
                stack=stack,
                out=out,
                err=err,
                played=played,
            )
    except KeyboardInterrupt:
        # Ctrl-C while the servers start or the scene plays: they are stopped (the stack
        # has unwound), and the folder is kept, as it would have been.
        database = folder / "perfbot.db"
        print(
            f"perfbot try: stopped before the scene ended; the database is {database} (kept)",
            file=err,
        )
        return EXIT_FAILED


def _play(
    args: argparse.Namespace,
    *,
    report: Path,
    folder: Path,
    assets: Assets,
    stack: ExitStack,
    out: TextIO,
    err: TextIO,
    played: Callable[[Conversation], None] | None,
) -> int:
    # Here, not at the top: every command builds the parser, which imports this module,
    # and asyncio (with ssl and sockets) costs `perfbot compare` tens of milliseconds.
    import asyncio

    from perfbot.cli.try_scene import Scene, SceneError, set_stage
    from perfbot.cli.try_service import perfbot_serve, serving, settings_for
    from perfbot.sandbox.fakegithub import FakeGitHub, serve
    from perfbot.sandbox.page import Conversation, conversation_app
    from perfbot.store import open_store

    started = time.monotonic()
    database = folder / "perfbot.db"
    fake = stack.enter_context(serve(FakeGitHub(app_id=4242, app_slug="perfbot")))
    repo, pull = set_stage(fake)
    conversation = Conversation(fake, repo.full_name, pull.number)
    try:
        page = stack.enter_context(serving(conversation_app(conversation, assets), args.port))
    except OSError as exc:
        raise UsageError(f"the page cannot listen: {exc}") from None
    perfbot = stack.enter_context(perfbot_serve(settings_for(fake.api_url, database)))
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            out.write(f"{line}\n")
            out.flush()

    say(f"perfbot try: GitHub's stand-in on {fake.api_url}, perfbot serve on {perfbot}")
    say(f"perfbot try: {repo.full_name}#{pull.number} is drawn at {page}/ as the scene plays")
    if args.open:
        webbrowser.open(f"{page}/")

    async def play() -> None:
        store = open_store(str(database))
        await store.setup()
        try:
            await Scene(fake, repo, pull, report, perfbot, store, conversation, say).play()
        finally:
            await store.close()

    try:
        asyncio.run(play())
    except SceneError as exc:
        print(f"perfbot try: {exc}", file=err)
        return EXIT_FAILED
    conversation.finished = True
    if played is not None:
        played(conversation)
    say(f"perfbot try: the scene took {time.monotonic() - started:.1f} s")
    say(f"perfbot try: the conversation page is {page}/")
    say(f"perfbot try: the database is {database} (kept)")
    if not args.exit:
        say("perfbot try: the page stays up until Ctrl-C")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            say("perfbot try: stopped")
    return EXIT_OK
