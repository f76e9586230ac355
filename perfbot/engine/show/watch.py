"""The words of the default branch's watch: the GitHub issue about a change of level
(``perfbot.engine.judge.changes``), its title, and the comments that close it.

One issue per commit at which metrics changed (``IssueFacts.sha``): every metric that
changed there is a row of it, so a burst of fifty changing metrics is one issue. Its body
says what changed and by how much against the noise, where (the suspect commit, or the
unmeasured range between the last commit at the old level and the first at the new one,
with GitHub's compare link and the PRs that merged them), a chart of each metric's series
with the step marked, and what to do next. A hidden marker names the commit, so that the
App finds its own issue again and edits it in place as commits arrive.

Names (platforms, metrics, units, PR titles) come from artifacts or from people: in the
body they are escaped as everywhere (``escape.text`` and ``code``); in the title, which
GitHub shows as plain text, ``escape.title`` breaks what would still link.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from perfbot.engine.judge.changes import MIN_SEGMENT, ChangePoint, Direction, Level, Shape
from perfbot.engine.show import mermaid
from perfbot.engine.show.change_table import change_text
from perfbot.engine.show.escape import code, short_sha, text, title
from perfbot.engine.show.numbers import format_number

MARKER_PREFIX: Final = "<!-- perfbot:watch "
# GitHub refuses issue bodies over 65,536 characters; bytes are counted, never fewer.
ISSUE_BODY_LIMIT: Final = 65_536
# The rows and charts an issue shows at most: a burst beyond this is counted, not listed.
MAX_ROWS: Final = 50
MAX_CHARTS: Final = 5
# The unmeasured commits and the PRs between the old level and the new one, named at most.
MAX_SUSPECTS: Final = 10
MAX_PULLS: Final = 10
MAX_TITLE_NAME: Final = 60


@dataclass(frozen=True, slots=True)
class WatchedChange:
    """One metric's change, and the chart of its series: ``(short sha, value, level)`` per
    commit, oldest first, in the metric's own unit."""

    change: ChangePoint
    points: tuple[tuple[str, float, float], ...] = ()


@dataclass(frozen=True, slots=True)
class PullRef:
    """A pull request that merged a commit of the suspect range (its title is untrusted)."""

    number: int
    title: str


@dataclass(frozen=True, slots=True)
class IssueFacts:
    """Where the changes are, from GitHub and the store (nothing from a report).

    ``sha``: the first commit at the new level; ``previous_sha``: the last measured one at
    the old level; ``between``: the commits after it up to ``sha``, first-parent order, the
    suspects (``sha`` itself last). ``permission``: who may ``/perfbot accept``.
    """

    repository: str  # OWNER/NAME, as GitHub spells it
    branch: str
    sha: str
    previous_sha: str
    between: tuple[str, ...] = ()
    pulls: tuple[PullRef, ...] = ()
    permission: str = "write"
    server_url: str = "https://github.com"


def marker(sha: str) -> str:
    """The hidden first line of the issue about the change at commit ``sha``."""
    digits = "".join(c for c in sha.lower() if c in "0123456789abcdef")
    return f"{MARKER_PREFIX}{digits} -->"


def issue_title(changes: Sequence[ChangePoint], sha: str) -> str:
    """``perfbot: `udp_500M.receiver_mbps` on `qemu_x86` −6.1 % since `abc1234```, or the
    count of metrics when several changed at the commit."""
    since = f"since `{sha[:7]}`"
    if len(changes) == 1:
        (change,) = changes
        metric, platform = title(change.metric, MAX_TITLE_NAME), title(change.platform, 40)
        return f"perfbot: `{metric}` on `{platform}` {change_text(change)} {since}"
    worse = sum(c.direction is Direction.REGRESSION for c in changes)
    better = len(changes) - worse
    kinds = ", ".join(
        part for part in (_count(worse, "regression"), _count(better, "improvement")) if part
    )
    return f"perfbot: {len(changes)} metrics changed {since} ({kinds})"


def issue_body(changes: Sequence[WatchedChange], facts: IssueFacts) -> str:
    """The issue's markdown, within GitHub's limit (charts are dropped first, then rows)."""
    ordered = sorted(changes, key=lambda w: (-abs(w.change.change), w.change.platform))
    for charts, rows in ((MAX_CHARTS, MAX_ROWS), (0, MAX_ROWS), (0, 10)):
        body = _body(ordered, facts, charts=charts, rows=rows)
        if len(body.encode("utf-8")) <= ISSUE_BODY_LIMIT:
            return body
    return _body(ordered[:1], facts, charts=0, rows=1)


def returned_comment(change: ChangePoint, returned_sha: str) -> str:
    """The comment that closes an issue whose metrics are back at their old level."""
    return (
        f"The level of {code(change.metric)} on {code(change.platform)} is back where it was "
        f"before {short_sha(change.sha)} since {short_sha(returned_sha)}: closing. perfbot "
        "opens a new issue should it change again."
    )


def gone_comment() -> str:
    """The comment that closes an issue whose change more commits showed to be noise."""
    return (
        "More commits were measured since, and the change this issue is about is no longer "
        "found: it was noise. Closing."
    )


def superseded_comment() -> str:
    """The comment that closes an issue whose changes a later accepted level covers."""
    return (
        "A later level of the metrics this issue is about was accepted as their baseline: "
        "this change is behind it. Closing."
    )


def accepted_comment(login: str, reason: str, count: int) -> str:
    """The comment that closes an issue whose new level a maintainer accepted."""
    why = f": {text(reason, 300)}" if reason.strip() else ""
    metrics = "the new level" if count == 1 else f"the new levels of {count} metrics"
    return (
        f"Accepted by {code(login, 40)}{why}. perfbot judges {metrics} as the baseline from "
        "now on, and closes this issue."
    )


def _body(changes: Sequence[WatchedChange], facts: IssueFacts, *, charts: int, rows: int) -> str:
    lines = [
        marker(facts.sha),
        f"### Performance change on {code(facts.branch, 60)} at {short_sha(facts.sha)}",
        "",
        _summary(changes),
        "",
        "| metric | platform | before | after | change | confidence |",
        "|---|---|--:|--:|--:|--:|",
        *(_row(w.change) for w in changes[:rows]),
    ]
    if len(changes) > rows:
        lines.append(f"| … and {len(changes) - rows} more | | | | | |")
    lines += ["", *_where(facts), ""]
    blocks = [b for w in changes[:charts] if (b := _chart(w, facts.branch)) is not None]
    if blocks:
        noun = "chart" if len(blocks) == 1 else "charts"
        lines += [f"<details><summary>{len(blocks)} {noun} of the branch's series</summary>", ""]
        for block in blocks:
            lines += [block, ""]
        lines += ["</details>", ""]
    lines += _next_steps(facts)
    return "\n".join(lines) + "\n"


def _chart(watched: WatchedChange, branch: str) -> str | None:
    change = watched.change
    return mermaid.change_block(
        watched.points,
        metric=change.metric,
        unit=change.unit,
        platform=change.platform,
        branch=branch,
    )


def _summary(changes: Sequence[WatchedChange]) -> str:
    first = changes[0].change
    if len(changes) == 1:
        shape = " (a slow drift, not one commit)" if first.shape is Shape.DRIFT else ""
        return (
            f"{code(first.metric)} on {code(first.platform)} moved {change_text(first)}"
            f"{shape}: a {first.direction.value}, measured by the {first.before.commits} "
            f"commits before it and the {first.after.commits} since."
        )
    worse = sum(w.change.direction is Direction.REGRESSION for w in changes)
    return (
        f"{len(changes)} metrics changed level at this commit ({worse} "
        f"regression{'s' if worse != 1 else ''}), each measured by the commits before and "
        "after it."
    )


def _row(change: ChangePoint) -> str:
    confidence = "exact (deterministic)" if change.deterministic else _percent(change.confidence)
    return (
        f"| {code(change.metric)} | {code(change.platform)} | {_level(change.before, change)} "
        f"| {_level(change.after, change)} | {_signed(change)} | {confidence} |"
    )


def _level(level: Level, change: ChangePoint) -> str:
    unit = f" {text(change.unit, 20)}" if change.unit else ""
    spread = ""
    if level.low != level.high:
        spread = f", IQR {format_number(level.low)}–{format_number(level.high)}"
    plural = "s" if level.commits != 1 else ""
    return f"{format_number(level.value)}{unit}{spread}, {level.commits} commit{plural}"


def _signed(change: ChangePoint) -> str:
    mark = "🔴" if change.direction is Direction.REGRESSION else "🟢"
    return f"{mark} **{change_text(change)}**"


def _suspects(facts: IssueFacts) -> list[str]:
    """The commits that may have made the change: after the last at the old level, up to
    and with the first at the new one."""
    return [sha for sha in facts.between if sha != facts.previous_sha] or [facts.sha]


def _where(facts: IssueFacts) -> list[str]:
    repo = f"{facts.server_url}/{facts.repository}"
    suspects = _suspects(facts)
    if len(suspects) == 1:
        lines = [f"**Suspect commit**: [{short_sha(suspects[0])}]({repo}/commit/{suspects[0]})."]
    else:
        shown = ", ".join(short_sha(sha) for sha in suspects[-MAX_SUSPECTS:])
        more = len(suspects) - MAX_SUSPECTS
        lines = [
            f"**Suspect range**: {len(suspects)} commits after {short_sha(facts.previous_sha)}"
            f" (the last at the old level) up to {short_sha(facts.sha)} (the first at the "
            f"new level) were not measured apart: "
            f"[compare]({repo}/compare/{facts.previous_sha}...{facts.sha}) "
            f"({'… ' if more > 0 else ''}{shown})."
        ]
    if facts.pulls:
        named = ", ".join(
            f"[PR {pull.number}]({repo}/pull/{pull.number}) ({text(pull.title, 80)})"
            for pull in facts.pulls[:MAX_PULLS]
        )
        lines.append(f"Merged by: {named}.")
    return lines


def _next_steps(facts: IssueFacts) -> list[str]:
    look = "the suspect commit" if len(_suspects(facts)) == 1 else "the commits of the range"
    return [
        "**What next**: if this change is expected, comment `/perfbot accept` (with a reason "
        f"after it; {text(facts.permission, 20)} access): perfbot takes the new level as the "
        f"baseline and closes this issue (closing it by hand does the same). Otherwise look "
        f"at {look}; the issue is edited as more commits are measured, and closed when the "
        "level returns.",
        "",
        f"<sub>perfbot watches the measured pushes to {code(facts.branch, 60)}: a change is "
        f"called once {MIN_SEGMENT} commits hold the new level (one outlying commit is no "
        "change). Configure it under `watch:` in `.github/perfbot.yml`.</sub>",
    ]


def _percent(confidence: float) -> str:
    if confidence >= 0.9999:
        return "over 99.99 %"
    return f"{confidence * 100:.2f} %"


def _count(n: int, noun: str) -> str:
    return "" if n == 0 else f"{n} {noun}{'s' if n != 1 else ''}"
