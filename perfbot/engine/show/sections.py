"""A Comparison as markdown sections: the headline, the overview, a section per platform.

Pure and without layout around it: ``perfbot/engine/show/render.py`` composes the whole comment
body (marker, notices, provenance, these sections, footer) and picks the detail level that
fits the size limit. One metric row is ``rows.row``, with its change cell and its noise
cell (``rows.noise_cell``): a table has that last column only when one of its rows needs
it (a stochastic metric's band, or the hint of an uncertain one), so deterministic tools'
tables look as they always did.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from perfbot.engine.judge.compare import (
    Comparison,
    Incomparable,
    MetricResult,
    PlatformResult,
    SideRunsLeftOut,
    Verdict,
)
from perfbot.engine.show import wording
from perfbot.engine.show.escape import code, text
from perfbot.engine.show.lossdetail import loss_runs
from perfbot.engine.show.numbers import MINUS, format_number
from perfbot.engine.show.rows import ACCEPTED_MARK, REPORT_ONLY_MARK, noise_cell, row, row_order
from perfbot.model import Scale

__all__ = [
    "DETAIL_LEVELS",
    "FULL",
    "LEFT_OUT",
    "MINUS",
    "NO_BANDS",
    "NO_TABLES",
    "applies",
    "count",
    "format_number",
    "headline",
    "percent",
    "plural",
    "sections",
]

TABLE_HEAD = "| metric | base | PR | change |\n|---|--:|--:|--:|"
TABLE_HEAD_NOISE = "| metric | base | PR | change | noise |\n|---|--:|--:|--:|---|"

# Detail levels, dropped in this order when the body is too long: the noise bands' words
# go before any row does.
FULL, NO_BANDS, NO_UNCHANGED_ROWS, NO_UNCHANGED_PLATFORMS, NO_TABLES = range(5)
DETAIL_LEVELS = (FULL, NO_BANDS, NO_UNCHANGED_ROWS, NO_UNCHANGED_PLATFORMS, NO_TABLES)
LEFT_OUT = {
    NO_BANDS: "the noise bands",
    NO_UNCHANGED_ROWS: "the unchanged rows",
    NO_UNCHANGED_PLATFORMS: "the platforms where nothing moved",
    NO_TABLES: "the per-metric tables",
}


def sections(
    comparison: Comparison, level: int, max_rows: int | None = None, *, rerun: bool = False
) -> Iterator[str]:
    """The lines of the comparison at ``level``; ``max_rows`` caps the overview and the
    failure list (the last resort for huge inputs). ``rerun``: the body is the App's,
    whose uncertain rows may suggest ``/perfbot rerun``."""
    platforms = comparison.platforms
    if level >= NO_UNCHANGED_PLATFORMS:
        platforms = tuple(p for p in platforms if not _quiet(p))
    yield from _overview(platforms, max_rows)
    hidden = len(comparison.platforms) - len(platforms)
    if hidden:
        yield ""
        yield f"{hidden} platform{plural(hidden)} where nothing moved {_are(hidden)} not shown."
    for platform in platforms if level < NO_TABLES else ():
        yield ""
        yield from _platform_section(platform, _Table(comparison, level, rerun))
    if level >= NO_TABLES:
        yield from _failure_list(comparison, max_rows)


def headline(comparison: Comparison) -> str:
    """The outcome in words: ``2 regressions, 1 improvement, 1 failed case``."""
    summary = comparison.summary()
    parts = []
    regressed = summary[Verdict.REGRESSED]
    if regressed:
        beyond = comparison.regressed_beyond_tolerance
        detail = f" ({beyond} beyond tolerance)" if 0 < beyond < regressed else ""
        parts.append(f"{regressed} regression{plural(regressed)}{detail}")
    if comparison.accepted:
        # Regressions a person accepted: said, never counted as regressions.
        parts.append(_accepted(comparison.accepted))
    if summary[Verdict.IMPROVED]:
        parts.append(count(summary[Verdict.IMPROVED], "improvement"))
    failed = len(comparison.failures)
    if failed:
        parts.append(count(failed, "failed case"))
    if comparison.left_out:
        parts.append(f"{count(len(comparison.left_out), 'case')} with runs left out")
    if summary[Verdict.MISSING]:
        parts.append(count(summary[Verdict.MISSING], "missing metric"))
    if summary[Verdict.UNCERTAIN]:
        # Never counted as moves: nothing is known of their noise.
        parts.append(_uncertain(summary[Verdict.UNCERTAIN]))
    if comparison.report_only_moved:
        # Moves the configuration keeps for the record: said, never counted as moves.
        parts.append(_report_only_moved(comparison.report_only_moved))
    if parts:
        return ", ".join(parts)
    if comparison.platforms and all(p.unavailable for p in comparison.platforms):
        reasons = sorted({p.unavailable or "" for p in comparison.platforms})
        return f"comparison not available ({'; '.join(reasons)})"
    if not comparison.platforms:
        return "no measurements found"
    return _nothing_moved(comparison, summary)


# Why metrics were not compared, as the headline counts them.
_INCOMPARABLE: dict[Incomparable | None, str] = {
    Incomparable.SETTINGS: "run settings differ",
    Incomparable.UNIT: "units differ",
    Incomparable.PLATFORM: "a platform measured on one side only",
}


def _nothing_moved(comparison: Comparison, summary: dict[Verdict, int]) -> str:
    """The headline when nothing moved, failed or went missing: "no change" only where
    something was compared; what was not compared is said, never left out."""
    said = []
    if summary[Verdict.NOT_COMPARABLE]:
        why: dict[str, int] = {}
        for platform in comparison.platforms:
            for metric in platform.metrics:
                if metric.verdict is Verdict.NOT_COMPARABLE:
                    reason = _INCOMPARABLE.get(metric.incomparable, "see the rows")
                    why[reason] = why.get(reason, 0) + 1
        ranked = sorted(why.items(), key=lambda item: (-item[1], item[0]))
        reasons = [reason if len(ranked) == 1 else f"{reason} ({n})" for reason, n in ranked]
        said.append(
            f"{count(summary[Verdict.NOT_COMPARABLE], 'metric')} not comparable: "
            f"{', '.join(reasons)}"
        )
    if summary[Verdict.NEW]:
        said.append(count(summary[Verdict.NEW], "new metric"))
    if summary[Verdict.UNCHANGED] or not said:
        said.insert(0, "no change beyond the noise floor")
    return ", ".join(said)


def _overview(platforms: tuple[PlatformResult, ...], max_rows: int | None) -> Iterator[str]:
    if not platforms:
        return
    yield "| platform | regressed | improved | unchanged | other |"
    yield "|---|--:|--:|--:|--:|"
    shown = platforms if max_rows is None else platforms[:max_rows]
    for platform in shown:
        regressed = platform.count(Verdict.REGRESSED)
        improved = platform.count(Verdict.IMPROVED)
        unchanged = platform.count(Verdict.UNCHANGED)
        yield (
            f"| {code(platform.name)} | {f'🔴 {regressed}' if regressed else ''} "
            f"| {f'🟢 {improved}' if improved else ''} | {unchanged or ''} "
            f"| {_other(platform)} |"
        )
    if len(shown) < len(platforms):
        rest = len(platforms) - len(shown)
        yield f"| … {rest} more platform{plural(rest)} | | | | |"


def _failed(platform: PlatformResult) -> int:
    """Failed cases, or failed metrics where no case says why (they name the same failures)."""
    return len(platform.failures) or platform.count(Verdict.FAILED)


def _other(platform: PlatformResult) -> str:
    parts = []
    failed = _failed(platform)
    if failed:
        parts.append(f"❌ {failed} failed")
    if platform.left_out:
        parts.append(f"⚠️ {len(platform.left_out)} with runs left out")
    for verdict, label in (
        (Verdict.MISSING, "➖ {} missing"),
        (Verdict.NEW, "🆕 {} new"),
        (Verdict.NOT_COMPARABLE, "⚪ {} not comparable"),
        (Verdict.UNCERTAIN, "❔ {} uncertain"),
    ):
        if platform.count(verdict):
            parts.append(label.format(platform.count(verdict)))
    if platform.accepted:
        parts.append(f"{ACCEPTED_MARK} {platform.accepted} accepted")
    if platform.report_only_moved:
        parts.append(f"{REPORT_ONLY_MARK} {platform.report_only_moved} report only")
    if platform.unavailable:
        parts.append(f"comparison not available: {platform.unavailable}")
    return ", ".join(parts)


def _quiet(platform: PlatformResult) -> bool:
    """Nothing to look at: every metric unchanged, no failure, both sides measured."""
    return (
        not platform.failures
        and not platform.left_out
        and all(m.verdict is Verdict.UNCHANGED for m in platform.metrics)
    )


def _stays_open(platform: PlatformResult) -> bool:
    """Shown open, never folded: something moved (a regression a person accepted too), a
    case failed or a metric is missing, or runs of a case were left out."""
    return (
        platform.moved
        or bool(platform.accepted)
        or bool(platform.failures)
        or bool(platform.left_out)
        or any(platform.count(verdict) for verdict in (Verdict.FAILED, Verdict.MISSING))
    )


def applies(comparison: Comparison, level: int) -> bool:
    """Whether ``level`` leaves out anything the level before it showed: without any noise
    cell in the comparison, leaving the bands out is no step (and is never said)."""
    if level != NO_BANDS:
        return True
    for platform in comparison.platforms:
        open_ = _stays_open(platform)
        if any(noise_cell(m, open_, rerun=False) for m in platform.metrics):
            return True
    return False


class _Table:
    """How one comparison's tables are written: its policy, the detail level, the path."""

    def __init__(self, comparison: Comparison, level: int, rerun: bool) -> None:
        self.comparison = comparison
        self.level = level
        self.rerun = rerun

    def rows(self, metrics: Sequence[MetricResult], *, open_: bool) -> Iterator[str]:
        """A table of ``metrics``, with a noise column only if one of them needs it."""
        cells = [
            noise_cell(m, open_, rerun=self.rerun) if self.level < NO_BANDS else "" for m in metrics
        ]
        noise = any(cells)
        yield TABLE_HEAD_NOISE if noise else TABLE_HEAD
        for metric, cell in zip(metrics, cells, strict=True):
            yield row(metric, self.comparison, cell if noise else None)


def _platform_section(platform: PlatformResult, table: _Table) -> Iterator[str]:
    unchanged = [m for m in platform.metrics if m.verdict is Verdict.UNCHANGED]
    others = [m for m in platform.metrics if m.verdict is not Verdict.UNCHANGED]
    others.sort(key=row_order)
    if _stays_open(platform):
        yield f"#### {code(platform.name)}"
        if others:  # never an empty table's header above the folded unchanged rows
            yield ""
            yield from table.rows(others, open_=True)
        yield from _folded_rows(unchanged, table)
        yield from _failures(platform)
        yield from _runs_left_out(platform)
        if table.level < NO_UNCHANGED_ROWS:
            yield from loss_runs(platform)
        return
    summary = _platform_summary(platform, table.comparison)
    yield f"<details><summary>{code(platform.name)}: {summary}</summary>"
    yield ""
    rows = others + unchanged if table.level < NO_UNCHANGED_ROWS else others
    if rows:
        yield from table.rows(rows, open_=False)
    elif unchanged:
        yield f"{count(len(unchanged), 'unchanged row')} left out."
    yield from _failures(platform)
    if table.level < NO_UNCHANGED_ROWS:
        yield from loss_runs(platform)
    yield ""
    yield "</details>"


def _folded_rows(rows: list[MetricResult], table: _Table) -> Iterator[str]:
    if not rows:
        return
    yield ""
    if table.level >= NO_UNCHANGED_ROWS:
        yield f"{count(len(rows), 'unchanged metric')} (rows left out)."
        return
    yield f"<details><summary>{count(len(rows), 'unchanged metric')}</summary>"
    yield ""
    # The platform is open: an unchanged row that moved beyond the floor but stayed
    # within its noise shows that band, so a reader sees why it is not a move.
    yield from table.rows(rows, open_=True)
    yield ""
    yield "</details>"


def _platform_summary(platform: PlatformResult, comparison: Comparison) -> str:
    if platform.unavailable:
        return f"comparison not available: {platform.unavailable}"
    total = len(platform.metrics)
    if _quiet(platform):
        return f"all {count(total, 'metric')} unchanged ({_within(platform, comparison)})"
    unchanged = platform.count(Verdict.UNCHANGED)
    parts = [f"{unchanged} unchanged"] if unchanged else []  # never "0 unchanged"
    if _failed(platform):
        parts.append(f"{_failed(platform)} failed")
    for verdict in (Verdict.MISSING, Verdict.NEW, Verdict.NOT_COMPARABLE):
        if platform.count(verdict):
            parts.append(f"{platform.count(verdict)} {verdict.value}")
    if platform.count(Verdict.UNCERTAIN):
        parts.append(_uncertain(platform.count(Verdict.UNCERTAIN)))
    if platform.accepted:
        parts.append(_accepted(platform.accepted))
    if platform.report_only_moved:
        parts.append(_report_only_moved(platform.report_only_moved))
    return ", ".join(parts)


def _within(platform: PlatformResult, comparison: Comparison) -> str:
    """What "unchanged" meant for a quiet platform: under the floor, or within noise too."""
    if any(m.band is not None for m in platform.metrics):
        return "within the noise floor or their noise"
    if all(m.scale is Scale.RATIO for m in platform.metrics):
        return f"within ±{percent(comparison.policy.threshold)}"
    return "within the noise floor"


def _uncertain(n: int) -> str:
    return f"{n} uncertain (single run{plural(n)})"


def _accepted(n: int) -> str:
    return count(n, "accepted regression")


def _report_only_moved(n: int) -> str:
    return f"{count(n, 'report-only metric')} moved"


def _failures(platform: PlatformResult) -> Iterator[str]:
    if not platform.failures:
        return
    yield ""
    for failure in platform.failures:
        side = "PR" if failure.side == "head" else "base"
        yield f"❌ {code(failure.case)} ({side}): {text(failure.reason)}  "


def _runs_left_out(platform: PlatformResult) -> Iterator[str]:
    if not platform.left_out:
        return
    yield ""
    for left in platform.left_out:
        yield f"⚠️ {_left_out_line(left)}  "


def _left_out_line(left: SideRunsLeftOut) -> str:
    """``<code>tcp_rx</code> (base): <code>tcp_rx_2.json</code> ran with streams 2; kept …``"""
    side = "PR" if left.side == "head" else "base"
    said = wording.runs_left_out(left.runs, lambda name: code(name, 60), lambda v: text(v, 40))
    return f"{code(left.runs.case)} ({side}): {said}"


def _failure_list(comparison: Comparison, max_rows: int | None) -> Iterator[str]:
    failures = comparison.failures
    if failures:
        shown = failures if max_rows is None else failures[:max_rows]
        yield ""
        yield "**Failed cases**"
        yield ""
        for failure in shown:
            side = "PR" if failure.side == "head" else "base"
            yield (
                f"- {code(failure.platform)} {code(failure.case)} ({side}): {text(failure.reason)}"
            )
        if len(shown) < len(failures):
            yield f"- … and {len(failures) - len(shown)} more"
    left_out = comparison.left_out
    if left_out:
        listed = left_out if max_rows is None else left_out[:max_rows]
        yield ""
        yield "**Runs left out**"
        yield ""
        for left in listed:
            yield f"- {code(left.runs.platform)} {_left_out_line(left)}"
        if len(listed) < len(left_out):
            yield f"- … and {len(left_out) - len(listed)} more"


def percent(value: float) -> str:
    return f"{value:g} %"


def count(n: int, noun: str) -> str:
    return f"{n} {noun}{plural(n)}"


def plural(n: int) -> str:
    return "" if n == 1 else "s"


def _are(n: int) -> str:
    return "is" if n == 1 else "are"
