"""The check run's conclusion and title, decided in the engine beside ``compare``."""

from __future__ import annotations

import pytest

from perfbot.engine.judge.compare import Policy, compare
from perfbot.engine.show.checkrun import UNREADABLE_TITLE, for_comparison, for_unreadable
from tests.builders import side

BASE = {"tcp4_mbps": 100.0}


@pytest.mark.parametrize(
    ("head", "fail_on_regression", "conclusion", "title"),
    [
        (100.0, False, "success", "no change beyond the noise floor"),
        (110.0, False, "success", "1 improvement"),
        (97.0, True, "neutral", "1 regression"),  # within the 5 % tolerance
        (90.0, False, "neutral", "1 regression"),  # beyond it, in an advisory repository
        (90.0, True, "failure", "1 regression"),
    ],
)
def test_conclusion_follows_the_verdicts_and_the_repositorys_choice(
    head: float, fail_on_regression: bool, conclusion: str, title: str
) -> None:
    comparison = compare(side(BASE), side({"tcp4_mbps": head}), Policy())
    check = for_comparison(comparison, "body", fail_on_regression=fail_on_regression)
    assert (check.conclusion, check.title, check.summary) == (conclusion, title, "body")


def test_an_unreadable_report_is_neutral() -> None:
    check = for_unreadable("why")
    assert (check.conclusion, check.title, check.summary) == ("neutral", UNREADABLE_TITLE, "why")
