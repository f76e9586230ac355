"""When a failed job is tried again: a pure policy, kept apart from the loop that waits."""

from __future__ import annotations

import random

MAX_ATTEMPTS = 8
BASE_DELAY_SECONDS = 2.0
MAX_DELAY_SECONDS = 15 * 60.0


def retry_delay(
    attempts: int, retry_after: float | None = None, rng: random.Random | None = None
) -> float | None:
    """Seconds to wait before the next attempt, or None to give up.

    ``attempts`` counts the attempts made so far. GitHub's ``Retry-After`` wins when it
    is longer than the backoff; the backoff doubles with ±25 % jitter so that jobs that
    failed together (a GitHub outage) do not come back together.
    """
    if attempts >= MAX_ATTEMPTS:
        return None
    backoff = min(BASE_DELAY_SECONDS * 2.0 ** (attempts - 1), MAX_DELAY_SECONDS)
    jitter: float = (rng or random.Random()).uniform(0.75, 1.25)
    return max(backoff * jitter, retry_after or 0.0)
