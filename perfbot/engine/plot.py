"""Bar charts of a comparison, a single run or a metric's history, as self-contained SVG.

Why a writer of our own rather than a library (figures of 2026-12-01, Python 3.11, one
platform of eight metrics; see README "Charts"):

* pygal 3.1.3 is light (about 1 MB installed, imported in ~60 ms) but writes an inline
  ``<script>`` element even with ``js=[]``, and a random chart id (a UUID) in every file,
  so two runs never give the same bytes;
* matplotlib 3.11's SVG backend is deterministic once ``svg.hashsalt`` and the date are
  pinned, but brings numpy, Pillow, fontTools and more (about 173 MB installed) and takes
  ~0.4 s to import and ~0.1 s to draw: more than the whole comparison costs;
* what is drawn here is rectangles, lines and text. This module needs only the standard
  library and the engine (about 10 ms to import on top of the engine, ~2 ms to draw 100
  metrics), writes the same bytes for the same input, and emits nothing but those
  elements, so the "no script, no external reference" property holds by construction
  instead of by configuring someone else's output.

Layout: one row per metric, horizontal bars, so that long names stay readable on the
left. A comparison draws every metric normalised to its base median (base = 100 %) on one
shared axis: a reviewer reads every move against the same 100 % line, whatever the units
and scales (7 Mbps and 900 µs side by side), while each bar is labelled with its absolute
value and unit. A single run (and a metric's history) has no base, so its bars are
absolute, in one panel per unit. Text from reports is cleaned (``escape.clean``: no
control, bidirectional or invisible characters, cut with an ellipsis) and XML-escaped.
"""

from __future__ import annotations

import math
import re
import sys
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from perfbot.engine.compare import Comparison, MetricResult, PlatformResult, Stats, Verdict
from perfbot.engine.escape import clean

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
INK, MUTED, GRID, BAND = "#1f2328", "#59636e", "#d0d7de", "#f6f8fa"
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"  # generic local fonts, nothing fetched

MAX_LABEL = 48  # characters of a metric or commit label before the ellipsis
MAX_LABEL_PX = 320  # and its drawn width, for scripts whose characters are wide
MAX_VALUE_PX, MAX_NOTE_PX = 300, 260  # the value and verdict columns
MAX_LINE_PX = 1000  # a title or a failure line widens the chart up to this
MAX_NOTE = 40
MAX_TITLE = 80
MAX_FAILURES_SHOWN = 10
CLIP_PCT = 300.0  # a normalised axis stops here; longer bars are cut and marked
MAX_FILE_STEM = 80

_BAR, _BAR_GAP, _ROW_PAD = 12, 3, 7
_PLOT_WIDTH, _GAP, _MARGIN = 400, 12, 16
_XML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    """One commit's measurement of a metric: ``label`` is its short SHA."""

    label: str
    stats: Stats
    highlight: bool = False  # e.g. this PR's pushes after the target branch's commits


@dataclass(frozen=True, slots=True)
class PlotFile:
    """One SVG to write: ``name`` is the file name (the one given, or with the platform)."""

    name: str
    platform: str | None
    svg: str


# --- the chart model, drawn by _draw ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Bar:
    value: float  # in axis units
    low: float | None  # the whisker, when there are several samples
    high: float | None
    colour: str
    label: str


@dataclass(frozen=True, slots=True)
class _Row:
    label: str
    bars: tuple[_Bar, ...]
    note: str = ""
    note_colour: str = INK
    detail: str = ""


@dataclass(frozen=True, slots=True)
class _Panel:
    heading: str
    axis_max: float
    ticks: tuple[tuple[float, str], ...]
    reference: float | None  # a darker line (100 % of base)
    rows: tuple[_Row, ...]


@dataclass(frozen=True, slots=True)
class _Chart:
    title: str
    subtitle: str
    legend: tuple[tuple[str, str], ...]
    panels: tuple[_Panel, ...]
    footer: tuple[str, ...] = ()


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
    """Base against PR for one platform, or its values alone when it has no base at all."""
    if platform.metrics and all(m.base is None for m in platform.metrics):
        return _draw(_single_run_chart(platform))
    return _draw(_comparison_chart(platform))


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
        bar = _absolute_bar(point.stats, unit, colour)
        rows.append(_Row(point.label, (bar,), note, HIGHLIGHT_COLOUR, detail))
    legend = [(HISTORY_COLOUR, "commit")]
    if any(point.highlight for point in points):
        legend.append((HIGHLIGHT_COLOUR, "this PR"))
    return _draw(
        _Chart(
            title=title or (f"{metric} ({unit})" if unit else metric),
            subtitle="median per commit, oldest first; whiskers: range of the samples"
            + ("; dashed: the median of the other commits" if median else ""),
            legend=tuple(legend),
            panels=(_absolute_panel("", unit, rows, median),) if rows else (),
            footer=() if rows else ("no measurements",),
        )
    )


# --- from results to the chart model -------------------------------------------------------


def _comparison_chart(platform: PlatformResult) -> _Chart:
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
    return _Chart(
        title=platform.name,
        subtitle="PR against base, each metric scaled to its base median = 100 %; "
        "whiskers: range of the samples",
        legend=tuple(legend),
        panels=(_Panel("", axis_max, ticks, 100.0, rows),) if rows else (),
        footer=_footer(platform),
    )


def _comparison_row(metric: MetricResult) -> _Row:
    present = [s.high for s in (metric.base, metric.head) if s is not None]
    present += [s.low for s in (metric.base, metric.head) if s is not None]
    if metric.base is not None and metric.base.value > 0:
        reference, own_scale = metric.base.value, False
    else:
        # No base to scale to (new, or a base of zero): the larger side is 100 %.
        reference, own_scale = max((abs(v) for v in present), default=0.0) or 1.0, True
    colour = VERDICT_COLOURS.get(metric.verdict, OTHER_COLOUR)
    # A side without a value keeps its line, labelled, so the row still reads base, PR.
    bars: list[_Bar] = [
        _scaled_bar(metric.base, reference, metric.unit, BASE_COLOUR)
        if metric.base is not None
        else _Bar(0.0, None, None, "", "no base value"),
        _scaled_bar(metric.head, reference, metric.unit, colour)
        if metric.head is not None
        else _Bar(0.0, None, None, "", "no PR value"),
    ]
    if metric.base is not None and metric.head is not None and _units_differ(metric):
        # Two units: no bar could put the values on one scale; the numbers stay.
        bars = [
            _Bar(0.0, None, None, "", f"base {_number(metric.base.value)} (its own unit)"),
            _Bar(0.0, None, None, "", f"PR {_value_label(metric.head, metric.unit)}"),
        ]
    note = "" if metric.change_pct is None else _percent(metric.change_pct)
    detail = metric.verdict.value
    if metric.beyond_tolerance:
        detail += ", beyond tolerance"
    if metric.note.startswith(detail):  # "failed on PR" says it all
        detail = metric.note
    elif metric.note:
        detail += f" ({metric.note})"
    if own_scale and metric.base is not None and metric.head is not None:
        detail += ", larger side = 100 %"
    return _Row(metric.name, tuple(bars), note, colour, detail)


def _units_differ(metric: MetricResult) -> bool:
    return metric.verdict is Verdict.NOT_COMPARABLE and metric.note.startswith("unit differs")


def _scaled_bar(stats: Stats, reference: float, unit: str, colour: str) -> _Bar:
    low, high = (stats.low, stats.high) if stats.n > 1 else (None, None)
    return _Bar(
        stats.value / reference * 100.0,
        None if low is None else low / reference * 100.0,
        None if high is None else high / reference * 100.0,
        colour,
        _value_label(stats, unit),
    )


def _absolute_bar(stats: Stats, unit: str, colour: str) -> _Bar:
    spread = stats.n > 1
    return _Bar(
        stats.value,
        stats.low if spread else None,
        stats.high if spread else None,
        colour,
        _value_label(stats, unit),
    )


def _single_run_chart(platform: PlatformResult) -> _Chart:
    by_unit: dict[str, list[_Row]] = {}
    for metric in platform.metrics:
        assert metric.head is not None  # no base, so the metric came from this run
        colour = VERDICT_COLOURS[Verdict.UNCHANGED]
        bar = _absolute_bar(metric.head, metric.unit, colour)
        by_unit.setdefault(metric.unit, []).append(_Row(metric.name, (bar,)))
    panels = tuple(
        _absolute_panel(unit or "(no unit)", unit, rows) for unit, rows in sorted(by_unit.items())
    )
    return _Chart(
        title=platform.name,
        subtitle="values of one run (no base), one panel per unit; whiskers: range of the samples",
        legend=((VERDICT_COLOURS[Verdict.UNCHANGED], "this run"),),
        panels=panels,
        footer=_footer(platform, single_run=True),
    )


def _absolute_panel(
    heading: str, unit: str, rows: list[_Row], reference: float | None = None
) -> _Panel:
    top = max((bar.high or bar.value for row in rows for bar in row.bars), default=0.0)
    axis_max, step = _axis(min(top * 1.02, sys.float_info.max))
    ticks = tuple((v, _number(v)) for v in _ticks(axis_max, step))
    return _Panel(heading, axis_max, ticks, reference, tuple(rows))


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
    return _draw(_Chart("perfbot", "", (), (), ("no measurements",)))


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


def _value_label(stats: Stats, unit: str) -> str:
    text = f"{_number(stats.value)} {unit}".rstrip()
    return f"{text} (n={stats.n})" if stats.n > 1 else text


# --- drawing -------------------------------------------------------------------------------


def _esc(value: str, max_length: int) -> str:
    """Untrusted text as XML character data: one clean line, cut, markup characters escaped."""
    return clean(value, max_length).translate(_XML)


def fit(
    value: str, max_length: int = MAX_LABEL, size: float = 12, max_px: float = MAX_LABEL_PX
) -> str:
    """``value`` cleaned and cut to ``max_length`` characters and to ``max_px`` as drawn
    (a wide script's characters are twice as wide), ending in an ellipsis if cut."""
    label = clean(value, max_length)
    if _width(label, size) <= max_px:
        return label
    while label and _width(label + "…", size) > max_px:
        label = label[:-1]
    return label.rstrip() + "…"


def _fitted_value(label: str) -> str:
    return fit(label, 60, 11, MAX_VALUE_PX)


def _fitted_note(detail: str) -> str:
    return fit(detail, MAX_NOTE, 11, MAX_NOTE_PX)


def _line(value: str, size: float, max_px: float) -> str:
    return fit(value, 160, size, max_px).translate(_XML)


def _width(value: str, size: float) -> float:
    """A generous estimate of the drawn width of ``value`` (no font metrics here)."""
    wide = sum(1 for c in value if unicodedata.east_asian_width(c) in "WF")
    return (len(value) - wide) * size * 0.62 + wide * size * 1.05


def _draw(chart: _Chart) -> str:
    rows = [row for panel in chart.panels for row in panel.rows]
    label_width = max((_width(fit(r.label), 12) for r in rows), default=0.0)
    note_width = max((_note_width(r) for r in rows), default=0.0)
    value_width = max(
        (_width(_fitted_value(b.label), 11) for r in rows for b in r.bars), default=0.0
    )
    plot_x = _MARGIN + label_width + 10
    note_x = plot_x + _PLOT_WIDTH + _GAP + value_width + 2 * _GAP
    # Lines across the chart (title, subtitle, failures) widen it up to MAX_LINE_PX; longer
    # ones are cut, so that a long reason cannot make the chart absurdly wide.
    title = clean(chart.title, MAX_TITLE)
    lines = [
        _width(title, 16),
        *(_width(clean(t, 160), 12) for t in (chart.subtitle, *chart.footer)),
    ]
    across = min(max(lines), MAX_LINE_PX)
    width = math.ceil(max(note_x + note_width + _MARGIN, across + 2 * _MARGIN, 640))
    line_px = width - 2 * _MARGIN
    out: list[str] = []
    y: float = _MARGIN + 16
    out.append(_text(_MARGIN, y, _line(title, 16, line_px), 16, weight="bold"))
    if chart.subtitle:
        y += 20
        out.append(_text(_MARGIN, y, _line(chart.subtitle, 12, line_px), 12, fill=MUTED))
    if chart.legend:
        y += 22
        x = float(_MARGIN)
        for colour, label in chart.legend:
            out.append(f'<rect x="{x:.1f}" y="{y - 10}" width="12" height="12" fill="{colour}"/>')
            out.append(_text(x + 17, y, _esc(label, 40), 12))
            x += 17 + _width(label, 12) + 18
    for panel in chart.panels:
        y = _draw_panel(out, panel, y + 12, (plot_x, note_x, width))
    for line in chart.footer:
        y += 18
        out.append(_text(_MARGIN, y, _line(line, 12, line_px), 12, fill=MUTED))
    height = math.ceil(y + _MARGIN)
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="{FONT}" role="img">'
        f"<title>{_esc(chart.title, MAX_TITLE)}</title>"
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>'
    )
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + head + "".join(out) + "</svg>\n"


def _draw_panel(
    out: list[str], panel: _Panel, y: float, columns: tuple[float, float, int]
) -> float:
    """Draw ``panel`` from ``y`` down; ``columns`` are the plot's and notes' x, the width."""
    plot_x, note_x, width = columns
    if panel.heading:
        y += 16
        out.append(
            _text(_MARGIN, y, fit(panel.heading, MAX_LABEL, 13).translate(_XML), 13, weight="bold")
        )
    y += 16
    for value, label in panel.ticks:
        out.append(
            _text(_x(plot_x, value, panel.axis_max), y, label, 10, anchor="middle", fill=MUTED)
        )
    top = y + 6
    heights = [2 * _ROW_PAD + len(r.bars) * _BAR + (len(r.bars) - 1) * _BAR_GAP for r in panel.rows]
    bottom = top + sum(heights)
    row_top = top
    for i, height in enumerate(heights):
        if i % 2:  # a light band on every other row guides the eye from name to note
            out.append(
                f'<rect x="{_MARGIN / 2}" y="{row_top:.1f}" width="{width - _MARGIN}" '
                f'height="{height}" fill="{BAND}"/>'
            )
        row_top += height
    for value, _ in panel.ticks:
        x = _x(plot_x, value, panel.axis_max)
        out.append(
            f'<line x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{bottom:.1f}" stroke="{GRID}"/>'
        )
    if panel.reference is not None:
        x = _x(plot_x, panel.reference, panel.axis_max)
        out.append(
            f'<line x1="{x:.1f}" y1="{top - 4:.1f}" x2="{x:.1f}" y2="{bottom:.1f}" '
            f'stroke="{MUTED}" stroke-dasharray="4 3"/>'
        )
    row_top = top
    for row, height in zip(panel.rows, heights, strict=True):
        _draw_row(out, row, (row_top, height), (plot_x, note_x), panel.axis_max)
        row_top += height
    return bottom


def _draw_row(
    out: list[str],
    row: _Row,
    band: tuple[float, float],
    columns: tuple[float, float],
    axis_max: float,
) -> None:
    top, height = band
    plot_x, note_x = columns
    middle = top + height / 2
    label = fit(row.label).translate(_XML)
    out.append(_text(plot_x - 8, middle + 4, label, 12, anchor="end"))
    y = top + _ROW_PAD
    value_x = plot_x + _PLOT_WIDTH + _GAP
    for bar in row.bars:
        end = _x(plot_x, bar.value, axis_max)
        if bar.colour:
            out.append(
                f'<rect x="{plot_x:.1f}" y="{y:.1f}" width="{end - plot_x:.1f}" '
                f'height="{_BAR}" fill="{bar.colour}"/>'
            )
        if bar.value > axis_max:  # cut: two white strokes say the bar goes on
            for dx in (-9, -5):
                out.append(
                    f'<line x1="{end + dx:.1f}" y1="{y + _BAR:.1f}" x2="{end + dx + 3:.1f}" '
                    f'y2="{y:.1f}" stroke="#ffffff" stroke-width="1.5"/>'
                )
        if bar.low is not None and bar.high is not None:
            low, high = _x(plot_x, bar.low, axis_max), _x(plot_x, bar.high, axis_max)
            mid = y + _BAR / 2
            out.append(
                f'<path d="M{low:.1f} {mid - 4:.1f}V{mid + 4:.1f}M{low:.1f} {mid:.1f}'
                f'H{high:.1f}M{high:.1f} {mid - 4:.1f}V{mid + 4:.1f}" stroke="{INK}" '
                f'stroke-width="1.2" fill="none"/>'
            )
        # Values in a column of their own: aligned, and never over a bar or a grid line.
        fill = INK if bar.colour else MUTED
        out.append(
            _text(value_x, y + _BAR - 2, _fitted_value(bar.label).translate(_XML), 11, fill=fill)
        )
        y += _BAR + _BAR_GAP
    # Two lines (change, then verdict) where the row has room for them, else one.
    inline = len(row.bars) == 1
    detail_x, detail_y = note_x, middle + (13 if row.note else 4)
    if row.note:
        note = row.note.translate(_XML)
        note_y = middle + 4 if inline else middle - 1
        out.append(_text(note_x, note_y, note, 12, weight="bold", fill=row.note_colour))
        if inline:
            detail_x, detail_y = note_x + _width(row.note, 12) + 6, note_y
    if row.detail:
        # Beside a change it explains it; alone (failed, new) it is the row's verdict.
        fill = MUTED if row.note else row.note_colour
        detail = _fitted_note(row.detail).translate(_XML)
        out.append(_text(detail_x, detail_y, detail, 11, fill=fill))


def _note_width(row: _Row) -> float:
    note, detail = _width(row.note, 12), _width(_fitted_note(row.detail), 11)
    return note + 6 + detail if len(row.bars) == 1 else max(note, detail)


def _x(plot_x: float, value: float, axis_max: float) -> float:
    share = min(max(value / axis_max, 0.0), 1.0) if axis_max > 0 else 0.0
    return plot_x + share * _PLOT_WIDTH


def _text(
    x: float,
    y: float,
    content: str,
    size: int,
    *,
    anchor: str = "start",
    weight: str = "normal",
    fill: str = INK,
) -> str:
    """A text element; ``content`` must already be escaped."""
    attributes = f'x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{fill}"'
    if anchor != "start":
        attributes += f' text-anchor="{anchor}"'
    if weight != "normal":
        attributes += f' font-weight="{weight}"'
    return f"<text {attributes}>{content}</text>"


def _split_suffix(target: str) -> tuple[str, str]:
    """``out/chart.svg`` -> (``out/chart``, ``.svg``); a name without a suffix keeps none."""
    cut = max(target.rfind("/"), target.rfind("\\"))
    dot = target.rfind(".")
    if dot > cut + 1:
        return target[:dot], target[dot:]
    return target, ""
