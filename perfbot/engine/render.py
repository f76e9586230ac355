"""A Comparison as the markdown body of perfbot's PR comment, within GitHub's size limit."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from perfbot.engine.compare import Comparison, MetricResult, PlatformResult, Stats, Verdict
from perfbot.engine.escape import code, short_sha, text

MARKER = "<!-- perfbot:report -->"
# GitHub refuses comment bodies over 65,536 characters; bytes are counted here, which is
# never fewer, so a body that fits by this measure fits by GitHub's.
GITHUB_BODY_LIMIT = 65_536
MINUS = "\u2212"
TABLE_HEAD = "| metric | base | PR | change |\n|---|--:|--:|--:|"


@dataclass(frozen=True, slots=True)
class RenderContext:
    """What the comment says beyond the comparison; every field comes from perfbot or GitHub."""

    head_sha: str | None = None
    base_sha: str | None = None
    base_ref: str | None = None
    run_url: str | None = None
    run_label: str | None = None
    updated_at: datetime | None = None
    notices: tuple[str, ...] = ()
    rerun_permission: str = "write"
    advisory: bool = True
    limit: int = GITHUB_BODY_LIMIT


# Detail levels, dropped in this order when the body is too long.
_FULL, _NO_UNCHANGED_ROWS, _NO_UNCHANGED_PLATFORMS, _NO_TABLES = range(4)
_LEFT_OUT = {
    _NO_UNCHANGED_ROWS: "the unchanged rows",
    _NO_UNCHANGED_PLATFORMS: "the platforms where nothing moved",
    _NO_TABLES: "the per-metric tables",
}


def render(comparison: Comparison, context: RenderContext | None = None) -> str:
    """The comment body; the same input always gives the same bytes."""
    context = context or RenderContext()
    for level in (_FULL, _NO_UNCHANGED_ROWS, _NO_UNCHANGED_PLATFORMS, _NO_TABLES):
        body = "\n".join(_document(comparison, context, level)) + "\n"
        if _size(body) <= context.limit:
            return body
    return _squeeze(comparison, context)


def _size(body: str) -> int:
    return len(body.encode("utf-8"))


def _document(
    comparison: Comparison, context: RenderContext, level: int, max_rows: int | None = None
) -> Iterator[str]:
    yield MARKER
    yield f"### Performance report: {headline(comparison)}"
    yield ""
    for notice in context.notices:
        yield f"> {notice}"
        yield ""
    provenance = _provenance(context)
    if provenance:
        yield provenance
        yield ""
    platforms = comparison.platforms
    if level >= _NO_UNCHANGED_PLATFORMS:
        platforms = tuple(p for p in platforms if not _quiet(p))
    yield from _overview(platforms, max_rows)
    hidden = len(comparison.platforms) - len(platforms)
    if hidden:
        yield ""
        yield f"{hidden} platform{_s(hidden)} where nothing moved {_are(hidden)} not shown."
    for platform in platforms if level < _NO_TABLES else ():
        yield ""
        yield from _platform_section(platform, comparison, level)
    if level >= _NO_TABLES:
        yield from _failure_list(comparison, max_rows)
    if level > _FULL:
        left_out = ", ".join(_LEFT_OUT[n] for n in range(1, level + 1))
        yield ""
        yield f"*Left out to stay within GitHub's comment size limit: {left_out}.*"
    yield ""
    yield _footer(comparison, context)


def headline(comparison: Comparison) -> str:
    """The outcome in words: ``2 regressions, 1 improvement, 1 failed case``."""
    summary = comparison.summary()
    parts = []
    regressed = summary[Verdict.REGRESSED]
    if regressed:
        beyond = comparison.regressed_beyond_tolerance
        detail = f" ({beyond} beyond tolerance)" if 0 < beyond < regressed else ""
        parts.append(f"{regressed} regression{_s(regressed)}{detail}")
    if summary[Verdict.IMPROVED]:
        parts.append(_count(summary[Verdict.IMPROVED], "improvement"))
    failed = len(comparison.failures)
    if failed:
        parts.append(_count(failed, "failed case"))
    if summary[Verdict.MISSING]:
        parts.append(_count(summary[Verdict.MISSING], "missing metric"))
    if parts:
        return ", ".join(parts)
    if comparison.platforms and all(p.unavailable for p in comparison.platforms):
        reasons = sorted({p.unavailable or "" for p in comparison.platforms})
        return f"comparison not available ({'; '.join(reasons)})"
    if not comparison.platforms:
        return "no measurements found"
    return "no change beyond the noise floor"


def _provenance(context: RenderContext) -> str:
    parts = []
    if context.head_sha and context.base_sha:
        base = f" ({code(context.base_ref)})" if context.base_ref else ""
        parts.append(
            f"Compared {short_sha(context.head_sha)} (this PR, rebased) "
            f"with {short_sha(context.base_sha)}{base}"
        )
    if context.run_url:
        parts.append(f"[{text(context.run_label or 'measurement run')}]({context.run_url})")
    if context.updated_at:
        parts.append(f"updated {context.updated_at:%Y-%m-%d %H:%M} UTC")
    return " · ".join(parts)


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
        yield f"| … {rest} more platform{_s(rest)} | | | | |"


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


def _platform_section(
    platform: PlatformResult, comparison: Comparison, level: int
) -> Iterator[str]:
    unchanged = [m for m in platform.metrics if m.verdict is Verdict.UNCHANGED]
    others = [m for m in platform.metrics if m.verdict is not Verdict.UNCHANGED]
    others.sort(key=_row_order)
    if platform.moved:
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
    rows = others + unchanged if level == _FULL else others
    if rows:
        yield TABLE_HEAD
        yield from (_row(m, comparison) for m in rows)
    elif unchanged:
        yield f"{_count(len(unchanged), 'unchanged row')} left out."
    yield from _failures(platform)
    yield ""
    yield "</details>"


def _folded_rows(rows: list[MetricResult], comparison: Comparison, level: int) -> Iterator[str]:
    if not rows:
        return
    yield ""
    if level > _FULL:
        yield f"{_count(len(rows), 'unchanged metric')} (rows left out)."
        return
    yield f"<details><summary>{_count(len(rows), 'unchanged metric')}</summary>"
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
        floor = _percent(comparison.policy.threshold)
        return f"all {_count(total, 'metric')} unchanged (within ±{floor})"
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


def _row_order(metric: MetricResult) -> tuple[int, int, float, str]:
    magnitude = -abs(metric.change_pct) if metric.change_pct is not None else 0.0
    return (_ROW_ORDER[metric.verdict], 0 if metric.beyond_tolerance else 1, magnitude, metric.name)


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
        return f"🔴 **{shown}** (beyond {_percent(tolerance)} tolerance)"
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


def _percent(value: float) -> str:
    return f"{value:g} %"


def _footer(comparison: Comparison, context: RenderContext) -> str:
    policy = comparison.policy
    advisory = (
        "Advisory: this report never blocks a merge."
        if context.advisory
        else "This repository fails the check on a regression beyond tolerance."
    )
    return (
        f"<sub>{advisory} Noise floor ±{_percent(policy.threshold)}, tolerance "
        f"{_percent(policy.tolerance)}. Re-measure with `/perfbot rerun` "
        f"({text(context.rerun_permission, 20)} access). "
        "Configure or opt out in `.github/perfbot.yml`.</sub>"
    )


def _squeeze(comparison: Comparison, context: RenderContext) -> str:
    """Last resort for huge inputs: cap the overview and the failure list until it fits."""
    rows = max(len(comparison.platforms), len(comparison.failures))
    while rows > 0:
        rows //= 2
        body = "\n".join(_document(comparison, context, _NO_TABLES, rows)) + "\n"
        if _size(body) <= context.limit:
            return body
    # Only the notices can still be too long: they come from perfbot, so cut them.
    marker_and_headline = f"{MARKER}\n### Performance report: {headline(comparison)}\n"
    return marker_and_headline[: context.limit]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{_s(n)}"


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _are(n: int) -> str:
    return "is" if n == 1 else "are"


# Room kept free in the App's report for notices added later (stale results, re-runs).
NOTICE_RESERVE = 2_048
MAX_NOTICE_CHARS = 400


def with_notices(body: str, notices: Sequence[str]) -> str:
    """``body`` with perfbot's notices inserted under the headline.

    Notices are perfbot's own markdown (any foreign part already escaped); each is cut
    to ``MAX_NOTICE_CHARS`` so that bodies rendered with ``NOTICE_RESERVE`` still fit.
    """
    marker, headline, rest = ([*body.split("\n", 2), "", ""])[:3]
    block = "".join(f"> {notice[:MAX_NOTICE_CHARS]}\n>\n" for notice in notices[:4]).rstrip(">\n")
    return f"{marker}\n{headline}\n\n{block}\n{rest}"


# Skipped artifact members named one by one; the rest are counted in one more notice.
SHOWN_SKIPPED = 3


def skipped_notices(skipped: Sequence[tuple[str, str]]) -> list[str]:
    """Notices for artifact members left out (name, reason; both untrusted, escaped here).

    The first few are named; the count of the others is always said, so a notice that
    matters can be pushed out of sight but never out of the count.
    """
    notices = [
        f"⚠️ artifact member {text(name)} skipped: {text(reason)}"
        for name, reason in skipped[:SHOWN_SKIPPED]
    ]
    rest = len(skipped) - SHOWN_SKIPPED
    if rest > 0:
        notices.append(f"⚠️ … and {rest} more artifact member{_s(rest)} skipped.")
    return notices


def render_error(reason: str, context: RenderContext | None = None) -> str:
    """The comment when the report itself could not be read; ``reason`` is escaped."""
    context = context or RenderContext()
    lines = [MARKER, "### Performance report: the measurement could not be read", ""]
    lines += [f"> {notice}\n" for notice in context.notices]
    provenance = _provenance(context)
    if provenance:
        lines += [provenance, ""]
    lines += [f"❌ {text(reason, 300)}", "", _footer(Comparison(()), context)]
    return "\n".join(lines) + "\n"
