"""GitHub's own time of an ``installation`` suspend, unsuspend or delete.

Deliveries do not arrive in the order GitHub sent them: a redelivery (perfbot's sweep,
or a person on the App's settings page) brings an old ``suspend`` after the ``unsuspend``
that lifted it. The store orders suspension records by this time, not by arrival, so the
older event is ignored instead of silencing the installation for ever.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from perfbot.app.jsonobject import is_object

# The installation's fields that move when it is suspended or unsuspended.
_TIME_FIELDS = ("updated_at", "suspended_at")
# An ISO 8601 timestamp is ~30 characters; a longer value is not one.
_MAX_TIME_CHARS = 64


def event_time(installation: object) -> float | None:
    """The newest of the installation's ``updated_at`` and ``suspended_at`` as UNIX
    seconds, or None when neither is a usable time.

    GitHub writes ISO 8601 (``2021-04-29T02:32:50Z``, ``...50.000-04:00``); older
    payloads carry UNIX seconds. ``suspended_at`` is null outside a suspension.
    """
    if not is_object(installation):
        return None
    times = [
        t for t in (_seconds(installation.get(name)) for name in _TIME_FIELDS) if t is not None
    ]
    return max(times, default=None)


def _seconds(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = float(value)
        return seconds if math.isfinite(seconds) and seconds > 0 else None
    if not isinstance(value, str) or len(value) > _MAX_TIME_CHARS:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)  # GitHub's times are UTC
    return parsed.timestamp()
