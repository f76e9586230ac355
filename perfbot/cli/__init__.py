"""The ``perfbot`` command line: ``compare``, ``formats``, ``serve`` and ``comment``."""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from perfbot.cli.localfiles import is_within, read_tree
from perfbot.engine import formats
from perfbot.engine.compare import Policy, compare
from perfbot.engine.escape import clean
from perfbot.engine.export import comparison_document
from perfbot.engine.render import RenderContext, render
from perfbot.engine.sides import SideReport, read_side

EXIT_OK, EXIT_REGRESSED, EXIT_USAGE = 0, 1, 2
EXIT_FAILED = 1  # perfbot comment: GitHub refused or failed


class UsageError(Exception):
    """A command line that cannot be carried out; the message is shown as is."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.run(args, sys.stdout, sys.stderr)
    except UsageError as exc:
        print(f"perfbot: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perfbot", description="Performance comparisons for pull requests."
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    comp = commands.add_parser(
        "compare",
        help="compare the reports of a base and a head run",
        description=(
            "Compare BASE with HEAD (each a report file or a directory, read recursively), "
            "or, with a single DIR, DIR/base with DIR/head. Exit status: 0 fine, 1 a "
            "regression beyond tolerance, 2 a usage error or nothing could be parsed. "
            "Symbolic links that point out of BASE, HEAD or DIR are not followed."
        ),
    )
    comp.add_argument("paths", nargs="+", metavar="BASE HEAD | DIR")
    comp.add_argument(
        "--threshold",
        type=_percent,
        default=1.0,
        metavar="PCT",
        help="noise floor: smaller moves count as unchanged (default 1)",
    )
    comp.add_argument(
        "--tolerance",
        type=_percent,
        default=5.0,
        metavar="PCT",
        help="a regression beyond this fails the command (default 5)",
    )
    comp.add_argument("--markdown", type=Path, metavar="FILE", help="write the markdown here")
    comp.add_argument("--json", type=Path, metavar="FILE", help="write the JSON document here")
    comp.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even when something regressed beyond tolerance",
    )
    comp.add_argument(
        "--base-dir",
        type=Path,
        metavar="DIR",
        help="refuse to read or write any file (BASE, HEAD, DIR, --markdown, --json) that "
        "resolves outside DIR",
    )
    comp.set_defaults(run=_compare)

    fmts = commands.add_parser("formats", help="list the report formats perfbot reads")
    fmts.set_defaults(run=_formats)

    serve = commands.add_parser(
        "serve",
        help="run the GitHub App: webhook endpoint and workers",
        description="Run the webhook service. Settings come from PERFBOT_* environment "
        "variables (see the README, section Operator settings).",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    serve.set_defaults(run=_serve)

    setup = commands.add_parser(
        "setup",
        help="register the GitHub App in one click and write its credentials to .env",
        description="Serve a page on this machine that registers perfbot's GitHub App with "
        "GitHub's App-manifest flow (least permissions, the events perfbot acts on), then "
        "write the App's id, private key and webhook secret to --env-file (and a key file "
        "beside it), readable by you only. Exit status: 0 written, 1 stopped before, 2 a "
        "usage error.",
    )
    setup.add_argument(
        "--public-url",
        required=True,
        metavar="URL",
        help="where GitHub reaches perfbot serve (webhooks go to URL/webhook)",
    )
    setup.add_argument("--host", default="127.0.0.1", help="address of the setup page")
    setup.add_argument("--port", type=int, default=3000, help="port of the setup page (0: any)")
    setup.add_argument(
        "--github-url", default="https://github.com", help="GitHub's web URL (GHES: your host)"
    )
    setup.add_argument(
        "--api-url", help="REST API base (default: from --github-url; GHES: URL/api/v3)"
    )
    setup.add_argument("--org", help="register the App under this organisation, not your user")
    setup.add_argument("--name", default="perfbot", help="the App's name (editable on GitHub)")
    setup.add_argument(
        "--env-file",
        type=Path,
        default=Path(".env"),
        help="where to write the credentials (default .env; the key file goes beside it)",
    )
    setup.add_argument("--force", action="store_true", help="replace existing credential files")
    setup.set_defaults(run=_setup)

    comment = commands.add_parser(
        "comment",
        help="post or edit a PR's comment for one run (GitHub Actions, no App needed)",
        description="Read the report and PR-number artifacts of a finished measurement run "
        "and post or edit the PR's perfbot comment, exactly as the App does. The token "
        "comes from $GITHUB_TOKEN, the API from $GITHUB_API_URL, the repository from "
        "$GITHUB_REPOSITORY (all set by GitHub Actions). Exit status: 0 done or nothing "
        "to do, 1 GitHub refused or failed, 2 a usage error.",
    )
    comment.add_argument("--run-id", type=_run_id, required=True, help="the measurement run")
    comment.add_argument(
        "--repo",
        default=os.environ.get("GITHUB_REPOSITORY", ""),
        metavar="OWNER/NAME",
        help="the run's repository (default $GITHUB_REPOSITORY)",
    )
    comment.add_argument(
        "--bot-login",
        default="github-actions[bot]",
        help="the login the token comments as, to find the comment to edit",
    )
    comment.set_defaults(run=_comment)
    return parser


def _run_id(value: str) -> int:
    if not value.isdigit() or not 0 < int(value) < 2**63:
        raise argparse.ArgumentTypeError(f"{value!r} is not a workflow run id")
    return int(value)


def _percent(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not 0 <= number < 1000:
        raise argparse.ArgumentTypeError(f"{value} is not a percentage between 0 and 1000")
    return number


def _compare(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    base_path, head_path = _sides(args.paths)
    if args.base_dir is not None:
        _confine(args, base_path, head_path)
    base, head = _local_side(base_path), _local_side(head_path)
    for label, side in (("base", base), ("head", head)):
        for path, reason in side.unreadable:
            # One line each, whatever the name holds: in a CI log a line break in a file
            # name would start a line GitHub Actions reads as a workflow command.
            print(f"perfbot: {label}: {clean(path, 300)}: {clean(reason, 300)}", file=err)
    if base.files_read + head.files_read == 0:
        print("perfbot: no report file could be parsed on either side", file=err)
        return EXIT_USAGE
    comparison = compare(base, head, Policy(threshold=args.threshold, tolerance=args.tolerance))
    markdown = render(comparison, RenderContext())
    if args.json:
        document = json.dumps(comparison_document(comparison), indent=2) + "\n"
        _write_output(args.json, document, "--json")
    if args.markdown:
        _write_output(args.markdown, markdown, "--markdown")
    if not args.json and not args.markdown:
        out.write(markdown)
    if comparison.regressed_beyond_tolerance and not args.exit_zero:
        return EXIT_REGRESSED
    return EXIT_OK


def _sides(paths: list[str]) -> tuple[Path, Path]:
    if len(paths) == 1:
        root = Path(paths[0])
        base, head = root / "base", root / "head"
        if not base.is_dir() or not head.is_dir():
            raise UsageError(f"{root} must hold a base/ and a head/ directory")
        for side in (base, head):
            if not is_within(side, root):
                raise UsageError(f"{side} is a symbolic link out of {root}; it is not followed")
        return base, head
    if len(paths) == 2:
        base, head = Path(paths[0]), Path(paths[1])
        for path in (base, head):
            if not path.exists():
                raise UsageError(f"{path} does not exist")
        return base, head
    raise UsageError("give BASE and HEAD, or one DIR holding base/ and head/")


# O_NOFOLLOW: an output file may sit in an untrusted checkout, where `report.md` can be a
# committed link to ~/.bashrc or ~/.ssh/authorized_keys: perfbot must not write through it.
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)


def _write_output(path: Path, text: str, role: str) -> None:
    """Write ``text`` to ``path``, never through a symbolic link in its place."""
    try:
        descriptor = os.open(path, _WRITE_FLAGS, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(
                f"{role} {path} is a symbolic link; it is not written through"
            ) from None
        raise UsageError(f"{role} {path} cannot be written ({exc.strerror or exc})") from None
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


def _confine(args: argparse.Namespace, base: Path, head: Path) -> None:
    """Every path the command reads or writes resolves under --base-dir, else a usage error."""
    confined: Path = args.base_dir
    if not confined.is_dir():
        raise UsageError(f"--base-dir {confined} is not a directory")
    named = [("BASE", base), ("HEAD", head), ("--markdown", args.markdown), ("--json", args.json)]
    for role, path in named:
        if path is not None and not is_within(path, confined):
            raise UsageError(f"{role} {path} resolves outside --base-dir {confined}")


def _local_side(root: Path) -> SideReport:
    """One side read from disk; entries that were not followed are listed as unreadable."""
    tree = read_tree(root)
    side = read_side(tree.files)
    for path, reason in tree.refused:
        side.refuse(path, reason)
    return side


def _formats(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    width = max(len(fmt.name) for fmt in formats.REGISTRY)
    for fmt in formats.REGISTRY:
        out.write(f"{fmt.name:<{width}}  {fmt.reads}\n")
    return EXIT_OK


def _serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    # Imported here so that `perfbot compare` does not pay for the service stack.
    import asyncio

    try:
        import uvicorn

        from perfbot.app.processes import serve_processes, server_config
        from perfbot.app.server import create_app
        from perfbot.app.settings import Settings, SettingsError, load_env_file
        from perfbot.support import logs
    except ModuleNotFoundError as exc:
        # A partial install (pip --no-deps, a distribution's package): one sentence, no
        # traceback. The App's dependencies are perfbot's own, so a reinstall brings them.
        print(
            f"perfbot: `perfbot serve` needs the Python package {exc.name!r}, which is not "
            "installed: reinstall perfbot with `pip install perfbot` (add `[postgres]` for "
            "PostgreSQL).",
            file=err,
        )
        return EXIT_USAGE

    try:
        load_env_file(os.environ)  # .env (or $PERFBOT_ENV_FILE); set variables win
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"perfbot: {exc}", file=err)
        return EXIT_USAGE
    try:
        # Before any process starts: an unreachable database or a schema from a newer
        # perfbot is one sentence here, not a traceback from every process's start-up.
        asyncio.run(_prepare_store(settings.database_url))
    except (ValueError, RuntimeError) as exc:
        print(f"perfbot: the database is not usable: {exc}", file=err)
        return EXIT_USAGE
    logs.configure(args.log_level)
    if settings.processes == 1:
        uvicorn.Server(server_config(create_app(settings), args.host, args.port)).run()
    else:
        serve_processes(args.host, args.port, settings.processes, args.log_level)
    return EXIT_OK


async def _prepare_store(database_url: str) -> None:
    """Open the store once and create or migrate its schema."""
    from perfbot.store import open_store

    store = open_store(database_url)
    try:
        await store.setup()
    finally:
        await store.close()


def _setup(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from perfbot.errors import PerfbotError
    from perfbot.github.setup import SetupOptions, run_setup

    options = SetupOptions(
        public_url=args.public_url,
        github_url=args.github_url,
        api_url=args.api_url,
        org=args.org,
        env_file=args.env_file,
        name=args.name,
        force=args.force,
    )
    try:
        return run_setup(options, args.host, args.port, out)
    except PerfbotError as exc:
        print(f"perfbot setup: {exc}", file=err)
        return EXIT_USAGE


def _comment(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import asyncio
    import logging

    from perfbot.app.actions import DEFAULT_API_URL, CommentJob, comment_for_run
    from perfbot.errors import PerfbotError
    from perfbot.github.errors import GitHubError
    from perfbot.support.logs import QUIET_LOGGERS

    owner, _, name = str(args.repo).partition("/")
    if not owner or not name or "/" in name:
        raise UsageError("give --repo OWNER/NAME (or run inside GitHub Actions)")
    token = os.environ.get("GITHUB_TOKEN", "")
    if not token:
        raise UsageError("set GITHUB_TOKEN to a token that can read Actions and write comments")
    job = CommentJob(
        owner=owner,
        repo=name,
        run_id=args.run_id,
        token=token,
        api_url=os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL,
        bot_login=args.bot_login,
    )
    # Plain lines on stderr: this runs in a workflow log, read by a person.
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("perfbot: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    for quiet in QUIET_LOGGERS:
        logging.getLogger(quiet).setLevel(logging.WARNING)
    try:
        asyncio.run(comment_for_run(job))
    except GitHubError as exc:
        reason = str(exc)
        if exc.status in (401, 403):
            reason = (
                f"GitHub refused the token ({exc.status}): GITHUB_TOKEN must be a token that "
                "can read the run's artifacts (actions: read, contents: read) and write the "
                "comment (pull-requests: write)"
            )
        print(f"perfbot: run {job.run_id} of {args.repo}: {reason}", file=err)
        return EXIT_FAILED
    except (PerfbotError, ValueError, OSError) as exc:
        print(f"perfbot: run {job.run_id} of {args.repo}: {exc}", file=err)
        return EXIT_FAILED
    return EXIT_OK
