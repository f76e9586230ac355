"""What a judged report says beside its verdicts, as typed values.

Reading and judging only state facts here; ``show/render.py`` words every one of them
(for the comment) and ``show/render.notice_text`` for a terminal. A new notice is a
dataclass here and a case there, so no handler or command writes a sentence a user reads.
Names in a notice (platforms, paths) are untrusted: the renderer escapes them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

# Made where it is found, in the read stage (which comes before this one).
from perfbot.engine.read.platforms import PlatformLinedUp

__all__ = [
    "BaselineUnavailable",
    "BranchChanged",
    "Confirming",
    "NoConfirmation",
    "NotConfirmed",
    "Notice",
    "PlatformLinedUp",
    "PlatformUnmatched",
    "RepeatedAttempt",
    "Settled",
]


@dataclass(frozen=True, slots=True)
class PlatformUnmatched:
    """A platform a person asked for (``--platform``) that no side measured."""

    name: str


@dataclass(frozen=True, slots=True)
class BaselineUnavailable:
    """The saved baseline a comparison was asked against cannot be read."""

    path: str
    exists: bool  # False: it does not exist; True: none of its files could be read


@dataclass(frozen=True, slots=True)
class Confirming:
    """``count`` regressions beyond tolerance are held while attempt ``attempt`` of run
    ``run_id`` measures them again."""

    count: int
    attempt: int
    run_id: int


class NoConfirmation(enum.Enum):
    """Why a regression beyond tolerance was called without a second attempt."""

    FORK = "fork"  # a fork's PR is never re-run automatically
    ONCE_ALREADY = "once"  # this commit had its one automatic re-run
    GITHUB_REFUSED = "refused"  # GitHub refused the re-run
    NOT_ALLOWED = "not allowed"  # perfbot may not write there now (``detail`` says why)


@dataclass(frozen=True, slots=True)
class NotConfirmed:
    """The regressions are called at once: no second attempt was started."""

    reason: NoConfirmation
    detail: str = ""  # perfbot's own words, for NOT_ALLOWED


@dataclass(frozen=True, slots=True)
class Settled:
    """Attempt ``attempt`` was judged together with the attempt before it: of what that
    one would have called red, ``confirmed`` held and ``not_reproduced`` did not."""

    attempt: int
    confirmed: int
    not_reproduced: int


@dataclass(frozen=True, slots=True)
class RepeatedAttempt:
    """Attempt ``attempt`` uploaded no report of its own (GitHub lists a run's artifacts
    across attempts): the regressions are called on the attempt before it alone."""

    attempt: int


@dataclass(frozen=True, slots=True)
class BranchChanged:
    """The target branch ``branch`` changed level at ``sha`` (an open watch issue, number
    ``issue`` at ``url``), for ``metrics`` of the metrics this report measured: a move
    shown may be that change, not the PR's."""

    branch: str
    sha: str
    issue: int
    url: str
    metrics: int


Notice = (
    PlatformLinedUp
    | PlatformUnmatched
    | BaselineUnavailable
    | Confirming
    | NotConfirmed
    | Settled
    | RepeatedAttempt
    | BranchChanged
)
