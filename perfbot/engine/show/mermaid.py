"""Mermaid ``xychart-beta`` charts of a metric, for a collapsed section of the comment.

GitHub draws a fenced ``mermaid`` block as a chart, client-side. A chart here shows one
metric: the target branch's recent values, oldest first, and this PR's pushes after them
on the same line (x labels: short SHAs, the pushes marked ``PR``). With no branch history
yet it shows bars: the base, then the PR's pushes (or the PR's head).

Why one line and not two series: an xychart series has a value at every x category (no
gaps, no ``null``) and the chart draws no legend, so a second series for the pushes would
need made-up values under the branch's commits. One line continued, with the pushes named
``PR …`` on the axis, reads the same and invents nothing. Several ``bar`` series are not
grouped side by side either (they are drawn over each other), so base against PR is one
bar series over two or more categories.

What mermaid's grammar allows (``xychart.jison``): a quoted string ends at the next ``"``
with no escape; ``%%`` starts a comment anywhere and ``%%{...}%%`` is a directive; ``;``
ends a statement; `` "` `` opens a markdown string; ``[`` ``]`` ``,`` delimit the axis
categories and the data; ``-->`` is the range arrow; numbers are ``[+-]digits[.digits]``
with no exponent, so no NaN, no infinity, no ``1e+20``. Labels are therefore cleaned by
``escape.clean`` (no control, bidirectional or invisible characters, one line, cut with
an ellipsis) and then every character that is syntax to mermaid or to markdown or HTML is
mapped to a look-alike that is not (``"`` and backticks to ``'``, ``<`` ``>`` to ``‹``
``›``, brackets and braces to parentheses, ``;`` to ``,``, ``:`` to ``·``, ``&`` to
``+``), and runs of ``%`` become one. No label can then end its string, open a comment
or directive, or hold a backtick, so none can close the markdown fence or the
``<details>`` around it; a fenced block is code to GitHub, so no mention, reference or
link is made from it.

Sizes are bounded: at most ``MAX_BRANCH_POINTS`` commits of the branch and
``MAX_PUSHES`` pushes per chart, labels cut to ``MAX_TITLE`` and ``MAX_CATEGORY``
characters; ``charts_section`` keeps the charts that fit a byte budget and counts the
others, since charts are the first thing the comment's size budget drops.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from perfbot.engine.judge.compare import Stats
from perfbot.engine.show.escape import clean
from perfbot.engine.show.plot import HistoryPoint

__all__ = [
    "MAX_BRANCH_POINTS",
    "MAX_CATEGORY",
    "MAX_PUSHES",
    "MAX_TITLE",
    "MAX_UNIT",
    "Charts",
    "MetricSeries",
    "block",
    "change_block",
    "charts_section",
    "label",
]

MAX_BRANCH_POINTS = 8
MAX_PUSHES = 4
# A change point's chart: the commits around it on the branch (before and after).
MAX_CHANGE_POINTS = 40
MAX_TITLE = 80  # the chart's title: metric, unit, platform
MAX_AXIS_TITLE = 60
# The y axis title (the unit) is drawn upright along the plot: longer, it runs past it.
MAX_UNIT = 24
MAX_CATEGORY = 16  # one x label: a short SHA, "PR 1a2b3c4", "base 9f8e7d6"
# Beyond this magnitude a value would print as a long run of digits (mermaid reads no
# exponent); no network measurement comes near it, so such a chart is left out.
MAX_MAGNITUDE = 1e15
SIGNIFICANT_DIGITS = 4
FENCE = "```"
# perfbot's own settings, as frontmatter (the first lines of every block; nothing from a
# report is in them): wider than mermaid's 700 px and smaller x labels, so that twelve
# "PR 1a2b3c4" labels sit side by side without overlapping, and a line and bars in a
# strong blue rather than the default theme's pale lavender, readable on GitHub's light
# and dark backgrounds alike.
FRONTMATTER = (
    "---",
    "config:",
    "  xyChart:",
    "    width: 900",
    "    height: 420",
    "    xAxis:",
    "      labelFontSize: 11",
    "  themeVariables:",
    "    xyChart:",
    '      plotColorPalette: "#3b6ea5"',
    "---",
)

# A change point's chart draws two lines: the commits' values in the same blue, the levels
# before and after the change in red.
CHANGE_FRONTMATTER = tuple(
    '      plotColorPalette: "#3b6ea5, #cf222e"' if "plotColorPalette" in line else line
    for line in FRONTMATTER
)

_LOOKALIKES = str.maketrans(
    {
        '"': "'",
        "`": "'",
        "<": "\u2039",
        ">": "\u203a",
        "[": "(",
        "]": ")",
        "{": "(",
        "}": ")",
        ";": ",",
        ":": "\u00b7",
        "&": "+",
        "\\": "/",
        "~": "-",  # ~~~ would be a fence of its own, were a label ever at a line's start
    }
)
_PERCENT_RUN = re.compile(r"%{2,}")


@dataclass(frozen=True, slots=True)
class MetricSeries:
    """What one chart shows. ``history`` is the target branch's commits, oldest first
    (``highlight`` False), then this PR's pushes, oldest first (``highlight`` True), as
    ``plot.history_svg`` takes them. ``base``/``head`` are this comparison's sides, drawn
    as bars when the branch has no history yet. Every string may come from a report."""

    metric: str
    unit: str = ""
    platform: str = ""
    branch: str = ""  # the target branch, e.g. main
    history: tuple[HistoryPoint, ...] = ()
    base: Stats | None = None
    head: Stats | None = None
    base_label: str = "base"
    head_label: str = "PR"


@dataclass(frozen=True, slots=True)
class Charts:
    """The charts section (markdown, possibly empty) and how many charts it left out."""

    text: str
    shown: int
    dropped: int


def label(value: str, max_length: int) -> str:
    """``value`` as text that is inert in a mermaid string and in markdown (see above)."""
    flat = clean(value, max_length).translate(_LOOKALIKES)
    return _PERCENT_RUN.sub("%", flat).strip() or "(empty)"


def block(series: MetricSeries) -> str | None:
    """The fenced ``mermaid`` block for ``series``, or None when there is nothing to draw."""
    branch = [p for p in series.history if not p.highlight and _drawable(p.stats)]
    pushes = [p for p in series.history if p.highlight and _drawable(p.stats)]
    branch, pushes = branch[-MAX_BRANCH_POINTS:], pushes[-MAX_PUSHES:]
    if branch:
        categories = [p.label for p in branch] + [f"PR {p.label}" for p in pushes]
        values = [p.stats.value for p in (*branch, *pushes)]
        where = label(series.branch, 30) if series.branch else "target branch"
        x_title = f"{where} commits" + (", then this PR's pushes" if pushes else "")
        kind = "line"
    else:
        bars = [(series.base_label, series.base)] if _drawable(series.base) else []
        if pushes:
            bars += [(f"PR {p.label}", p.stats) for p in pushes]
        elif _drawable(series.head):
            bars.append((series.head_label, series.head))
        if len(bars) < 2:  # one bar compares nothing
            return None
        categories = [name for name, _ in bars]
        values = [stats.value for _, stats in bars if stats is not None]
        x_title = "base, then this PR"
        kind = "bar"
    low, high = _range(values, kind)
    lines = [
        f"{FENCE}mermaid",
        *FRONTMATTER,
        "xychart-beta",
        f'    title "{_title(series)}"',
        f'    x-axis "{label(x_title, MAX_AXIS_TITLE)}" [{_categories(categories)}]',
        f'    y-axis "{label(series.unit, MAX_UNIT) if series.unit else "value"}"'
        f" {_number(low)} --> {_number(high)}",
        f"    {kind} [{', '.join(_number(v) for v in values)}]",
        FENCE,
    ]
    return "\n".join(lines)


def change_block(
    points: Sequence[tuple[str, float, float]],
    *,
    metric: str,
    unit: str,
    platform: str,
    branch: str,
) -> str | None:
    """The fenced ``mermaid`` block of a change point: each commit's value on the branch
    (``(short sha, value, level)``, oldest first), and the levels before and after the
    change as a second line, so that the step shows where the detector put it. None when
    there is nothing to draw (fewer than two commits, or an absurd value)."""
    shown = [p for p in points if all(math.isfinite(v) and abs(v) < MAX_MAGNITUDE for v in p[1:])]
    shown = shown[-MAX_CHANGE_POINTS:]
    if len(shown) < 2:
        return None
    values = [value for _, value, _ in shown]
    levels = [level for _, _, level in shown]
    low, high = _range([*values, *levels], "line")
    title = MetricSeries(metric, unit, platform)
    where = label(branch, 30) if branch else "branch"
    lines = [
        f"{FENCE}mermaid",
        *CHANGE_FRONTMATTER,
        "xychart-beta",
        f'    title "{_title(title)}"',
        f'    x-axis "{label(f"{where} commits, oldest first", MAX_AXIS_TITLE)}"'
        f" [{_categories([sha for sha, _, _ in shown])}]",
        f'    y-axis "{label(unit, MAX_UNIT) if unit else "value"}"'
        f" {_number(low)} --> {_number(high)}",
        f"    line [{', '.join(_number(v) for v in values)}]",
        f"    line [{', '.join(_number(v) for v in levels)}]",
        FENCE,
    ]
    return "\n".join(lines)


def charts_section(series: Sequence[MetricSeries], budget: int) -> Charts:
    """A collapsed section with the charts of ``series`` (most important first) that fit
    in ``budget`` bytes (UTF-8, the section's own lines included); the rest are dropped
    from the end and counted, and the section says how many."""
    blocks = [b for b in map(block, series) if b is not None]
    for shown in range(len(blocks), 0, -1):
        section = _section(blocks[:shown], len(blocks) - shown)
        if len(section.encode("utf-8")) <= budget:
            return Charts(section, shown, len(blocks) - shown)
    return Charts("", 0, len(blocks))


def _section(blocks: Sequence[str], dropped: int) -> str:
    noun = "chart" if len(blocks) == 1 else "charts"
    lines = [f"<details><summary>{len(blocks)} {noun} of the metrics that moved</summary>", ""]
    for chart in blocks:
        lines += [chart, ""]
    if dropped:
        left = "chart" if dropped == 1 else "charts"
        lines += [f"*{dropped} more {left} left out to stay within the comment size limit.*", ""]
    lines.append("</details>")
    return "\n".join(lines)


def _title(series: MetricSeries) -> str:
    unit = f" ({series.unit})" if series.unit else ""
    where = f" on {series.platform}" if series.platform else ""
    return label(f"{series.metric}{unit}{where}", MAX_TITLE)


def _categories(names: Sequence[str]) -> str:
    """The x labels, quoted and distinct: mermaid's band axis merges equal categories,
    which would draw two points at one x."""
    seen: dict[str, int] = {}
    quoted = []
    for name in names:
        text = label(name, MAX_CATEGORY)
        seen[text] = seen.get(text, 0) + 1
        if seen[text] > 1:
            text = f"{text} ({seen[text]})"
        quoted.append(f'"{text}"')
    return ", ".join(quoted)


def _drawable(stats: Stats | None) -> bool:
    return stats is not None and math.isfinite(stats.value) and abs(stats.value) < MAX_MAGNITUDE


def _range(values: Sequence[float], kind: str) -> tuple[float, float]:
    """The y axis: bars start at zero (a bar's length is its value); a line gets a tenth
    of its span as margin so that no point sits on the frame."""
    low, high = min(values), max(values)
    if kind == "bar":
        low, high = min(low, 0.0), max(high, 0.0)
        span = high - low or 1.0
        return (low - span * 0.1 if low < 0 else 0.0), high + span * 0.1
    span = high - low or abs(high) or 1.0
    return low - span * 0.1, high + span * 0.1


def _number(value: float) -> str:
    """``value`` to ``SIGNIFICANT_DIGITS`` digits in mermaid's number syntax (no exponent)."""
    if value == 0 or not math.isfinite(value):
        return "0"
    digits = SIGNIFICANT_DIGITS - 1 - math.floor(math.log10(abs(value)))
    digits = min(max(digits, 0), 12)
    written = f"{value:.{digits}f}"
    if "." in written:
        written = written.rstrip("0").rstrip(".")
    return "0" if written in {"-0", ""} else written
