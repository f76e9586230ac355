"""A job that only waits gives its worker slot to another job meanwhile.

The worker sets, for each job it runs, what lending its slot means (``lending``); code
far below it that sleeps for a known while (the pacer waiting for its installation's next
write slot) wraps the sleep in ``lent``. Without a worker around (``perfbot comment``, a
test of the pacer alone) ``lent`` changes nothing.

Why: each job's two writes (the comment, the check run) are at least a second apart, as
GitHub asks of one installation. A slot held through that second would cap a process at
its worker count of jobs a second, whatever its CPU could do.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar, Token
from typing import Final

# A wait shorter than this keeps the slot: lending and taking it back again costs more
# than it frees, and a job about to go on should not queue behind a new one.
LEND_AFTER_SECONDS: Final = 0.05

Lender = Callable[[], AbstractAsyncContextManager[None]]

_lender: ContextVar[Lender | None] = ContextVar("perfbot_slot_lender", default=None)


def lending(lender: Lender) -> Token[Lender | None]:
    """Within the current task (and those it starts), ``lent`` waits through ``lender``."""
    return _lender.set(lender)


@asynccontextmanager
async def lent(seconds: float) -> AsyncIterator[None]:
    """Around a wait of about ``seconds``: the job's slot is free to another job inside."""
    lender = _lender.get()
    if lender is None or seconds < LEND_AFTER_SECONDS:
        yield
        return
    async with lender():
        yield
