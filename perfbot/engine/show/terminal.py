"""``perfbot compare`` for a person at a terminal: an aligned plain-text table.

The markdown of the PR comment is unreadable raw (``&#95;``, ``<code>``); benchstat,
critcmp and hyperfine print columns instead, and so does this. Names are shown as
written, except that every control character is dropped: a report's metric name may
hold an escape sequence (``\\x1b[2J``, ``\\x9b…``) that would move the cursor, clear or
recolour the terminal. Colour only goes to a terminal, and never when ``NO_COLOR`` is
set (https://no-color.org) or the terminal is ``dumb``.

A stochastic metric judged against its noise gets a last column with the band, where it
came from and how clearly the move left it, worded as in the PR comment
(``perfbot.engine.show.explain``); the column is there only when a row of the platform has one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TextIO

from perfbot.engine.judge.compare import (
    MOVED,
    Comparison,
    MetricResult,
    PlatformResult,
    Stats,
    Verdict,
)
from perfbot.engine.read.runs import RunsLeftOut
from perfbot.engine.read.sides import SideReport
from perfbot.engine.show import wording
from perfbot.engine.show.escape import clean
from perfbot.engine.show.explain import band, beyond_tolerance, change_text, hint
from perfbot.engine.show.render import format_number, headline
from perfbot.engine.show.rows import REPORT_ONLY
from perfbot.engine.show.singlerun import listing

__all__ = ["change_text", "comparison_table", "inert_line", "run_table", "safe", "wants_colour"]

MAX_NAME = 80

# SGR codes; perfbot writes them itself, around text that was cleaned first.
_RED, _BOLD_RED, _YELLOW, _GREEN, _DIM, _BOLD = "31", "1;31", "33", "32", "2", "1"


def wants_colour(stream: TextIO, environ: Mapping[str, str] = os.environ) -> bool:
    """Colour for ``stream``: a terminal, ``NO_COLOR`` unset or empty, not a dumb terminal."""
    if environ.get("NO_COLOR"):
        return False
    if environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def safe(value: str, max_length: int = MAX_NAME) -> str:
    """Untrusted text for a terminal: one line, no control or invisible characters.

    ``clean`` drops every character of category Cc (ESC, the C1 controls such as CSI
    ``\\x9b``, BEL, backspace), Cf (bidirectional overrides) and the default-ignorables,
    so what is left of an escape sequence is inert printable text (``[2J``).
    """
    return clean(value, max_length)


def inert_line(line: str) -> str:
    """A line perfbot prints about untrusted input, kept as laid out (indentation, length)
    but with every control character (C0, C1, DEL) and bidirectional control shown as its
    code (``\\x1b``, ``\\u202e``): an escape sequence in a payload can then neither drive the
    terminal nor reorder what the line says. Tabs stay; so do the zero-width spaces that
    perfbot's own comment bodies carry after ``@`` and ``#``."""
    if line.isascii() and line.isprintable():
        return line  # the common case
    return "".join(_shown(char) for char in line)


# Unicode's bidirectional formatting characters (UAX #9): embeddings, overrides,
# isolates and marks.
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def _shown(char: str) -> str:
    code = ord(char)
    if char != "\t" and (code < 0x20 or 0x7F <= code < 0xA0):
        return f"\\x{code:02x}"
    if char in _BIDI_CONTROLS:
        return f"\\u{code:04x}"
    return char


class _Painter:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def __call__(self, text: str, code: str | None) -> str:
        if not self.colour or code is None or not text:
            return text
        return f"\x1b[{code}m{text}\x1b[0m"


def comparison_table(comparison: Comparison, *, colour: bool = False) -> str:
    """The comparison as text: a headline, a table per platform, failures, the policy."""
    paint = _Painter(colour)
    lines = [paint(f"Performance report: {headline(comparison)}", _BOLD), ""]
    for platform in comparison.platforms:
        lines.extend(_platform_block(platform, comparison, paint))
        lines.append("")
    failures = comparison.failures
    if failures:
        lines.append(paint("Failed cases", _BOLD))
        for failure in failures:
            where = f"{failure.side} {safe(failure.platform)}: {safe(failure.case)}"
            lines.append(f"  {paint('✗', _RED)} {where}: {safe(failure.reason, 200)}")
        lines.append("")
    if comparison.left_out:
        lines.append(paint("Runs left out", _BOLD))
        for left in comparison.left_out:
            where = f"{left.side} {safe(left.runs.platform)}: {safe(left.runs.case)}"
            lines.append(f"  {paint('!', _YELLOW)} {where}: {_left_out(left.runs)}")
        lines.append("")
    policy = comparison.policy
    lines.append(
        paint(
            f"Noise floor ±{policy.threshold:g} %, tolerance {policy.tolerance:g} %; "
            "values are medians (min–max, n) of each side's samples.",
            _DIM,
        )
    )
    return "\n".join(lines) + "\n"


def _platform_block(
    platform: PlatformResult, comparison: Comparison, paint: _Painter
) -> Iterable[str]:
    yield paint(safe(platform.name), _BOLD)
    if platform.unavailable is not None:
        yield f"  comparison not available: {safe(platform.unavailable, 200)}"
    if not platform.metrics:
        return
    rows: list[tuple[str, ...]] = [("metric", "base", "head", "change", "", "noise")]
    codes: list[str | None] = [None]
    for metric in platform.metrics:
        change, verdict, code = _change(metric, comparison)
        cells = (_name(metric), _stats(metric.base), _stats(metric.head), change, verdict)
        rows.append((*cells, _noise(metric)))
        codes.append(code)
    right: tuple[bool, ...] = (False, True, True, True, False, False)
    if not any(row[-1] for row in rows[1:]):
        # No band to show (a deterministic tool): the table as it always was.
        rows, right = [row[:-1] for row in rows], right[:-1]
    yield from _aligned(rows, codes, paint, right=right)


def _name(metric: MetricResult) -> str:
    unit = f" ({safe(metric.unit, 20)})" if metric.unit else ""
    return safe(metric.name) + unit


def _stats(stats: Stats | None) -> str:
    if stats is None:
        return "—"
    if stats.n == 1:
        return format_number(stats.value)
    low, high = format_number(stats.low), format_number(stats.high)
    return f"{format_number(stats.value)} ({low}–{high}, n={stats.n})"


def _change(metric: MetricResult, comparison: Comparison) -> tuple[str, str, str | None]:
    """The change column, the verdict in words, and the colour of the row."""
    verdict = metric.verdict
    note = safe(metric.note, 120) if metric.note else ""
    shown = change_text(metric)
    if metric.change_pct is None and verdict not in MOVED:
        shown = ""
    if verdict is Verdict.REGRESSED and metric.beyond_tolerance:
        _, _, tolerance, _ = comparison.policy.resolve(metric.name, metric.scale)
        return shown, f"regressed, {beyond_tolerance(tolerance, metric.scale)}", _BOLD_RED
    # A verdict this table does not know yet (the noise-aware ones) is named as it is.
    word, code = _WORDS.get(verdict, (str(verdict.value), _YELLOW))
    if note:
        word = f"{word}: {note}" if word else note
    if metric.report_only:
        # Kept for the record: said, never coloured as a move.
        word = f"{word} ({REPORT_ONLY})" if word else REPORT_ONLY
        code = _DIM if verdict is Verdict.UNCHANGED else None
    return shown, word, code


_WORDS: dict[Verdict, tuple[str, str | None]] = {
    Verdict.REGRESSED: ("regressed", _YELLOW),
    Verdict.IMPROVED: ("improved", _GREEN),
    Verdict.UNCHANGED: ("", _DIM),
    Verdict.NEW: ("new", None),
    Verdict.MISSING: ("missing in head", _YELLOW),
    Verdict.FAILED: ("failed", _RED),
    Verdict.NOT_COMPARABLE: ("not comparable", None),
    Verdict.UNCERTAIN: ("uncertain", _YELLOW),
}


def _noise(metric: MetricResult) -> str:
    """The band, its evidence and the confidence; for an uncertain metric, the hint
    (``perfbot compare`` has no re-run command to offer)."""
    if metric.verdict is Verdict.UNCERTAIN:
        return hint(rerun=False)
    shown = band(metric)
    if shown is None:
        return ""
    unit = f" {safe(shown.unit, 20)}" if shown.unit else ""
    cell = f"{shown.width}{unit}, {safe(shown.evidence, 100)}"
    return f"{cell}: {shown.confidence}" if shown.confidence else cell


def run_table(side: SideReport, *, colour: bool = False) -> str:
    """A single run's values (no base): one table per platform, then its failed cases."""
    paint = _Painter(colour)
    lines: list[str] = []
    listed = listing(side)  # the platforms in the order a comparison shows them
    by_platform: dict[str, list[tuple[str, str]]] = {name: [] for name in listed.platforms}
    for (platform, metric), series in sorted(side.series.items()):
        unit = f" ({safe(series.unit, 20)})" if series.unit else ""
        stats = Stats.of(series.samples)
        by_platform[platform].append((safe(metric) + unit, _stats(stats)))
    for platform, metrics in by_platform.items():
        lines.append(paint(safe(platform), _BOLD))
        rows = [("metric", "value"), *metrics]
        lines.extend(_aligned(rows, [None] * len(rows), paint, right=(False, True)))
        lines.append("")
    if listed.failures:
        lines.append(paint("Failed cases", _BOLD))
        for failure in listed.failures:
            where = f"{safe(failure.platform)}: {safe(failure.case)}"
            lines.append(f"  {paint('✗', _RED)} {where}: {safe(failure.reason, 200)}")
        lines.append("")
    if listed.left_out:
        lines.append(paint("Runs left out", _BOLD))
        for runs in listed.left_out:
            where = f"{safe(runs.platform)}: {safe(runs.case)}"
            lines.append(f"  {paint('!', _YELLOW)} {where}: {_left_out(runs)}")
        lines.append("")
    if not lines:
        lines.append("no measurement")
    return "\n".join(lines).rstrip("\n") + "\n"


def _left_out(runs: RunsLeftOut) -> str:
    """The files left out and kept, each name and value cleaned and cut on its own: the
    line as a whole is never cut, so the settings that differ always show."""
    return wording.runs_left_out(runs, lambda name: safe(name, 60), lambda value: safe(value, 40))


def _aligned(
    rows: Sequence[Sequence[str]],
    codes: Sequence[str | None],
    paint: _Painter,
    right: Sequence[bool],
) -> Iterable[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(right))]
    for index, (row, code) in enumerate(zip(rows, codes, strict=True)):
        cells = [
            cell.rjust(width) if align_right else cell.ljust(width)
            for cell, width, align_right in zip(row, widths, right, strict=True)
        ]
        line = "  " + "  ".join(cells).rstrip()
        yield paint(line, _DIM if index == 0 else code)
