"""What perfbot's check run shows: the engine's conclusion, a title and the summary.

The conclusion is the judge's (``judge/conclusion.py``); the title is the comment's
headline and the summary the comment body (``render.compose``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from perfbot.engine.judge import conclusion
from perfbot.engine.judge.compare import Comparison
from perfbot.engine.judge.conclusion import Conclusion
from perfbot.engine.show.sections import headline

UNREADABLE_TITLE: Final = "the report artifact could not be read"


@dataclass(frozen=True, slots=True)
class CheckRun:
    """The check run's outcome: its conclusion, title and summary (markdown)."""

    conclusion: Conclusion
    title: str
    summary: str


def for_comparison(comparison: Comparison, summary: str, *, fail_on_regression: bool) -> CheckRun:
    """The check run of a comparison, titled by its headline."""
    decided = conclusion.of_comparison(comparison, fail_on_regression=fail_on_regression)
    return CheckRun(decided, headline(comparison), summary)


def for_unreadable(summary: str) -> CheckRun:
    """The check run of a report that could not be read."""
    return CheckRun(conclusion.UNREADABLE, UNREADABLE_TITLE, summary)
