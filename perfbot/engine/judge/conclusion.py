"""What perfbot's check run says about a comparison: its conclusion and title.

Decided here, beside ``compare``, so that the verdict on a PR is read in the engine; the
App's handler only writes it. The summary is the comment body (``render.compose``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from perfbot.engine.compare import Comparison, Verdict
from perfbot.engine.sections import headline

Conclusion = Literal["success", "neutral", "failure"]
UNREADABLE_TITLE = "the report artifact could not be read"


@dataclass(frozen=True, slots=True)
class CheckRun:
    """The check run's outcome: its conclusion, title and summary (markdown)."""

    conclusion: Conclusion
    title: str
    summary: str


def for_comparison(comparison: Comparison, summary: str, *, fail_on_regression: bool) -> CheckRun:
    """Success when nothing regressed; failure for a regression beyond tolerance when the
    repository asks for it (``fail_on_regression``); neutral otherwise: a regression
    within tolerance, or one beyond it in an advisory repository."""
    conclusion: Conclusion = "neutral"
    if comparison.regressed_beyond_tolerance and fail_on_regression:
        conclusion = "failure"
    elif not comparison.summary()[Verdict.REGRESSED]:
        conclusion = "success"
    return CheckRun(conclusion, headline(comparison), summary)


def for_unreadable(summary: str) -> CheckRun:
    """A report that could not be read proves nothing either way: neutral."""
    return CheckRun("neutral", UNREADABLE_TITLE, summary)
