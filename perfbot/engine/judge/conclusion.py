"""What perfbot's check run concludes about a comparison.

Decided here, beside ``compare``, so that the verdict on a PR is read in the engine; the
App's handler only writes it. Its title and summary are words: ``show/checkrun.py``.
"""

from __future__ import annotations

from typing import Final, Literal

from perfbot.engine.judge.compare import Comparison, Verdict

Conclusion = Literal["success", "neutral", "failure"]
# A report that could not be read proves nothing either way.
UNREADABLE: Final[Conclusion] = "neutral"


def of_comparison(comparison: Comparison, *, fail_on_regression: bool) -> Conclusion:
    """Success when nothing regressed; failure for a regression beyond tolerance when the
    repository asks for it (``fail_on_regression``); neutral otherwise: a regression
    within tolerance, or one beyond it in an advisory repository. A report-only metric
    (``report_only`` in the configuration) decides nothing: its move is not counted."""
    if comparison.regressed_beyond_tolerance and fail_on_regression:
        return "failure"
    if not comparison.summary()[Verdict.REGRESSED]:
        return "success"
    return "neutral"
