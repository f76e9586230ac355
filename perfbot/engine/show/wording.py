"""Every notice of a judged report in words: for the comment (``markdown``) and for a
terminal or a log (``plain``).

The notices are facts (``perfbot.engine.judge.notices``); here alone they become
sentences, so a notice reads the same in the App's comment, the Actions comment and
``perfbot compare``. Names in them are untrusted: ``markdown`` escapes the whole sentence
where it holds a name, and a caller printing ``plain`` cleans it (``escape.clean``).
"""

from __future__ import annotations

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
from perfbot.engine.show.escape import code, short_sha, text

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
            return (
                f"ℹ️ {code(branch, 60)} changed level at {short_sha(sha)} for {which} of this "
                f"report ([issue {issue}]({url})): a move shown here may be that change, not "
                "this PR's."
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
            if held + gone == 0:
                return f"Attempt {attempt} was compared together with attempt {attempt - 1}."
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
