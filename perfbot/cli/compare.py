"""``perfbot compare``: read two runs (or one) from disk, compare, write what was asked.

The steps, in order: lay out what was given (BASE HEAD, DIR with base/ and head/,
``--baseline FILE HEAD``, or a single run); confine every path to ``--base-dir``; read
both sides without leaving their directories; keep the platforms asked for and line up
board-only folder names with twister platforms; compare; write the outputs. Each output
is one function of ``_write_outputs``, so another one is one more line there.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from perfbot.cli import workflow
from perfbot.cli.localfiles import is_within, read_tree
from perfbot.cli.usage import EXIT_OK, EXIT_REGRESSED, EXIT_USAGE, UsageError
from perfbot.engine.judge.compare import Comparison, Policy, compare
from perfbot.engine.judge.judgement import judge_report
from perfbot.engine.judge.notices import BaselineUnavailable, Notice, PlatformUnmatched
from perfbot.engine.read import platforms
from perfbot.engine.read.formats.perfbot_json import deterministic_series
from perfbot.engine.read.report import narrowed
from perfbot.engine.read.sides import ReportFile, SideReport, decode, read_side
from perfbot.engine.show import terminal, wording
from perfbot.engine.show.escape import clean
from perfbot.engine.show.export import baseline_document, comparison_document
from perfbot.engine.show.plot import plot_files
from perfbot.engine.show.render import RenderContext, render
from perfbot.engine.show.singlerun import run_markdown

TEXT, MARKDOWN, AUTO = "text", "markdown", "auto"
FORMATS = (AUTO, TEXT, MARKDOWN)


@dataclass(slots=True)
class Layout:
    """What the command line names: both sides, or a single run (``base`` is None)."""

    head: Path
    base: Path | None = None
    single: bool = False
    base_role: str = "BASE"  # how the command line named it, for messages


@dataclass(slots=True)
class Run:
    """Everything read and decided, handed to the outputs."""

    base: SideReport
    head: SideReport
    comparison: Comparison | None  # None for a single run
    notices: tuple[Notice, ...] = ()
    unavailable: BaselineUnavailable | None = None  # why there is no comparison


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    layout = lay_out(args.paths, args.baseline)
    if args.base_dir is not None:
        confine(args, layout)
    result = _read(args, layout, err)
    if isinstance(result, int):
        return result
    for notice in result.notices:
        print(f"perfbot: {clean(wording.plain(notice), 400)}", file=err)
    _write_outputs(args, result, out, err)
    if result.comparison is not None and result.comparison.regressed_beyond_tolerance:
        return EXIT_OK if args.exit_zero else EXIT_REGRESSED
    return EXIT_OK


# --- what was given -----------------------------------------------------------------------


def lay_out(paths: list[str], baseline: str | None) -> Layout:
    if baseline is not None:
        if len(paths) != 1:
            raise UsageError("with --baseline FILE, give one HEAD (a report file or directory)")
        return Layout(head=_existing(Path(paths[0])), base=Path(baseline), base_role="--baseline")
    if len(paths) == 2:
        return Layout(head=_existing(Path(paths[1])), base=Path(paths[0]))
    if len(paths) != 1:
        raise UsageError("give BASE and HEAD, or one DIR holding base/ and head/, or one run")
    root = _existing(Path(paths[0]))
    base, head = root / "base", root / "head"
    if not root.is_dir() or not (base.is_dir() or head.is_dir()):
        return Layout(head=root, single=True)
    if not base.is_dir() or not head.is_dir():
        present, absent = ("base", "head") if base.is_dir() else ("head", "base")
        raise UsageError(
            f"{root} has a {present}/ but no {absent}/ directory: give both, or BASE and HEAD"
        )
    for side in (base, head):
        if not is_within(side, root):
            raise UsageError(f"{side} is a symbolic link out of {root}; it is not followed")
    return Layout(head=head, base=base)


def _existing(path: Path) -> Path:
    if not path.exists():
        raise UsageError(f"{path} does not exist")
    return path


def confine(args: argparse.Namespace, layout: Layout) -> None:
    """Every path the command reads or writes resolves under --base-dir, else a usage error.

    Resolving follows every link and ``..``, so an absolute path, a ``../`` and a link out
    of DIR are all refused, named by the role and the path as given.
    """
    confined: Path = args.base_dir
    if not confined.is_dir():
        raise UsageError(f"--base-dir {confined} is not a directory")
    reads = [(layout.base_role, layout.base), ("HEAD", layout.head)]
    if layout.single:
        reads = [("RUN", layout.head)]
    for role, path in [*reads, *output_paths(args)]:
        if path is not None and not is_within(path, confined):
            raise UsageError(f"{role} {path} resolves outside --base-dir {confined}")


def output_paths(args: argparse.Namespace) -> list[tuple[str, Path | None]]:
    """The files the command may write, by option; an option added later joins here."""
    names = ("markdown", "json", "save", "plot")
    return [(f"--{name}", _as_path(getattr(args, name, None))) for name in names]


def _as_path(value: object) -> Path | None:
    return None if value is None else Path(str(value))


# --- reading ------------------------------------------------------------------------------


def _read(args: argparse.Namespace, layout: Layout, err: TextIO) -> Run | int:
    head = _local_side(layout.head)
    _name_unreadable("run" if layout.single else "head", head, err)
    base = SideReport()
    unavailable = None
    if layout.base is not None:
        base, unavailable = _baseline(layout.base, err)
    if head.files_read == 0 and base.files_read == 0:
        print("perfbot: no report file could be parsed on either side", file=err)
        return EXIT_USAGE
    if head.files_read == 0:
        print("perfbot: no report file of HEAD could be parsed", file=err)
        return EXIT_USAGE
    if unavailable is not None and not args.exit_zero:
        # Without --exit-zero a comparison against nothing is a broken setup, not a pass.
        reason = wording.unavailable(unavailable)
        print(f"perfbot: {clean(reason, 400)} (--exit-zero reports it instead)", file=err)
        return EXIT_USAGE
    wanted = list(args.platform or ())
    missing = platforms.unmatched(wanted, (base, head))
    if wanted and len(missing) == len(wanted):
        raise UsageError(
            f"--platform {', '.join(clean(m, 60) for m in missing)} matches no platform "
            f"measured (there: {_seen(base, head)})"
        )
    notices: tuple[Notice, ...] = tuple(PlatformUnmatched(name) for name in missing)
    if layout.single:
        run = platforms.select(head, wanted)
        return Run(platforms.select(base, wanted), run, None, notices)
    policy = Policy(threshold=args.threshold, tolerance=args.tolerance)
    judged = judge_report(narrowed(base, head, wanted), policy)
    notices = (*notices, *judged.notices)
    if unavailable is not None:
        notices = (*notices, unavailable)
    base, head = judged.sides
    return Run(base, head, judged.comparison, notices, unavailable)


def _baseline(path: Path, err: TextIO) -> tuple[SideReport, BaselineUnavailable | None]:
    """The base side, or an empty one and why it is not available."""
    if not path.exists():
        return SideReport(), BaselineUnavailable(str(path), exists=False)
    side = _local_side(path)
    _name_unreadable("base", side, err)
    if side.files_read == 0:
        return side, BaselineUnavailable(str(path), exists=True)
    return side, None


def _seen(*sides: SideReport) -> str:
    names = sorted(set().union(*(platforms.platforms_of(side) for side in sides)))
    shown = ", ".join(clean(name, 60) for name in names[:10])
    return shown + (", …" if len(names) > 10 else "") if names else "none"


def _name_unreadable(label: str, side: SideReport, err: TextIO) -> None:
    for path, reason in side.unreadable:
        # One line each, whatever the name holds: in a CI log a line break in a file
        # name would start a line GitHub Actions reads as a workflow command.
        print(f"perfbot: {label}: {clean(path, 300)}: {clean(reason, 300)}", file=err)


def _local_side(root: Path) -> SideReport:
    """One side read from disk; entries that were not followed are listed as unreadable."""
    tree = read_tree(root)
    side = read_side(tree.files)
    for path, reason in tree.refused:
        side.refuse(path, reason)
    _keep_baseline_priors(side, tree.files)
    return side


def _keep_baseline_priors(side: SideReport, files: list[ReportFile]) -> None:
    """A saved baseline's deterministic metrics stay deterministic once read back.

    The side takes a series' prior from the format of its file, and perfbot JSON is
    not a deterministic tool: without this, a zperf baseline would make a 1.5 % icount
    drop "uncertain" instead of a regression.
    """
    for file in files:
        if file.data.lstrip()[:1] != b"{" or b'"baseline"' not in file.data:
            continue
        try:
            marked = deterministic_series(decode(file.data))
        except ValueError:
            continue
        for key in marked:
            series = side.series.get(key)
            if series is not None:
                series.deterministic = True


# --- writing ------------------------------------------------------------------------------


def _write_outputs(args: argparse.Namespace, result: Run, out: TextIO, err: TextIO) -> None:
    markdown = _markdown(result)
    if args.save:
        saved_from = "run" if result.comparison is None else "head"
        document = baseline_document(result.head, saved_from)
        write_output(args.save, json.dumps(document, indent=2) + "\n", "--save")
    if args.json:
        if result.comparison is None:
            document = baseline_document(result.head, "run")
        else:
            document = comparison_document(result.comparison)
        write_output(args.json, json.dumps(document, indent=2) + "\n", "--json")
    if args.plot:
        # A single run is a comparison without a base: plain bars of its values.
        plotted = result.comparison or compare(SideReport(), result.head)
        for chart in plot_files(plotted, str(args.plot)):
            write_output(Path(chart.name), chart.svg, "--plot")
            # With several platforms the names are made from FILE: each one is said.
            print(f"perfbot: --plot: wrote {clean(chart.name, 300)}", file=err)
    if args.markdown:
        write_output(args.markdown, markdown, "--markdown")
    if args.job_summary:
        problem = workflow.append_job_summary(markdown)
        if problem is not None:
            print(f"perfbot: --job-summary: {problem}", file=err)
    # The files replace standard output for a script, not for a person at a terminal:
    # there, a regression's exit 1 with nothing printed would look like a crash.
    if _isatty(out) or not (args.json or args.markdown):
        out.write(_for_stdout(args, result, markdown, out))
    if args.annotate:
        for line in _annotations(result):
            print(line, file=out)


def _markdown(result: Run) -> str:
    if result.comparison is None:
        return run_markdown(result.head)
    return render(result.comparison, RenderContext(notices=result.notices))


def _for_stdout(args: argparse.Namespace, result: Run, markdown: str, out: TextIO) -> str:
    form = args.format
    if form == AUTO:
        form = TEXT if _isatty(out) else MARKDOWN
    if form == MARKDOWN:
        return markdown
    colour = terminal.wants_colour(out)
    if result.comparison is None:
        return terminal.run_table(result.head, colour=colour)
    return terminal.comparison_table(result.comparison, colour=colour)


def _isatty(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _annotations(result: Run) -> Iterable[str]:
    if result.unavailable is not None:
        yield workflow.unavailable(wording.unavailable(result.unavailable))
    if result.comparison is not None:
        yield from workflow.annotation_lines(result.comparison)


# O_NOFOLLOW: an output file may sit in an untrusted checkout, where `report.md` can be a
# committed link to ~/.bashrc or ~/.ssh/authorized_keys: perfbot must not write through it.
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)


def write_output(path: Path, content: str | bytes, role: str) -> None:
    """Write ``content`` to ``path``, never through a symbolic link in its place."""
    try:
        descriptor = os.open(path, _WRITE_FLAGS, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(
                f"{role} {path} is a symbolic link; it is not written through"
            ) from None
        raise UsageError(f"{role} {path} cannot be written ({exc.strerror or exc})") from None
    data = content.encode("utf-8") if isinstance(content, str) else content
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
