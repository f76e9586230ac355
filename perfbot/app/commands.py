"""``/perfbot …`` commands in comments, without I/O: a pull request's (``rerun``, ``help``)
and a watch issue's (``accept``, with the reason after it)."""

from __future__ import annotations

import re
from typing import Literal

Command = Literal["rerun", "help"]
IssueCommand = Literal["accept"]

# At the start of a line (up to three spaces, as markdown allows before a paragraph).
_COMMAND = re.compile(r"^ {0,3}/perfbot[ \t]+(rerun|help)\b", re.IGNORECASE)
# ``/perfbot accept larger buffers`` or ``/perfbot accept -- larger buffers``.
_ISSUE_COMMAND = re.compile(r"^ {0,3}/perfbot[ \t]+(accept)\b[ \t]*(?:--)?[ \t]*(.*)$", re.I)
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
# A reason is kept for audit and quoted back: a line's worth.
MAX_REASON_CHARS = 300


def parse_command(body: str) -> Command | None:
    """The first command at the start of a line outside fenced code, or None."""
    fenced = False
    for line in body.splitlines()[:500]:
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced and (match := _COMMAND.match(line)):
            return "rerun" if match.group(1).lower() == "rerun" else "help"
    return None


def parse_issue_command(body: str) -> tuple[IssueCommand, str] | None:
    """The first issue command at the start of a line outside fenced code, with the rest
    of its line as its reason (cut to ``MAX_REASON_CHARS``), or None."""
    fenced = False
    for line in body.splitlines()[:500]:
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced and (match := _ISSUE_COMMAND.match(line)):
            return "accept", match.group(2).strip()[:MAX_REASON_CHARS]
    return None
