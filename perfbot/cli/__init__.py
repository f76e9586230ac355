"""The ``perfbot`` command line: ``compare``, ``formats``, ``serve``, ``replay``,
``comment``, ``history``, ``changes`` and ``try``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from perfbot.cli.usage import EXIT_FAILED, EXIT_OK, EXIT_REGRESSED, EXIT_USAGE, UsageError
from perfbot.engine.read import formats

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_REGRESSED", "EXIT_USAGE", "UsageError", "main"]


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
        help="compare the reports of a base and a head run, or show one run",
        description=(
            "Compare BASE with HEAD (each a report file, a saved baseline or a directory, "
            "read recursively), or, with a single DIR, DIR/base with DIR/head. A single "
            "RUN with neither base/ nor head/ shows its values. Exit status: 0 fine, 1 a "
            "regression beyond tolerance, 2 a usage error or nothing could be parsed. "
            "Symbolic links that point out of BASE, HEAD or DIR are not followed."
        ),
    )
    _compare_arguments(comp)
    comp.set_defaults(run=_compare)

    fmts = commands.add_parser("formats", help="list the report formats perfbot reads")
    fmts.set_defaults(run=_formats)

    serve = commands.add_parser(
        "serve",
        help="run the GitHub App: webhook endpoint and workers",
        description="Run the webhook service. Settings come from PERFBOT_* environment "
        "variables (see docs/operators/settings.md).",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    serve.add_argument(
        "--dry-run",
        action="store_true",
        help="read GitHub as usual but write nothing to it: log each write perfbot would "
        "make and list them at /dry-run (as PERFBOT_DRY_RUN=1)",
    )
    serve.set_defaults(run=_serve)

    from perfbot.cli import replay as replay_command

    replay = commands.add_parser(
        "replay",
        help="run one webhook delivery through the App in a dry run and say what it decides",
        description="Run one delivery (an id of the App's delivery log, or a payload file) "
        "through perfbot's pipeline as `perfbot serve --dry-run` would, and print each "
        "decision: the route, the gates, what is read from GitHub and what would be "
        "written. Nothing is written to GitHub. Settings as perfbot serve reads them. "
        "Exit status: 0 it ran (whatever it decided), 2 bad input.",
    )
    replay_command.add_arguments(replay)
    replay.set_defaults(run=replay_command.run)

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

    from perfbot.cli import history as history_command

    history = commands.add_parser(
        "history",
        help="export a repository's stored measurements as CSV, JSON or an SVG chart",
        description="Export the measurement store's rows of one repository (the database "
        "perfbot serve uses), newest --limit rows, oldest first. Exit status: 0 written "
        "(maybe empty: said on stderr), 2 a usage error, an unknown repository or an "
        "unusable database.",
    )
    history_command.add_arguments(history)
    history.set_defaults(run=history_command.run)

    changes = commands.add_parser(
        "changes",
        help="find the change points of the default branch in a perfbot history file",
        description="Find where each series of a `perfbot history` file (CSV or JSON) "
        "changed level: the first commit at the new level, the levels before and after, "
        "the change and a confidence (see docs/change-points.md). Exit status: 0 written "
        "(maybe no change point), 2 a usage error or a file that is not a history file.",
    )
    changes.add_argument("file", type=Path, metavar="FILE", help="a perfbot history CSV or JSON")
    changes.add_argument("--branch", metavar="NAME", help="only this branch (default: each)")
    changes.add_argument(
        "--json",
        type=Path,
        metavar="OUT",
        help="write the change points as JSON here (never through a symbolic link)",
    )
    changes.set_defaults(run=_changes)

    from perfbot.cli import trying

    tryout = commands.add_parser(
        "try",
        help="watch the App work on this machine: a measured PR against a stand-in GitHub",
        description="Start perfbot serve on SQLite against a stand-in GitHub on 127.0.0.1 "
        "(no account, no network), deliver a measured pull request step by step (the "
        "report, a second push, /perfbot rerun by a reviewer and by a stranger, a push on "
        "main), print one line per step, and serve the PR's conversation as GitHub would "
        "show it. Exit status: 0 played, 1 a step went wrong, 2 a usage error or something "
        "missing (see docs/try.md).",
    )
    trying.add_arguments(tryout)
    tryout.set_defaults(run=trying.run)
    return parser


def _compare_arguments(comp: argparse.ArgumentParser) -> None:
    """The options of `perfbot compare`, grouped by what they are for (see docs/cli/compare.md)."""
    comp.add_argument("paths", nargs="+", metavar="BASE HEAD | DIR | RUN")
    judging = comp.add_argument_group("judging")
    judging.add_argument(
        "--threshold",
        type=_percent,
        default=1.0,
        metavar="PCT",
        help="noise floor: smaller moves count as unchanged (default 1)",
    )
    judging.add_argument(
        "--tolerance",
        type=_percent,
        default=5.0,
        metavar="PCT",
        help="a regression beyond this fails the command (default 5)",
    )
    judging.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even when something regressed beyond tolerance, or when the "
        "baseline is missing or unreadable (then reported as not available)",
    )
    inputs = comp.add_argument_group("inputs")
    inputs.add_argument(
        "--baseline",
        metavar="FILE",
        help="compare HEAD against this saved baseline (or any report): the same as "
        "giving it as BASE",
    )
    inputs.add_argument(
        "--platform",
        action="append",
        metavar="NAME",
        help="only this platform, by its full board/soc name or its board alone "
        "(qemu_x86 matches qemu_x86/atom, never qemu_x86_64); repeatable",
    )
    inputs.add_argument(
        "--base-dir",
        type=Path,
        metavar="DIR",
        help="refuse to read or write any file (BASE, HEAD, DIR, RUN, --baseline, "
        "--markdown, --json, --save, --plot) that resolves outside DIR",
    )
    outputs = comp.add_argument_group("outputs")
    outputs.add_argument(
        "--format",
        choices=("auto", "text", "markdown"),
        default="auto",
        help="what standard output gets: an aligned table (text) or the comment's "
        "markdown; auto: text on a terminal, else markdown",
    )
    outputs.add_argument(
        "--markdown",
        type=Path,
        metavar="FILE",
        help="write the markdown here (standard output then gets nothing, unless it is a terminal)",
    )
    outputs.add_argument(
        "--json",
        type=Path,
        metavar="FILE",
        help="write the JSON document here (standard output then gets nothing, unless it "
        "is a terminal)",
    )
    outputs.add_argument(
        "--save",
        type=Path,
        metavar="FILE",
        help="write the head's measurements (or the single run's), every sample kept, "
        "as a baseline file to give later as BASE or --baseline",
    )
    outputs.add_argument(
        "--plot",
        type=Path,
        metavar="FILE.svg",
        help="draw base against PR (or a single run's values) as an SVG bar chart; with "
        "several platforms, one file each, named FILE-<platform>.svg; each file written is "
        "named on standard error",
    )
    outputs.add_argument(
        "--job-summary",
        action="store_true",
        help="append the markdown to $GITHUB_STEP_SUMMARY (GitHub Actions)",
    )
    outputs.add_argument(
        "--annotate",
        action="store_true",
        help="print GitHub Actions annotations: a notice per platform that moved, a "
        "warning per regression beyond tolerance",
    )


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
    # Imported here, like the other commands: `perfbot formats` needs none of it.
    from perfbot.cli import compare

    return compare.run(args, out, err)


def _changes(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from perfbot.cli import changes

    return changes.run(args, out, err)


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

    if args.dry_run:
        # In the environment: the processes `perfbot serve` starts read it there too.
        os.environ["PERFBOT_DRY_RUN"] = "1"
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
    from perfbot.app.settings import SettingsError, github_api_version
    from perfbot.cli.workflow import STEP_SUMMARY, append_job_summary
    from perfbot.errors import PerfbotError
    from perfbot.github.errors import GitHubError
    from perfbot.support.logs import QUIET_LOGGERS

    owner, _, name = str(args.repo).partition("/")
    if not owner or not name or "/" in name:
        raise UsageError("give --repo OWNER/NAME (or run inside GitHub Actions)")
    token = os.environ.get("GITHUB_TOKEN", "")
    if not token:
        raise UsageError("set GITHUB_TOKEN to a token that can read Actions and write comments")
    try:
        api_version = github_api_version(os.environ)
    except SettingsError as exc:
        raise UsageError(str(exc)) from None
    job = CommentJob(
        owner=owner,
        repo=name,
        run_id=args.run_id,
        token=token,
        api_url=os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL,
        bot_login=args.bot_login,
        api_version=api_version,
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
        report = asyncio.run(comment_for_run(job))
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
    if report is not None and os.environ.get(STEP_SUMMARY):
        # The same report on the run's page, for readers of the workflow run.
        problem = append_job_summary(report)
        if problem is not None:
            print(f"perfbot: {problem}", file=err)
    return EXIT_OK
