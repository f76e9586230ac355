"""Change points in words and as JSON: ``perfbot changes`` and ``perfbot history --changes``.

Names (platforms, metrics, units, settings) come from artifacts: on a terminal they are
``clean``ed like every other name perfbot prints (no control or invisible characters, one
line, bounded), so a metric called ``\\x1b[2J`` cannot clear the screen. The JSON keeps
them as they are (JSON escapes what it must); its consumer escapes for its own medium.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfbot.engine.judge.changes import ChangePoint, Level
from perfbot.engine.show.escape import clean
from perfbot.engine.show.numbers import MINUS, format_number
from perfbot.model import Scale

MAX_NAME = 60
SHORT_SHA = 12
CHANGE_UNITS = {Scale.RATIO: "%", Scale.POINTS: "pp", Scale.COUNT: "counts"}


def change_text(change: ChangePoint) -> str:
    """``−5.2 %``, ``+3.1 pp``, ``+12 counts``: as a comparison states a change."""
    sign = "+" if change.change > 0 else MINUS if change.change < 0 else ""
    return f"{sign}{format_number(abs(round(change.change, 2)))} {CHANGE_UNITS[change.scale]}"


def _level_text(level: Level, unit: str) -> str:
    shown = f"{format_number(level.value)}"
    if level.low != level.high:
        shown += f" [{format_number(level.low)}–{format_number(level.high)}]"
    return f"{shown} {clean(unit, 20)}".rstrip()


def changes_table(branches: Mapping[str, Sequence[ChangePoint]]) -> str:
    """One aligned row per change, branch by branch; "no change points" when none."""
    header = (
        "platform", "metric", "change", "before", "after", "first new", "last old",
        "confidence", "kind",
    )  # fmt: skip
    lines: list[str] = []
    for branch, changes in branches.items():
        lines.append(f"branch {clean(branch, MAX_NAME) or '(none)'}:")
        if not changes:
            lines.append("  no change points")
            continue
        rows = [header] + [_row(change) for change in changes]
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
            lines.append("  " + "  ".join(cells).rstrip())
    if not lines:
        lines.append("no series on the branch's trend (push or base rows) in the file")
    return "\n".join(lines) + "\n"


def _row(change: ChangePoint) -> tuple[str, ...]:
    kind = f"{change.direction.value}, {change.shape.value}"
    if change.returned_sha:
        kind += f", back at {change.returned_sha[:SHORT_SHA]}"
    metric = clean(change.metric, MAX_NAME)
    if change.settings:
        metric += " (" + clean(", ".join(f"{k}={v}" for k, v in change.settings), MAX_NAME) + ")"
    return (
        clean(change.platform, MAX_NAME),
        metric,
        change_text(change),
        _level_text(change.before, change.unit),
        _level_text(change.after, change.unit),
        change.sha[:SHORT_SHA],
        change.previous_sha[:SHORT_SHA],
        f"{change.confidence:.6f}".rstrip("0").rstrip("."),
        kind,
    )


def change_record(change: ChangePoint, branch: str) -> dict[str, Any]:
    """One change as ``perfbot changes --json`` writes it (numbers as numbers)."""
    return {
        "branch": branch,
        "platform": change.platform,
        "metric": change.metric,
        "settings": dict(change.settings),
        "unit": change.unit,
        "scale": change.scale.value,
        "better": change.better.value,
        "sha": change.sha,
        "previous_sha": change.previous_sha,
        "before": change.before.value,
        "after": change.after.value,
        "before_spread": [change.before.low, change.before.high],
        "after_spread": [change.after.low, change.after.high],
        "before_commits": change.before.commits,
        "after_commits": change.after.commits,
        "change_pct": round(change.change, 4),
        "change_unit": CHANGE_UNITS[change.scale],
        "direction": change.direction.value,
        "confidence": change.confidence,
        "shape": change.shape.value,
        "deterministic": change.deterministic,
        "returned_sha": change.returned_sha,
    }


def changes_document(branches: Mapping[str, Sequence[ChangePoint]]) -> dict[str, Any]:
    return {
        "changes": [
            change_record(change, branch)
            for branch, changes in branches.items()
            for change in changes
        ]
    }
