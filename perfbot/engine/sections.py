"""A Comparison as markdown sections: the headline, the overview, a section per platform.

Pure and without layout around it: ``perfbot/engine/render.py`` composes the whole comment
body (marker, notices, provenance, these sections, footer) and picks the detail level that
fits the size limit. One metric row is ``_row``, its change cell ``_change``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from perfbot.engine.compare import Comparison, MetricResult, PlatformResult, Stats, Verdict
from perfbot.engine.escape import code, text

MINUS = "\u2212"
TABLE_HEAD = "| metric | base | PR | change |\n|---|--:|--:|--:|"

# Detail levels, dropped in this order when the body is too long.
FULL, NO_UNCHANGED_ROWS, NO_UNCHANGED_PLATFORMS, NO_TABLES = range(4)
DETAIL_LEVELS = (FULL, NO_UNCHANGED_ROWS, NO_UNCHANGED_PLATFORMS, NO_TABLES)
LEFT_OUT = {
    NO_UNCHANGED_ROWS: "the unchanged rows",
    NO_UNCHANGED_PLATFORMS: "the platforms where nothing moved",
    NO_TABLES: "the per-metric tables",
}


def sections(comparison: Comparison, level: int, max_rows: int | None = None) -> Iterator[str]:
    """The lines of the comparison at ``level``; ``max_rows`` caps the overview and the
    failure list (the last resort for huge inputs)."""
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
        yield from _platform_section(platform, comparison, level)
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
    if summary[Verdict.IMPROVED]:
        parts.append(count(summary[Verdict.IMPROVED], "improvement"))
    failed = len(comparison.failures)
    if failed:
        parts.append(count(failed, "failed case"))
    if summary[Verdict.MISSING]:
        parts.append(count(summary[Verdict.MISSING], "missing metric"))
    if parts:
        return ", ".join(parts)
    if comparison.platforms and all(p.unavailable for p in comparison.platforms):
        reasons = sorted({p.unavailable or "" for p in comparison.platforms})
        return f"comparison not available ({'; '.join(reasons)})"
    if not comparison.platforms:
        return "no measurements found"
    return "no change beyond the noise floor"


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
    for verdict, label in (
        (Verdict.MISSING, "➖ {} missing"),
        (Verdict.NEW, "🆕 {} new"),
        (Verdict.NOT_COMPARABLE, "⚪ {} not comparable"),
    ):
        if platform.count(verdict):
            parts.append(label.format(platform.count(verdict)))
    if platform.unavailable:
        parts.append(f"comparison not available: {platform.unavailable}")
    return ", ".join(parts)


def _quiet(platform: PlatformResult) -> bool:
    """Nothing to look at: every metric unchanged, no failure, both sides measured."""
    return not platform.failures and all(m.verdict is Verdict.UNCHANGED for m in platform.metrics)


def _stays_open(platform: PlatformResult) -> bool:
    """Shown open, never folded: something moved, a case failed or a metric is missing."""
    return (
        platform.moved
        or bool(platform.failures)
        or any(platform.count(verdict) for verdict in (Verdict.FAILED, Verdict.MISSING))
    )


def _platform_section(
    platform: PlatformResult, comparison: Comparison, level: int
) -> Iterator[str]:
    unchanged = [m for m in platform.metrics if m.verdict is Verdict.UNCHANGED]
    others = [m for m in platform.metrics if m.verdict is not Verdict.UNCHANGED]
    others.sort(key=_row_order)
    if _stays_open(platform):
        yield f"#### {code(platform.name)}"
        yield ""
        yield TABLE_HEAD
        yield from (_row(m, comparison) for m in others)
        yield from _folded_rows(unchanged, comparison, level)
        yield from _failures(platform)
        return
    summary = _platform_summary(platform, comparison)
    yield f"<details><summary>{code(platform.name)}: {summary}</summary>"
    yield ""
    rows = others + unchanged if level == FULL else others
    if rows:
        yield TABLE_HEAD
        yield from (_row(m, comparison) for m in rows)
    elif unchanged:
        yield f"{count(len(unchanged), 'unchanged row')} left out."
    yield from _failures(platform)
    yield ""
    yield "</details>"


def _folded_rows(rows: list[MetricResult], comparison: Comparison, level: int) -> Iterator[str]:
    if not rows:
        return
    yield ""
    if level > FULL:
        yield f"{count(len(rows), 'unchanged metric')} (rows left out)."
        return
    yield f"<details><summary>{count(len(rows), 'unchanged metric')}</summary>"
    yield ""
    yield TABLE_HEAD
    yield from (_row(m, comparison) for m in rows)
    yield ""
    yield "</details>"


def _platform_summary(platform: PlatformResult, comparison: Comparison) -> str:
    if platform.unavailable:
        return f"comparison not available: {platform.unavailable}"
    total = len(platform.metrics)
    if _quiet(platform):
        floor = percent(comparison.policy.threshold)
        return f"all {count(total, 'metric')} unchanged (within ±{floor})"
    parts = [f"{platform.count(Verdict.UNCHANGED)} unchanged"]
    if _failed(platform):
        parts.append(f"{_failed(platform)} failed")
    for verdict in (Verdict.MISSING, Verdict.NEW, Verdict.NOT_COMPARABLE):
        if platform.count(verdict):
            parts.append(f"{platform.count(verdict)} {verdict.value}")
    return ", ".join(parts)


def _failures(platform: PlatformResult) -> Iterator[str]:
    if not platform.failures:
        return
    yield ""
    for failure in platform.failures:
        side = "PR" if failure.side == "head" else "base"
        yield f"❌ {code(failure.case)} ({side}): {text(failure.reason)}  "


def _failure_list(comparison: Comparison, max_rows: int | None) -> Iterator[str]:
    failures = comparison.failures
    if not failures:
        return
    shown = failures if max_rows is None else failures[:max_rows]
    yield ""
    yield "**Failed cases**"
    yield ""
    for failure in shown:
        side = "PR" if failure.side == "head" else "base"
        yield (f"- {code(failure.platform)} {code(failure.case)} ({side}): {text(failure.reason)}")
    if len(shown) < len(failures):
        yield f"- … and {len(failures) - len(shown)} more"


_ROW_ORDER = {
    Verdict.REGRESSED: 0,
    Verdict.FAILED: 1,
    Verdict.MISSING: 2,
    Verdict.NOT_COMPARABLE: 3,
    Verdict.IMPROVED: 4,
    Verdict.NEW: 5,
    Verdict.UNCHANGED: 6,
}


def _row_order(metric: MetricResult) -> tuple[float, int, float, str]:
    magnitude = -abs(metric.change_pct) if metric.change_pct is not None else 0.0
    # A verdict this table does not know yet sorts just above the unchanged rows.
    order = _ROW_ORDER.get(metric.verdict, _ROW_ORDER[Verdict.UNCHANGED] - 0.5)
    return (order, 0 if metric.beyond_tolerance else 1, magnitude, metric.name)


def _row(metric: MetricResult, comparison: Comparison) -> str:
    unit = f" ({text(metric.unit, 20)})" if metric.unit else ""
    return (
        f"| {code(metric.name)}{unit} | {_stats(metric.base)} | {_stats(metric.head)} "
        f"| {_change(metric, comparison)} |"
    )


def _stats(stats: Stats | None) -> str:
    if stats is None:
        return "—"
    if stats.n == 1:
        return format_number(stats.value)
    return (
        f"{format_number(stats.value)} ({format_number(stats.low)}–"
        f"{format_number(stats.high)}, n={stats.n})"
    )


def _change(metric: MetricResult, comparison: Comparison) -> str:
    verdict, change = metric.verdict, metric.change_pct
    note = f" ({text(metric.note)})" if metric.note else ""
    if verdict is Verdict.NEW:
        return "🆕 new"
    if verdict is Verdict.MISSING:
        return "➖ missing in PR"
    if verdict is Verdict.FAILED:
        return f"❌ {text(metric.note or 'failed')}"
    if verdict is Verdict.NOT_COMPARABLE:
        return f"⚪ not comparable{note}"
    shown = _signed_percent(change) if change is not None else "from 0"
    if verdict is Verdict.REGRESSED and metric.beyond_tolerance:
        _, _, tolerance, _ = comparison.policy.resolve(metric.name)
        return f"🔴 **{shown}** (beyond {percent(tolerance)} tolerance)"
    if verdict is Verdict.REGRESSED:
        return f"🟠 {shown}"
    if verdict is Verdict.IMPROVED:
        return f"🟢 {shown}"
    return f"{shown}{note}"


# Powers of ten between which numbers are written out in full (else in scientific notation).
_PLAIN_MAGNITUDES = (-6, 15)


def format_number(value: float) -> str:
    """Five significant digits, thousands separated, no trailing zeros: ``13.037``, ``20,127``."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else "—"
    magnitude = math.floor(math.log10(abs(value)))
    if not _PLAIN_MAGNITUDES[0] <= magnitude < _PLAIN_MAGNITUDES[1]:
        # Beyond a trillion or below a millionth, digits would flood a cell (1e308 has 309)
        # or round to 0: five significant digits in scientific notation instead.
        mantissa, exponent = f"{value:.4e}".split("e")
        if "." in mantissa:
            mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{int(exponent):+d}".replace("-", MINUS)
    decimals = min(max(4 - magnitude, 0), 9)
    shown = f"{value:,.{decimals}f}"
    if "." in shown:
        shown = shown.rstrip("0").rstrip(".")
    return shown.replace("-", MINUS)


def _signed_percent(change: float) -> str:
    if round(change, 2) == 0:
        return "0.00 %"
    sign = "+" if change > 0 else MINUS
    if abs(change) >= 10 ** _PLAIN_MAGNITUDES[1]:
        return f"{sign}{format_number(abs(change))} %"
    return f"{sign}{abs(change):.2f} %"


def percent(value: float) -> str:
    return f"{value:g} %"


def count(n: int, noun: str) -> str:
    return f"{n} {noun}{plural(n)}"


def plural(n: int) -> str:
    return "" if n == 1 else "s"


def _are(n: int) -> str:
    return "is" if n == 1 else "are"
