"""One metric's row of a comparison's table: its name, both sides' statistics, the change
with its verdict, and the noise cell; the order of the rows. Used by ``sections.py``."""

from __future__ import annotations

from perfbot.engine.judge.compare import MOVED, Comparison, MetricResult, Stats, Verdict
from perfbot.engine.show.escape import code, text
from perfbot.engine.show.explain import band, beyond_tolerance, change_text, hint
from perfbot.engine.show.numbers import format_number
from perfbot.engine.show.wording import NO_LONGER_ACCEPTED, accepted_by

_ROW_ORDER = {
    Verdict.REGRESSED: 0,
    Verdict.FAILED: 1,
    Verdict.MISSING: 2,
    Verdict.NOT_COMPARABLE: 3,
    Verdict.IMPROVED: 4,
    Verdict.NEW: 5,
    Verdict.UNCERTAIN: 6,
    Verdict.UNCHANGED: 7,
}


def row_order(metric: MetricResult) -> tuple[float, int, float, str]:
    magnitude = -abs(metric.change_pct) if metric.change_pct is not None else 0.0
    # A verdict this table does not know yet sorts just above the unchanged rows, and a
    # report-only move after every move that counts.
    order = _ROW_ORDER.get(metric.verdict, _ROW_ORDER[Verdict.UNCHANGED] - 0.5)
    if metric.accepted:
        order = _ROW_ORDER[Verdict.REGRESSED] + 0.5  # after the regressions that count
    elif not metric.counts:
        order = _ROW_ORDER[Verdict.NEW] + 0.5
    return (order, 0 if metric.beyond_tolerance else 1, magnitude, metric.name)


def row(metric: MetricResult, comparison: Comparison, noise: str | None = None) -> str:
    unit = f" ({text(metric.unit, 20)})" if metric.unit else ""
    last = "" if noise is None else f" {noise} |"
    return (
        f"| {code(metric.name)}{unit} | {stats_cell(metric.base)} | {stats_cell(metric.head)} "
        f"| {_change(metric, comparison)} |{last}"
    )


def stats_cell(stats: Stats | None) -> str:
    if stats is None:
        return "—"
    if stats.n == 1:
        return format_number(stats.value)
    return (
        f"{format_number(stats.value)} ({format_number(stats.low)}–"
        f"{format_number(stats.high)}, n={stats.n})"
    )


def _change(metric: MetricResult, comparison: Comparison) -> str:
    """The change in the metric's own units (percent, points, counts) and its verdict."""
    if metric.report_only:
        return _report_only(metric)
    verdict = metric.verdict
    note = f" ({text(metric.note)})" if metric.note else ""
    if verdict is Verdict.NEW:
        return "🆕 new"
    if verdict is Verdict.MISSING:
        return "➖ missing in PR"
    if verdict is Verdict.FAILED:
        return f"❌ {text(metric.note or 'failed')}"
    if verdict is Verdict.NOT_COMPARABLE:
        return f"⚪ not comparable{note}"  # the note names the settings that differ
    shown = change_text(metric)
    if metric.note == "from zero":
        note = ""  # "from 0" says it already
    if metric.accepted and metric.acceptance is not None:
        return f"{ACCEPTED_MARK} {shown} ({accepted_by(metric.acceptance)}){note}"
    # An acceptance that no longer holds: why is the notice above the report
    # (``wording.acceptance_lapsed``).
    lapsed = f"; {NO_LONGER_ACCEPTED}" if metric.acceptance is not None else ""
    if verdict is Verdict.REGRESSED and metric.beyond_tolerance:
        _, _, tolerance, _ = comparison.policy.resolve(metric.name, metric.scale)
        return f"🔴 **{shown}** ({beyond_tolerance(tolerance, metric.scale)}{lapsed}){note}"
    if verdict is Verdict.REGRESSED:
        # A move's note is what happened to it since (confirming, not reproduced…).
        return f"🟠 {shown}{f' ({lapsed[2:]})' if lapsed else ''}{note}"
    if verdict is Verdict.IMPROVED:
        return f"🟢 {shown}{note}"
    if verdict is Verdict.UNCERTAIN:
        return f"❔ {shown}{note}"
    return f"{shown}{note}"


REPORT_ONLY = "report only"
REPORT_ONLY_MARK = "📝"
# A regression a person accepted (``/perfbot accept``), still where it was accepted.
ACCEPTED_MARK = "☑️"


def _report_only(metric: MetricResult) -> str:
    """A report-only metric's change: what happened, never red nor orange nor green, and
    marked as kept for the record (``report_only: true`` in the configuration)."""
    verdict = metric.verdict
    if verdict is Verdict.FAILED:
        return f"❌ {text(metric.note or 'failed')} ({REPORT_ONLY})"
    words = [verdict.value] if verdict in MOVED else []
    if metric.note and metric.note != "from zero":
        words.append(text(metric.note))
    said = f"({'; '.join([*words, REPORT_ONLY])})"
    if verdict is Verdict.NEW:
        return f"🆕 new {said}"
    if verdict is Verdict.MISSING:
        return f"➖ missing in PR {said}"
    if verdict is Verdict.NOT_COMPARABLE:
        return f"⚪ not comparable {said}"
    mark = {Verdict.REGRESSED: REPORT_ONLY_MARK, Verdict.IMPROVED: REPORT_ONLY_MARK}.get(
        verdict, "❔" if verdict is Verdict.UNCERTAIN else ""
    )
    return f"{mark} {change_text(metric)} {said}".lstrip()


def noise_cell(metric: MetricResult, open_: bool, *, rerun: bool) -> str:
    """The noise cell: a stochastic metric's band, where it came from and how clearly
    the move left it; for an uncertain one, what would make it judgeable. Empty for a
    deterministic tool, and for an unchanged row of a folded platform."""
    if metric.verdict is Verdict.UNCERTAIN:
        return hint(rerun)
    if metric.verdict not in MOVED and not (open_ and metric.verdict is Verdict.UNCHANGED):
        return ""
    shown = band(metric)
    if shown is None:
        return ""
    unit = f" {text(shown.unit, 20)}" if shown.unit else ""
    cell = f"{shown.width}{unit}, {text(shown.evidence, 100)}"
    return f"{cell}: {shown.confidence}" if shown.confidence else cell
