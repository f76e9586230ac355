"""The retry policy: exponential with jitter, Retry-After honoured, a final give-up."""

from __future__ import annotations

import random

from perfbot.support.retry import MAX_ATTEMPTS, MAX_DELAY_SECONDS, retry_delay


def test_backoff_doubles_within_jitter() -> None:
    rng = random.Random(1)
    delays = [retry_delay(n, rng=rng) for n in range(1, 5)]
    for attempt, delay in enumerate(delays, start=1):
        assert delay is not None
        nominal = 2.0 * 2 ** (attempt - 1)
        assert 0.75 * nominal <= delay <= 1.25 * nominal


def test_retry_after_wins_when_longer() -> None:
    assert retry_delay(1, retry_after=60.0, rng=random.Random(0)) == 60.0


def test_capped_and_finally_gives_up() -> None:
    delay = retry_delay(MAX_ATTEMPTS - 1, rng=random.Random(0))
    assert delay is not None
    assert delay <= MAX_DELAY_SECONDS * 1.25
    assert retry_delay(MAX_ATTEMPTS) is None
