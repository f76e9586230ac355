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


# The verdicts a PR comment is worth writing for (``comment: on-change``), whether they
# count or not: a move (accepted, or report-only, too), a failure, a metric gone, a move
# whose noise is unknown.
_SAYS_SOMETHING: Final = frozenset(
    {Verdict.REGRESSED, Verdict.IMPROVED, Verdict.FAILED, Verdict.MISSING, Verdict.UNCERTAIN}
)


def worth_a_comment(comparison: Comparison, *, confirming: bool) -> bool:
    """Whether a report has something to say in a PR comment (``comment: on-change``):
    something moved, failed, went missing or is uncertain, a case failed or had runs left
    out, a platform was measured on one side only, or a regression is being confirmed
    (``confirming``). Else the check run alone carries it."""
    if confirming or comparison.failures or comparison.left_out:
        return True
    return any(
        platform.unavailable or any(m.verdict in _SAYS_SOMETHING for m in platform.metrics)
        for platform in comparison.platforms
    )
