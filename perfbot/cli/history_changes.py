"""``perfbot history --changes``: the change points of the exported rows, to mark them.

The rows of each branch's own trend (side ``push`` or ``base``, never a fork PR's) are
judged as ``perfbot changes`` judges a history file (``perfbot.cli.changes``), in the
order they were recorded; every row of a commit where a change begins, in that series, is
marked with the change in words (``regression −5.2 %``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from perfbot.engine.judge.change_series import Observation
from perfbot.engine.judge.changes import ChangePoint
from perfbot.model import Settings

if TYPE_CHECKING:
    from perfbot.store.export import HistoryRow

TREND_SIDES = frozenset({"push", "base"})
# (branch, platform, metric, settings, sha) of the first commit at a new level.
MarkKey = tuple[str, str, str, Settings, str]


def change_marks(rows: Sequence[HistoryRow]) -> dict[MarkKey, ChangePoint]:
    from perfbot.cli.changes import change_points  # noqa: PLC0415

    branches: dict[str, list[Observation]] = {}
    for row in rows:
        if row.side in TREND_SIDES and not row.from_fork and row.samples:
            branches.setdefault(row.branch, []).append(
                Observation(
                    row.platform,
                    row.metric,
                    row.unit,
                    row.better,
                    row.scale,
                    row.settings,
                    row.sha,
                    row.samples,
                )
            )
    return {
        (branch, change.platform, change.metric, change.settings, change.sha): change
        for branch, observations in branches.items()
        for change in change_points(observations)
    }


def mark_of(row: HistoryRow, marks: dict[MarkKey, ChangePoint]) -> ChangePoint | None:
    if row.side not in TREND_SIDES or row.from_fork:
        return None
    return marks.get((row.branch, row.platform, row.metric, row.settings, row.sha))


def mark_text(change: ChangePoint | None) -> str:
    """``regression −5.2 %`` (or ``improvement, drift +3 pp``); "" for no change."""
    if change is None:
        return ""
    from perfbot.engine.show.change_table import change_text  # noqa: PLC0415

    kind = change.direction.value
    if change.shape.value != "step":
        kind += f", {change.shape.value}"
    return f"{kind} {change_text(change)}"


def records(marks: Iterable[tuple[MarkKey, ChangePoint]]) -> list[dict[str, object]]:
    from perfbot.engine.show.change_table import change_record  # noqa: PLC0415

    return [change_record(change, key[0]) for key, change in marks]
