"""Every notice of a judged report in words: for the comment (``markdown``) and for a
terminal or a log (``plain``); and the runs of a case left out for their settings
(``runs_left_out``), which the comment and the terminal show beside the case's platform.

The notices are facts (``perfbot.engine.judge.notices``); here alone they become
sentences, so a notice reads the same in the App's comment, the Actions comment and
``perfbot compare``. Names in them are untrusted: ``markdown`` escapes the whole sentence
where it holds a name, and a caller printing ``plain`` cleans it (``escape.clean``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from perfbot.engine.judge.notices import (
    BaselineUnavailable,
    BranchChanged,
    Confirming,
    NoConfirmation,
    NotConfirmed,
    Notice,
    PlatformLinedUp,
    PlatformUnmatched,
    RepeatedAttempt,
    Settled,
)
from perfbot.engine.judge.results import Acceptance, MetricResult
from perfbot.engine.read.runs import RunsLeftOut, differing
from perfbot.engine.show.escape import code, short_sha, text
from perfbot.engine.show.explain import amount
from perfbot.engine.show.numbers import format_number
from perfbot.model import Settings

# A sentence holding a name is cut at this many characters (a name may be huge).
MAX_NOTICE_CHARS: Final = 300

_NO_CONFIRMATION: Final = {
    NoConfirmation.FORK: (
        "a fork's PR is not re-run automatically (a maintainer can `/perfbot rerun`)"
    ),
    NoConfirmation.ONCE_ALREADY: "this commit was re-run to confirm once already",
    NoConfirmation.GITHUB_REFUSED: "GitHub refused the re-run",
}


def plain(notice: Notice) -> str:
    """The notice as one sentence of plain words, names as they are (clean them to print)."""
    match notice:
        case PlatformLinedUp(side=side, platform=platform, compared_as=compared_as):
            return (
                f"{side} platform {platform} was compared as {compared_as}, "
                f"the {notice.other_side}'s platform"
            )
        case PlatformUnmatched(name=name):
            return f"--platform {name} matches no platform measured"
        case BaselineUnavailable():
            return f"comparison not available: {unavailable(notice)}"
        case BranchChanged(branch=branch, sha=sha, issue=issue, metrics=metrics):
            which = "a metric" if metrics == 1 else f"{metrics} metrics"
            return (
                f"{branch} changed level at {sha[:7]} for {which} of this report (issue "
                f"{issue}): a move shown here may be that change, not this PR's"
            )
        case _:
            return _confirmation(notice)


def markdown(notice: Notice) -> str:
    """The notice as the comment shows it: a mark, then the sentence, escaped."""
    match notice:
        case PlatformLinedUp():
            return f"ℹ️ {text(plain(notice), MAX_NOTICE_CHARS)}"
        case PlatformUnmatched() | BaselineUnavailable():
            return f"⚠️ {text(plain(notice), MAX_NOTICE_CHARS)}"
        case Confirming():
            return f"⏳ {_confirmation(notice)}"
        case BranchChanged(branch=branch, sha=sha, issue=issue, url=url, metrics=metrics):
            which = "a metric" if metrics == 1 else f"{metrics} metrics"
            where = f"[issue {issue}]({url})" if url else f"issue {issue}"
            return (
                f"ℹ️ {code(branch, 60)} changed level at {short_sha(sha)} for {which} of this "
                f"report ({where}): a move shown here may be that change, not this PR's."
            )
        case _:
            return f"ℹ️ {_confirmation(notice)}"


def unavailable(notice: BaselineUnavailable) -> str:
    """Why the baseline cannot be compared against, in words (the path as given)."""
    if not notice.exists:
        return f"the baseline {notice.path} does not exist"
    return f"no file of the baseline {notice.path} could be read"


def _confirmation(notice: Notice) -> str:
    """The sentences of confirm before red: perfbot's words and numbers only (a detail of
    ``NOT_ALLOWED`` is escaped)."""
    match notice:
        case Confirming(count=count, attempt=attempt, run_id=run_id):
            regressions = "regression" if count == 1 else "regressions"
            return (
                f"Confirming {count} {regressions} beyond tolerance: a stochastic tool's "
                f"result is measured again before it is called (attempt {attempt} of run "
                f"{run_id}; both attempts' runs will be compared together)."
            )
        case NotConfirmed(reason=reason, detail=detail):
            why = (
                text(detail, MAX_NOTICE_CHARS)
                if reason is NoConfirmation.NOT_ALLOWED
                else _NO_CONFIRMATION[reason]
            )
            return f"Not measured again before calling the regressions: {why}."
        case Settled(attempt=attempt, confirmed=held, not_reproduced=gone):
            return (
                f"Attempt {attempt} re-measured what attempt {attempt - 1} would have "
                f"called red, and both attempts' runs were compared together: {held} "
                f"confirmed, {gone} not reproduced."
            )
        case RepeatedAttempt(attempt=attempt):
            return (
                f"Attempt {attempt} uploaded no report of its own: the regressions are "
                f"called on attempt {attempt - 1} alone."
            )
    raise AssertionError(f"a notice without words: {notice!r}")


# A case whose runs disagree in settings names at most this many groups of files left out
# (files with the same difference are one group) and files per group; the rest are counted.
MAX_LEFT_OUT_GROUPS: Final = 4
MAX_FILES_NAMED: Final = 3


def runs_left_out(
    runs: RunsLeftOut, name: Callable[[str], str], value: Callable[[str], str]
) -> str:
    """The files of a case that were left out for their settings, and the ones kept, with
    only the settings that differ: ``tcp_rx_2.json ran with streams 2, tcp_rx_3.json with
    omit 1; kept tcp_rx_1.json (streams 1, omit 0)``.

    ``name`` writes a file name, ``value`` a setting's name or value, each escaped and cut
    for the medium: the sentence is never cut as a whole, so the differences always show.
    """
    groups: dict[tuple[str, ...], list[str]] = {}
    shown_settings: dict[str, None] = {}
    for path, settings in runs.left_out:
        names = differing(runs.settings, settings)
        shown_settings.update(dict.fromkeys(names))
        groups.setdefault(_settings_words(names, settings, value), []).append(path)
    parts = []
    for index, (words, paths) in enumerate(list(groups.items())[:MAX_LEFT_OUT_GROUPS]):
        ran = "ran with" if index == 0 else "with"
        parts.append(f"{_files(paths, name)} {ran} {', '.join(words)}")
    rest = sum(len(paths) for paths in list(groups.values())[MAX_LEFT_OUT_GROUPS:])
    if rest:
        parts.append(f"{rest} more file{'' if rest == 1 else 's'} with other settings")
    kept_words = _settings_words(tuple(shown_settings), runs.settings, value)
    kept = f"kept {_files(list(runs.kept), name)}" if runs.kept else "kept none of its files"
    return f"{', '.join(parts)}; {kept} ({', '.join(kept_words)})"


def _settings_words(
    names: tuple[str, ...], settings: Settings, value: Callable[[str], str]
) -> tuple[str, ...]:
    stated = dict(settings)
    return tuple(
        f"{value(key)} {value(stated[key])}" if key in stated else f"{value(key)} not stated"
        for key in names
    )


def _files(paths: list[str], name: Callable[[str], str]) -> str:
    named = [name(path) for path in paths[:MAX_FILES_NAMED]]
    more = len(paths) - len(named)
    if more:
        named.append(f"{more} more")
    return named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"


# An acceptance's reason, as the row quotes it (the comment quotes it in full nowhere else).
MAX_REASON_CHARS: Final = 120


def accepted_by(acceptance: Acceptance) -> str:
    """``accepted by <code>writer</code>: larger buffers`` (markdown; the login as code,
    never a live mention, the reason escaped)."""
    reason = f": {text(acceptance.reason, MAX_REASON_CHARS)}" if acceptance.reason else ""
    return f"accepted by {code(acceptance.login, 40)}{reason}"


NO_LONGER_ACCEPTED: Final = "no longer accepted"


def acceptance_lapsed(platform: str, metric: MetricResult) -> str:
    """Why a metric a person accepted counts as a regression again, as a notice line."""
    acceptance = metric.acceptance
    assert acceptance is not None  # only an acceptance can lapse
    who = (
        f"⚠️ The acceptance of {code(metric.name, 60)} on {code(platform, 40)} by "
        f"{code(acceptance.login, 40)} no longer holds"
    )
    if acceptance.settings_differ:
        return (
            f"{who}: it was accepted at {short_sha(acceptance.sha)} for runs with other settings."
        )
    unit = f" {text(metric.unit, 20)}" if metric.unit else ""
    moved = (
        "moved from 0"
        if acceptance.change is None
        else f"moved {amount(acceptance.change, metric.scale)}"
    )
    return (
        f"{who}: it measured {format_number(acceptance.value)}{unit} when accepted at "
        f"{short_sha(acceptance.sha)} and has {moved} from there: a regression from the "
        "accepted level."
    )
