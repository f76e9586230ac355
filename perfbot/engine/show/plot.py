"""Bar charts of a comparison, a single run or a metric's history, as self-contained SVG.

Why a writer of our own rather than a library (figures of 2026-12-01, Python 3.11, one
platform of eight metrics; see docs/cli/compare.md, "Charts"):

* pygal 3.1.3 is light (about 1 MB installed, imported in 60-140 ms) but writes an inline
  ``<script>`` element even with ``js=[]``, and a random chart id (a UUID) in every file,
  so two runs never give the same bytes;
* matplotlib 3.11's SVG backend is deterministic once ``svg.hashsalt`` and the date are
  pinned, but brings numpy, Pillow, fontTools and more (about 173 MB installed) and takes
  0.4-0.9 s to import and ~0.1 s to draw: more than the whole comparison costs;
* what is drawn here is rectangles, lines and text (``barchart.py`` writes them). The
  two modules need only the standard library and the engine (7-40 ms to import on
  top of it on a busy 2-core VM, ~2 ms to draw 100 metrics), give the same bytes for
  the same input, and emit nothing but those elements, so the "no script, no external
  reference" property holds by construction instead of by configuring someone else's
  output.

Layout: one row per metric, horizontal bars, so that long names stay readable on the
left. A comparison draws every metric normalised to its base median (base = 100 %) on one
shared axis: a reviewer reads every move against the same 100 % line, whatever the units
and scales (7 Mbps and 900 µs side by side), while each bar is labelled with its absolute
value and unit. A single run (and a metric's history) has no base, so its bars are
absolute, in one panel per unit. Text from reports is cleaned (``escape.clean``: no
control, bidirectional or invisible characters, cut with an ellipsis) and XML-escaped by
``barchart``, which every piece of text goes through.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from perfbot.engine.judge.compare import Comparison, MetricResult, PlatformResult, Stats, Verdict
from perfbot.engine.show.barchart import Bar, Chart, Panel, Row, draw
from perfbot.model import Scale

MINUS = "\u2212"
BASE_COLOUR = "#9aa3ad"
VERDICT_COLOURS = {
    Verdict.UNCHANGED: "#3b6ea5",
    Verdict.REGRESSED: "#c62f2a",
    Verdict.IMPROVED: "#23884a",
}
OTHER_COLOUR = "#b7791f"  # new, missing, failed, not comparable: look closer
HISTORY_COLOUR = "#3b6ea5"
HIGHLIGHT_COLOUR = "#7b4fb3"
CHANGE_COLOUR = "#b7791f"
MAX_FAILURES_SHOWN = 10
CLIP_PCT = 300.0  # a normalised axis stops here; longer bars are cut and marked
MAX_FILE_STEM = 80


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    """One commit's measurement of a metric: ``label`` is its short SHA."""

    label: str
    stats: Stats
    highlight: bool = False  # e.g. this PR's pushes after the target branch's commits
    # A change point begins at this commit (``perfbot history --changes``): its words.
    mark: str = ""


@dataclass(frozen=True, slots=True)
class PlotFile:
    """One SVG to write: ``name`` is the file name (the one given, or with the platform)."""

    name: str
    platform: str | None
    svg: str


# --- public entry points -------------------------------------------------------------------


def plot_files(comparison: Comparison, target: str) -> list[PlotFile]:
    """One chart per platform; with several, each file is ``target`` + ``-<platform>``.

    ``target`` is the file name given by the user (a path); only its last component is
    changed, and a platform's name is reduced to letters, digits, ``.``, ``_`` and ``-``
    (no separator, no ``..``), made unique when two names reduce to the same.
    """
    platforms = comparison.platforms
    if len(platforms) <= 1:
        chart = platform_svg(platforms[0]) if platforms else _empty_svg()
        return [PlotFile(target, platforms[0].name if platforms else None, chart)]
    stem, suffix = _split_suffix(target)
    files, taken = [], set()
    for platform in sorted(platforms, key=lambda p: p.name):
        name = safe_name(platform.name)
        unique, n = name, 1
        while unique.lower() in taken:
            n += 1
            unique = f"{name}-{n}"
        taken.add(unique.lower())
        files.append(PlotFile(f"{stem}-{unique}{suffix}", platform.name, platform_svg(platform)))
    return files


def safe_name(platform: str) -> str:
    """``platform`` as part of a file name: no separator, no ``..``, never empty or hidden."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", platform)
    name = re.sub(r"\.{2,}", ".", name).strip("._-")
    return name[:MAX_FILE_STEM] or "platform"


def platform_svg(platform: PlatformResult) -> str:
    """Base against PR for one platform, or one side's values when only it was measured."""
    if platform.metrics and all(m.base is None for m in platform.metrics):
        return draw(_values_chart(platform, "head"))
    if platform.metrics and all(m.head is None for m in platform.metrics):
        return draw(_values_chart(platform, "base"))
    return draw(_comparison_chart(platform))


def history_svg(
    metric: str, unit: str, points: Sequence[HistoryPoint], title: str | None = None
) -> str:
    """A metric's values over commits, oldest first, one row per commit (``perfbot history``)."""
    branch = [p.stats.value for p in points if not p.highlight]
    # Where this PR stands among the branch's commits: against their median, dashed.
    median = Stats.of(branch).value if branch and len(branch) < len(points) else None
    rows = []
    for point in points:
        colour = HIGHLIGHT_COLOUR if point.highlight else HISTORY_COLOUR
        note = detail = ""
        if point.highlight and median:
            note = _percent((point.stats.value - median) / abs(median) * 100.0)
            detail = "vs the median of the others"
        note_colour = HIGHLIGHT_COLOUR
        if point.mark:
            note, detail, note_colour = (
                point.mark,
                "change point: first commit at the new level",
                CHANGE_COLOUR,
            )
        bar = _absolute_bar(point.stats, unit, colour)
        rows.append(Row(point.label, (bar,), note, note_colour, detail))
    legend = [(HISTORY_COLOUR, "commit")]
    if any(point.highlight for point in points):
        legend.append((HIGHLIGHT_COLOUR, "this PR"))
    if any(point.mark for point in points):
        legend.append((CHANGE_COLOUR, "change point"))
    return draw(
        Chart(
            title=title or (f"{metric} ({unit})" if unit else metric),
            subtitle="median per commit, oldest first; whiskers: range of the samples"
            + ("; dashed: the median of the other commits" if median else ""),
            legend=tuple(legend),
            panels=(_absolute_panel("", unit, rows, median),) if rows else (),
            footer=() if rows else ("no measurements",),
        )
    )


# --- from results to the chart model -------------------------------------------------------


def _comparison_chart(platform: PlatformResult) -> Chart:
    rows = tuple(_comparison_row(metric) for metric in platform.metrics)
    top = max((bar.high or bar.value for row in rows for bar in row.bars), default=100.0)
    # Whole quarters of the base past the longest bar: 125 % for small moves, so that a
    # move of a few percent is still a visible step at the 100 % line.
    axis_max = min(math.ceil(min(max(top, 100.0), CLIP_PCT) * 1.02 / 25.0) * 25.0, CLIP_PCT)
    step = 25.0 if axis_max <= 200 else 50.0
    ticks = tuple((v, f"{v:g} %") for v in _ticks(axis_max, step))
    colours = {bar.colour for row in rows for bar in row.bars}
    legend = [(BASE_COLOUR, "base")]
    for verdict, colour in VERDICT_COLOURS.items():
        if colour in colours:
            legend.append((colour, f"PR, {verdict.value}"))
    others = sorted(
        {m.verdict.value for m in platform.metrics if m.verdict not in VERDICT_COLOURS and m.head}
    )
    if OTHER_COLOUR in colours:
        legend.append((OTHER_COLOUR, f"PR, {' or '.join(others)}"))
    return Chart(
        title=platform.name,
        subtitle="PR against base, each metric scaled to its base median = 100 %; "
        "whiskers: range of the samples",
        legend=tuple(legend),
        panels=(Panel("", axis_max, ticks, 100.0, rows),) if rows else (),
        footer=_footer(platform),
    )


def _comparison_row(metric: MetricResult) -> Row:
    # A report-only move is no regression nor improvement: "look closer", not red or green.
    colour = VERDICT_COLOURS.get(metric.verdict, OTHER_COLOUR) if metric.counts else OTHER_COLOUR
    base, head, own_scale = metric.base, metric.head, False
    if base is None or head is None or _units_differ(metric):
        # Bars are for comparing: a value with nothing to compare it to (new, missing,
        # failed, in another unit) keeps its number, and its line, without a bar.
        bars = (
            _label_only("base", base, metric.unit, _units_differ(metric)),
            _label_only("PR", head, metric.unit, False),
        )
    else:
        reference = base.value
        if reference <= 0:
            # A base of zero (or below) scales nothing: the larger side is 100 %.
            extremes = (abs(base.low), abs(base.high), abs(head.low), abs(head.high))
            reference, own_scale = max(extremes), max(extremes) > 0
            reference = reference or 1.0
        bars = (
            _scaled_bar(base, reference, metric.unit, BASE_COLOUR),
            _scaled_bar(head, reference, metric.unit, colour),
        )
    note = _change(metric)
    detail = metric.verdict.value
    if metric.beyond_tolerance:
        detail += ", beyond tolerance"
    if metric.report_only:
        detail += ", report only"
    if metric.note.startswith(detail):  # "failed on PR" says it all
        detail = metric.note
    elif metric.note:
        detail += f" ({metric.note})"
    if own_scale:
        detail += ", larger side = 100 %"
    return Row(metric.name, bars, note, colour, detail)


def _label_only(side: str, stats: Stats | None, unit: str, other_unit: bool) -> Bar:
    if stats is None:
        return Bar(0.0, None, None, "", f"no {side} value")
    if other_unit:  # the comparison keeps one unit, the PR's; the base's is another
        return Bar(0.0, None, None, "", f"{side} {_number(stats.value)} (its own unit)")
    return Bar(0.0, None, None, "", f"{side} {_value_label(stats, unit)}")


def _units_differ(metric: MetricResult) -> bool:
    return metric.verdict is Verdict.NOT_COMPARABLE and metric.note.startswith("unit differs")


def _scaled_bar(stats: Stats, reference: float, unit: str, colour: str) -> Bar:
    low, high = (stats.low, stats.high) if stats.n > 1 else (None, None)
    return Bar(
        stats.value / reference * 100.0,
        None if low is None else low / reference * 100.0,
        None if high is None else high / reference * 100.0,
        colour,
        _value_label(stats, unit),
    )


def _absolute_bar(stats: Stats, unit: str, colour: str) -> Bar:
    spread = stats.n > 1
    return Bar(
        stats.value,
        stats.low if spread else None,
        stats.high if spread else None,
        colour,
        _value_label(stats, unit),
    )


def _values_chart(platform: PlatformResult, side: str) -> Chart:
    """One side's values, one panel per unit: a single run, or a platform only one side
    measured."""
    colour = VERDICT_COLOURS[Verdict.UNCHANGED] if side == "head" else BASE_COLOUR
    by_unit: dict[str, list[Row]] = {}
    for metric in platform.metrics:
        stats = metric.head if side == "head" else metric.base
        assert stats is not None  # the caller checked that this side has every metric
        bar = _absolute_bar(stats, metric.unit, colour)
        by_unit.setdefault(metric.unit, []).append(Row(metric.name, (bar,)))
    panels = tuple(
        _absolute_panel(unit or "(no unit)", unit, rows) for unit, rows in sorted(by_unit.items())
    )
    what = "values of one run (no base)" if side == "head" else "values of the base alone"
    return Chart(
        title=platform.name,
        subtitle=f"{what}, one panel per unit; whiskers: range of the samples",
        legend=((colour, "this run" if side == "head" else "base"),),
        panels=panels,
        footer=_footer(platform, single_run=side == "head"),
    )


def _absolute_panel(
    heading: str, unit: str, rows: list[Row], reference: float | None = None
) -> Panel:
    top = max((bar.high or bar.value for row in rows for bar in row.bars), default=0.0)
    axis_max, step = _axis(min(top * 1.02, sys.float_info.max))
    ticks = tuple((v, _number(v)) for v in _ticks(axis_max, step))
    return Panel(heading, axis_max, ticks, reference, tuple(rows))


def _footer(platform: PlatformResult, *, single_run: bool = False) -> tuple[str, ...]:
    lines = []
    if platform.unavailable and not single_run:  # a single run has no base by design
        lines.append(f"comparison not available: {platform.unavailable}")
    for failure in platform.failures[:MAX_FAILURES_SHOWN]:
        side = "" if single_run else " on PR" if failure.side == "head" else " on base"
        lines.append(f"failed{side}: {failure.case}: {failure.reason}")
    if len(platform.failures) > MAX_FAILURES_SHOWN:
        lines.append(f"… and {len(platform.failures) - MAX_FAILURES_SHOWN} more failed cases")
    if not platform.metrics and not lines:
        lines.append("no measurements")
    return tuple(lines)


def _empty_svg() -> str:
    return draw(Chart("perfbot", "", (), (), ("no measurements",)))


# --- numbers -------------------------------------------------------------------------------


def _axis(top: float) -> tuple[float, float]:
    """The axis end and tick step for values up to ``top``: three to six round steps
    (1, 2, 2.5 or 5 times a power of ten), ending on the first tick past ``top``."""
    if not math.isfinite(top) or top <= 0:
        return 1.0, 0.25
    power = 10.0 ** math.floor(math.log10(top))
    step = power
    for factor in (0.1, 0.2, 0.25, 0.5, 1.0, 2.0):
        if top / (factor * power) <= 6:
            step = factor * power
            break
    end = math.ceil(top / step - 1e-9) * step
    if not math.isfinite(end):  # near the float limit, a step past ``top`` overflows
        return top, top / 4
    return end, step


def _ticks(axis_max: float, step: float) -> Iterator[float]:
    count = int(axis_max / step + 1e-9)
    for i in range(count + 1):
        yield round(i * step, 12)


def _number(value: float) -> str:
    """A value for a label: four significant digits, no exponent in the usual range."""
    if value == 0:
        return "0"
    if 1e-3 <= abs(value) < 1e6:
        digits = max(0, 3 - math.floor(math.log10(abs(value))))
        text = f"{value:,.{digits}f}"
        text = text.rstrip("0").rstrip(".") if "." in text else text
        return text.replace("-", MINUS)
    return f"{value:.3g}".replace("-", MINUS)


def _percent(change: float) -> str:
    sign = "+" if change > 0 else MINUS if change < 0 else "±"
    magnitude = abs(change)
    shown = f"{magnitude:.1f}" if magnitude < 1000 else f"{magnitude:.3g}"
    return f"{sign}{shown} %"


def _change(metric: MetricResult) -> str:
    """The change in the metric's own terms: a ratio metric in percent, a loss percentage
    in percentage points, a counter in counts (``Measurement.scale``)."""
    change = metric.change_pct
    if change is None:
        return ""
    if metric.scale is Scale.RATIO:
        return _percent(change)
    sign = "+" if change > 0 else MINUS if change < 0 else "±"
    if metric.scale is Scale.POINTS:
        return f"{sign}{abs(change):.2f} pp"
    return f"{sign}{_number(abs(change))} {metric.unit}".rstrip()


def _value_label(stats: Stats, unit: str) -> str:
    text = f"{_number(stats.value)} {unit}".rstrip()
    return f"{text} (n={stats.n})" if stats.n > 1 else text


def _split_suffix(target: str) -> tuple[str, str]:
    """``out/chart.svg`` -> (``out/chart``, ``.svg``); a name without a suffix keeps none."""
    cut = max(target.rfind("/"), target.rfind("\\"))
    dot = target.rfind(".")
    if dot > cut + 1:
        return target[:dot], target[dot:]
    return target, ""
