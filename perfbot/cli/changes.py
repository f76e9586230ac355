"""``perfbot changes FILE``: the change points of the series in a ``perfbot history`` file.

The file's rows are oldest first by the time they were recorded, several series
interleaved. A history file does not hold the branch's first-parent order, so a commit
takes its place in its series at the first time it was recorded (a push run records its
commit within minutes of the push; a re-run or a PR's base measurement later only adds
samples to it). Commits pushed together and measured out of order are therefore placed
in the order they were measured: the App, which knows the branch, passes the true order.

The store does not keep whether a metric came from a deterministic tool (zperf, twister
under icount): such a series is recognised from its exactly repeated values
(``changes.looks_deterministic``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TextIO

from perfbot.cli.history_file import HistoryFile, read_history_file
from perfbot.cli.usage import EXIT_OK
from perfbot.engine.judge.change_series import Observation, series_of
from perfbot.engine.judge.changes import ChangePoint, detect
from perfbot.engine.show.change_table import changes_document, changes_table


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    history = read_history_file(args.file)
    _notices(history, err)
    branches = {
        branch: change_points(rows)
        for branch, rows in sorted(history.branches.items())
        if args.branch is None or branch == args.branch
    }
    out.write(changes_table(branches))
    if args.json is not None:
        from perfbot.cli.compare import write_output  # noqa: PLC0415  (its O_NOFOLLOW write)

        document = changes_document(branches)
        write_output(args.json, json.dumps(document, indent=1, allow_nan=False) + "\n", "--json")
    return EXIT_OK


def change_points(rows: Sequence[Observation]) -> list[ChangePoint]:
    """Every series' change points, series in the order they first appear."""
    return [change for series in series_of(rows) for change in detect(series)]


def _notices(history: HistoryFile, err: TextIO) -> None:
    if history.missing_columns:
        print(
            f"perfbot: the file has no {', '.join(history.missing_columns)} column (written "
            "by an older perfbot): metrics are taken as ratios where higher is better, "
            "with no settings",
            file=err,
        )
    if history.left_out:
        print(
            f"perfbot: {history.left_out} of {history.rows} rows are not the branch's own "
            "trend (PR heads, fork PRs, or nothing finite measured) and were left out",
            file=err,
        )
