"""GitHub's time of an installation event, read from the payloads GitHub sends."""

from __future__ import annotations

import json
from typing import Any

import pytest

from perfbot.app.suspension import event_time
from tests.paths import shared


def fixture(action: str) -> Any:
    path = shared(f"octokit-webhooks/installation/{action}.payload.json")
    return json.loads(path.read_text(encoding="utf-8"))["installation"]


def test_a_suspend_is_timed_by_its_suspension() -> None:
    # updated_at "2021-04-28T22:32:50.000-04:00", suspended_at "2021-04-29T02:32:50Z".
    assert event_time(fixture("suspend")) == 1_619_663_570.0


def test_older_payloads_carry_unix_seconds() -> None:
    assert event_time(fixture("deleted")) == 1_525_109_899.0
    assert event_time(fixture("created")) == 1_557_933_591.0


def test_the_newer_of_the_two_times_counts() -> None:
    installation = {"updated_at": "2021-04-29T03:00:00Z", "suspended_at": "2021-04-29T02:00:00Z"}
    assert event_time(installation) == 1_619_665_200.0


@pytest.mark.parametrize(
    "installation",
    [
        None,
        [],
        {},
        {"updated_at": None, "suspended_at": None},
        {"updated_at": "yesterday"},
        {"updated_at": True},
        {"updated_at": float("nan")},
        {"updated_at": -5},
        {"updated_at": "2021-04-29T02:32:50Z" + " " * 100},
    ],
)
def test_no_usable_time_is_none(installation: object) -> None:
    assert event_time(installation) is None
