"""Horizontal bar charts as SVG text: the chart model and the one function that draws it.

A chart is a title, a legend and panels; a panel is an axis and rows; a row is a label,
one or more bars (each with an optional whisker and a value label) and a note. Only
``svg``, ``title``, ``rect``, ``line``, ``path`` and ``text`` elements are written, with
attributes computed here; every piece of text a caller hands in is cleaned (one line, no
control, bidirectional or invisible character), cut to fit with an ellipsis and
XML-escaped here, so no caller can put markup, a script or a reference into the file.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass

from perfbot.engine.show.escape import clean

INK, MUTED, GRID, BAND = "#1f2328", "#59636e", "#d0d7de", "#f6f8fa"
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"  # generic local fonts, nothing fetched

MAX_LABEL = 48  # characters of a metric or commit label before the ellipsis
MAX_LABEL_PX = 320  # and its drawn width, for scripts whose characters are wide
MAX_VALUE_PX, MAX_NOTE_PX = 300, 260  # the value and verdict columns
MAX_LINE_PX = 1000  # a title or a failure line widens the chart up to this
MAX_NOTE = 40
MAX_TITLE = 80

_BAR, _BAR_GAP, _ROW_PAD = 12, 3, 7
_PLOT_WIDTH, _GAP, _MARGIN = 400, 12, 16
_XML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})


@dataclass(frozen=True, slots=True)
class Bar:
    value: float  # in axis units
    low: float | None  # the whisker, when there are several samples
    high: float | None
    colour: str
    label: str


@dataclass(frozen=True, slots=True)
class Row:
    label: str
    bars: tuple[Bar, ...]
    note: str = ""
    note_colour: str = INK
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Panel:
    heading: str
    axis_max: float
    ticks: tuple[tuple[float, str], ...]
    reference: float | None  # a darker line (100 % of base)
    rows: tuple[Row, ...]


@dataclass(frozen=True, slots=True)
class Chart:
    title: str
    subtitle: str
    legend: tuple[tuple[str, str], ...]
    panels: tuple[Panel, ...]
    footer: tuple[str, ...] = ()


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


def draw(chart: Chart) -> str:
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


def _draw_panel(out: list[str], panel: Panel, y: float, columns: tuple[float, float, int]) -> float:
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
    row: Row,
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


def _note_width(row: Row) -> float:
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
