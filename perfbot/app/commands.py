"""``/perfbot …`` commands in PR comments, without I/O."""

from __future__ import annotations

import re
from typing import Literal

Command = Literal["rerun", "help"]

# At the start of a line (up to three spaces, as markdown allows before a paragraph).
_COMMAND = re.compile(r"^ {0,3}/perfbot[ \t]+(rerun|help)\b", re.IGNORECASE)
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


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
