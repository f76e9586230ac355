"""Every comment body perfbot writes, composed here and only here, within GitHub's limit.

The App's PR comment and check-run summary, the Actions-only ``perfbot comment`` report
and ``perfbot compare``'s markdown all have one layout::

    marker                         (how perfbot finds its own comment)
    ### Performance report: <headline>
    > notices                      stale banner, re-run line, configuration problems,
                                   artifact members left out: one per quote
    provenance                     the commits compared, the run, the time
    the comparison's sections      (engine/sections.py), or why the report is unreadable
    the history                    this PR's pushes, the target branch's recent values
                                   and their charts (engine/history.py, engine/mermaid.py)
    what was left out to fit
    footer                         the policy, and only what the path in use offers

A report is laid out once, when its run completes: ``prepare`` turns a comparison (or an
unreadable report) and its ``RenderContext`` into a ``Prepared`` report, choosing the
detail level that fits. Its live part, the PR's situation (``Live``: stale banner, re-run
line), changes without a new report: ``compose`` puts the two together, as often as that
changes. The App stores the prepared report (``Prepared.dump``) for that. Every notice
arrives as a typed part and is worded and escaped here.

What the size budget drops, in order: the charts (the ones that do not fit, then all),
then the history's tables, then the comparison's detail (``sections.DETAIL_LEVELS``); the
body says what it left out.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

import orjson

from perfbot.engine.judge import acceptance
from perfbot.engine.judge.compare import Comparison, Policy
from perfbot.engine.judge.notices import Notice
from perfbot.engine.read.collector import fewer_collections
from perfbot.engine.show import wording
from perfbot.engine.show.escape import code, short_sha, text
from perfbot.engine.show.history import History, pushes_section, trend_section
from perfbot.engine.show.mermaid import block, charts_section
from perfbot.engine.show.sections import (
    DETAIL_LEVELS,
    FULL,
    LEFT_OUT,
    NO_TABLES,
    NO_UNCHANGED_ROWS,
    applies,
    format_number,
    headline,
    percent,
    plural,
    sections,
)

__all__ = [
    "GITHUB_BODY_LIMIT",
    "MARKER",
    "NOTICE_RESERVE",
    "Footer",
    "Live",
    "Prepared",
    "RenderContext",
    "Stale",
    "Unreadable",
    "compose",
    "format_number",
    "headline",
    "help_body",
    "prepare",
    "render",
]

MARKER = "<!-- perfbot:report -->"
# GitHub refuses comment bodies over 65,536 characters; bytes are counted here, which is
# never fewer, so a body that fits by this measure fits by GitHub's.
GITHUB_BODY_LIMIT = 65_536
# Room kept free in a report that gets live notices later (stale results, re-runs).
NOTICE_RESERVE = 2_048
UNREADABLE_HEADLINE = "the measurement could not be read"
# Artifact members left out, named one by one; the rest are counted in one more notice.
SHOWN_SKIPPED = 3


class Footer(enum.Enum):
    """Where the body is shown, which decides what its footer may offer."""

    APP = "app"  # the App's comment: /perfbot rerun, the check, .github/perfbot.yml
    ACTIONS = "actions"  # perfbot comment in a workflow: .github/perfbot.yml only
    CLI = "cli"  # perfbot compare: the policy only


@dataclass(frozen=True, slots=True)
class RenderContext:
    """What the body says beyond the comparison; every field comes from perfbot or GitHub,
    except ``skipped``, which names artifact members (escaped here)."""

    head_sha: str | None = None
    base_sha: str | None = None
    base_ref: str | None = None
    run_url: str | None = None
    run_label: str | None = None
    updated_at: datetime | None = None
    config_errors: tuple[str, ...] = ()  # problems of .github/perfbot.yml, one line each
    skipped: tuple[tuple[str, str], ...] = ()  # artifact members left out: name, reason
    # The report's other notices (platforms lined up, confirm before red…), worded here.
    notices: tuple[Notice, ...] = ()
    footer: Footer = Footer.CLI
    rerun_permission: str = "write"
    advisory: bool = True
    limit: int = GITHUB_BODY_LIMIT
    # What the measurement store knows around this report (the App's comment only).
    history: History | None = None


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A report artifact that could not be read: the body says why (``error``, the
    reader's one line, is escaped)."""

    error: str
    policy: Policy = field(default_factory=Policy)


@dataclass(frozen=True, slots=True)
class Stale:
    """The comment shows ``shown_sha`` while the PR's head, ``newest_sha``, is measured."""

    shown_sha: str
    newest_sha: str


@dataclass(frozen=True, slots=True)
class Live:
    """The PR's situation now, shown above the report; it changes without a new report."""

    stale: Stale | None = None
    rerun_by: str | None = None  # the login that asked for a re-run


def document_text(document: dict[str, object]) -> str:
    """A stored report's document (strings, lists of them, ints) as compact JSON, by
    orjson: it escapes every character as ``json.dumps(..., ensure_ascii=False)`` does,
    in a tenth of its time. What it refuses (a lone surrogate) is written by json."""
    try:
        return orjson.dumps(document).decode()
    except orjson.JSONEncodeError:
        return json.dumps(document, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Prepared:
    """A report laid out once: everything of the body but the live notices (markdown)."""

    headline: str
    notices: tuple[str, ...]
    content: str  # provenance, the sections and what was left out
    footer: str

    def dump(self) -> str:
        """The prepared report as the App stores it, for ``load``."""
        return document_text(self.document())

    def document(self) -> dict[str, object]:
        """What ``dump`` writes, before it is JSON (``kept.dump`` adds to it)."""
        return {"prepared": 1, **_fields(self)}

    @classmethod
    def load(cls, stored: str) -> Prepared:
        """A report stored by ``dump``; or, stored before it existed, a whole rendered body
        (marker, headline line, blank line, the rest), taken apart once by its layout."""
        try:
            data = json.loads(stored)
        except ValueError:
            data = None
        if isinstance(data, dict) and data.get("prepared") == 1:
            return cls(
                str(data["headline"]),
                tuple(str(n) for n in data["notices"]),
                str(data["content"]),
                str(data["footer"]),
            )
        _marker, title, rest = [*stored.split("\n", 2), "", ""][:3]
        return cls(title.removeprefix(_TITLE), (), rest.removeprefix("\n").rstrip("\n"), "")


def _fields(prepared: Prepared) -> dict[str, object]:
    return {
        "headline": prepared.headline,
        "notices": list(prepared.notices),
        "content": prepared.content,
        "footer": prepared.footer,
    }


_TITLE = "### Performance report: "


@fewer_collections
def render(comparison: Comparison, context: RenderContext | None = None) -> str:
    """The whole body for ``comparison`` with no live notices; same input, same bytes."""
    return compose(prepare(comparison, context))


def prepare(report: Comparison | Unreadable, context: RenderContext | None = None) -> Prepared:
    """``report`` laid out at the most detail that fits ``context.limit`` (less the room
    kept for live notices where they can come: the App's and the Actions comment)."""
    context = context or RenderContext()
    budget = context.limit - (0 if context.footer is Footer.CLI else NOTICE_RESERVE)
    notices = _report_notices(context)
    provenance = _provenance(context)
    if isinstance(report, Unreadable):
        reason = f"The report artifact could not be read: {report.error}"
        content = _lines(provenance, [f"❌ {text(reason, 300)}"])
        footer = _footer(report.policy, context)
        return _fitted(Prepared(UNREADABLE_HEADLINE, notices, content, footer), budget)
    footer = _footer(report.policy, context)
    # A regression a person accepted that counts again says why, above the report.
    notices += tuple(wording.acceptance_lapsed(p, m) for p, m in acceptance.lapsed(report))
    title = headline(report)
    rerun = context.footer is Footer.APP  # only the App's rows may suggest /perfbot rerun
    history = context.history
    dropped: tuple[str, ...] = ()
    # The full sections are made once (a big report's take a while) where they are tried
    # twice: with the history, and then without it.
    full = None if history is None else list(sections(report, FULL, rerun=rerun))
    if history is not None and full is not None:
        frame = Prepared(title, notices, "", footer)
        with_history = _with_history(
            report, provenance, history, frame, budget=budget, rerun=rerun, full=full
        )
        if isinstance(with_history, Prepared):
            return with_history
        dropped = with_history
    rows = _table_rows(report)
    for level in DETAIL_LEVELS:
        if not applies(report, level):
            continue  # a step that would leave nothing out
        if level < NO_UNCHANGED_ROWS and rows * MIN_ROW_BYTES > budget:
            continue  # a row for every metric cannot fit: not worth writing them out
        lines = full if level == FULL else None
        content = _content(report, provenance, level, rerun=rerun, dropped=dropped, lines=lines)
        prepared = Prepared(title, notices, content, footer)
        if _size(compose(prepared)) <= budget:
            return prepared
    # Last resort for huge inputs: cap the overview and the failure list until it fits.
    rows = max(len(report.platforms), len(report.failures))
    while rows > 0:
        rows //= 2
        content = _content(report, provenance, NO_TABLES, rows, rerun=rerun, dropped=dropped)
        prepared = Prepared(title, notices, content, footer)
        if _size(compose(prepared)) <= budget:
            return prepared
    return _fitted(Prepared(title, notices, "", footer), budget)


# No table row is shorter: its five separators, two spaces and three cells of a character
# each, beside a name in backticks (``rows.row``), and the newline after it.
MIN_ROW_BYTES: Final = 16


def _table_rows(report: Comparison) -> int:
    """How many table rows the levels before ``NO_UNCHANGED_ROWS`` write at least: one per
    metric of every platform that has measurements on both sides."""
    return sum(len(platform.metrics) for platform in report.platforms if not platform.unavailable)


def compose(prepared: Prepared, live: Live | None = None, limit: int = GITHUB_BODY_LIMIT) -> str:
    """The body: ``prepared`` with the live notices of ``live`` above its own.

    A prepared report leaves room for them; should they still not fit (a report stored
    with another budget), the body goes without them rather than over the limit.
    """
    lines = [MARKER, f"{_TITLE}{prepared.headline}", ""]
    for notice in (*_live_notices(live or Live()), *prepared.notices):
        lines += [f"> {notice}", ""]
    if prepared.content:
        lines.append(prepared.content)
    if prepared.footer:
        lines += ["", prepared.footer]
    body = "\n".join(lines) + "\n"
    if live is not None and live != Live() and _size(body) > limit:
        return compose(prepared, None, limit)
    return body


def _fitted(prepared: Prepared, budget: int) -> Prepared:
    """``prepared``, or as much of it as fits: the notices (perfbot's own) and the footer
    are dropped, and at last the headline is cut."""
    if _size(compose(prepared)) <= budget:
        return prepared
    bare = Prepared(prepared.headline, (), prepared.content, "")
    if _size(compose(bare)) <= budget:
        return bare
    room = budget - _size(compose(Prepared("", (), "", "")))
    return Prepared(prepared.headline.encode()[: max(room, 0)].decode(errors="ignore"), (), "", "")


CHARTS_LEFT_OUT = "the charts"
HISTORY_LEFT_OUT = "this PR's earlier pushes and the target branch's recent values"


def _with_history(
    comparison: Comparison,
    provenance: str,
    history: History,
    frame: Prepared,
    *,
    budget: int,
    rerun: bool,
    full: list[str],
) -> Prepared | tuple[str, ...]:
    """The report in full with its history and as many charts as fit; or, when even the
    full report with the history's tables does not fit, what must be left out (the charts,
    then the tables): the comparison's detail is dropped only after them. ``full``: the
    comparison's sections in full."""
    tables: list[str] = []
    for section in (pushes_section(history), trend_section(history)):
        if section:
            tables += ["", *section]

    def fits(extra: list[str], dropped: tuple[str, ...]) -> Prepared | None:
        content = _content(
            comparison, provenance, FULL, rerun=rerun, extra=extra, dropped=dropped, lines=full
        )
        prepared = Prepared(frame.headline, frame.notices, content, frame.footer)
        return prepared if _size(compose(prepared)) <= budget else None

    without_charts = fits(tables, ())
    if without_charts is not None:
        room = budget - _size(compose(without_charts)) - 2  # the blank line before them
        charts = charts_section(history.charts, room)
        if charts.shown:
            fitted = fits([*tables, "", charts.text], ())
            if fitted is not None:
                return fitted
        if not charts.dropped:
            return without_charts
    has_charts = any(block(series) is not None for series in history.charts)
    charts_out = (CHARTS_LEFT_OUT,) if has_charts else ()
    if tables:
        fitted = fits(tables, charts_out)
        if fitted is not None:
            return fitted
    return (*charts_out, HISTORY_LEFT_OUT) if tables else charts_out


def _content(
    comparison: Comparison,
    provenance: str,
    level: int,
    max_rows: int | None = None,
    *,
    rerun: bool = False,
    extra: list[str] | None = None,
    dropped: tuple[str, ...] = (),
    lines: list[str] | None = None,
) -> str:
    """The sections at ``level``, then ``extra`` (the history), then what was left out:
    ``dropped`` (parts of the history) and the detail levels' steps. ``lines``: the
    sections at ``level``, when already made."""
    if lines is None:
        lines = list(sections(comparison, level, max_rows, rerun=rerun))
    shown = [*lines, *(extra or ())]
    steps = range(1, level + 1)
    left = [*dropped, *(LEFT_OUT[n] for n in steps if applies(comparison, n))]
    if left:
        shown += [
            "",
            f"*Left out to stay within GitHub's comment size limit: {', '.join(left)}.*",
        ]
    return _lines(provenance, shown)


def _lines(provenance: str, shown: list[str]) -> str:
    return "\n".join(([provenance, ""] if provenance else []) + shown)


def _size(body: str) -> int:
    return len(body.encode("utf-8"))


def _live_notices(live: Live) -> list[str]:
    notices = []
    if live.stale is not None:
        notices.append(
            f"⏳ These numbers are for the previous commit {short_sha(live.stale.shown_sha)}; "
            f"{short_sha(live.stale.newest_sha)} is being measured."
        )
    if live.rerun_by:
        notices.append(
            f"🔁 Re-run requested by {code(live.rerun_by)}; the numbers below will be replaced."
        )
    return notices


def _report_notices(context: RenderContext) -> tuple[str, ...]:
    """The configuration's problems, the artifact members left out (the first few named,
    the count of the others always said, so that a notice that matters can be pushed out
    of sight but never out of the count), then the report's other notices."""
    notices = [f"⚠️ {text(error)}" for error in context.config_errors]
    notices += [
        f"⚠️ artifact member {text(name)} skipped: {text(reason)}"
        for name, reason in context.skipped[:SHOWN_SKIPPED]
    ]
    rest = len(context.skipped) - SHOWN_SKIPPED
    if rest > 0:
        notices.append(f"⚠️ … and {rest} more artifact member{plural(rest)} skipped.")
    return (*notices, *(wording.markdown(notice) for notice in context.notices))


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


def _footer(policy: Policy, context: RenderContext) -> str:
    """The policy, and only what the path in use offers: ``/perfbot rerun`` and the check
    exist with the App alone, ``.github/perfbot.yml`` is read by the App and the Actions
    path, not by ``perfbot compare``."""
    numbers = f"Noise floor ±{percent(policy.threshold)}, tolerance {percent(policy.tolerance)}."
    if context.footer is Footer.CLI:
        return f"<sub>{numbers}</sub>"
    advisory = "Advisory: this report never blocks a merge."
    if context.footer is Footer.ACTIONS:
        return f"<sub>{advisory} {numbers} Configure or opt out in `.github/perfbot.yml`.</sub>"
    if not context.advisory:
        advisory = "This repository fails the check on a regression beyond tolerance."
    return (
        f"<sub>{advisory} {numbers} Re-measure with `/perfbot rerun` "
        f"({text(context.rerun_permission, 20)} access). "
        "Configure or opt out in `.github/perfbot.yml`.</sub>"
    )


def help_body(permission: str, accept_permission: str = "write") -> str:
    """The answer to ``/perfbot help``: the commands, and who may use them."""
    return (
        "perfbot commands (write them at the start of a line in a PR comment):\n\n"
        "- `/perfbot rerun` — re-run the performance measurement for the PR's current head "
        f"(needs at least {code(permission)} permission on this repository)\n"
        "- `/perfbot accept [metric-glob …] [-- reason]` — accept the regressions the report "
        "shows (those matching the globs, e.g. `udp*`): they are shown as accepted and no "
        "longer fail the check while they stay within noise of the accepted value "
        f"(needs at least {code(accept_permission)} permission)\n"
        "- `/perfbot unaccept [metric-glob …]` — undo that (same permission)\n"
        "- `/perfbot help` — show this list"
    )
