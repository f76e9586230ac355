"""Fewer young-generation garbage collections while the engine builds a large report.

Reading, comparing and rendering 20,000 metrics makes ~160,000 small objects that all stay
alive until the comment is written (samples, series, statistics, results), none of them
part of a cycle that could be freed. With CPython's default threshold (a young collection
every 700 net allocations), the collector walks them again and again as they age, and
that was 40 % of the engine's time on such a report. While an engine entry point runs,
the young threshold is raised to ``ENGINE_YOUNG_THRESHOLD``: the collector still runs
(it is never disabled, so other threads' cyclic garbage is still freed, a little later),
just less often, and the thresholds are restored when the last concurrent call ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

# Net container allocations between two young collections during engine work: at most a
# few MB of garbage cycles wait that much longer to be freed.
ENGINE_YOUNG_THRESHOLD = 50_000


class _Window:
    """The raised threshold, shared by every engine call running at the time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._saved: tuple[int, int, int] | None = None

    def enter(self) -> None:
        with self._lock:
            if self._depth == 0:
                young, middle, old = gc.get_threshold()
                if 0 < young < ENGINE_YOUNG_THRESHOLD:  # 0: collection is off, leave it so
                    self._saved = (young, middle, old)
                    gc.set_threshold(ENGINE_YOUNG_THRESHOLD, middle, old)
            self._depth += 1

    def leave(self) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._saved is not None:
                gc.set_threshold(*self._saved)
                self._saved = None


_WINDOW = _Window()


def fewer_collections(work: Callable[P, T]) -> Callable[P, T]:
    """``work`` run with the young threshold raised (nested and concurrent calls share one
    raise; the last to end restores what was there)."""

    @wraps(work)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        _WINDOW.enter()
        try:
            return work(*args, **kwargs)
        finally:
            _WINDOW.leave()

    return run
