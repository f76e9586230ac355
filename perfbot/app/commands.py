"""``/perfbot …`` commands in comments, without I/O: a pull request's (``rerun``, ``help``,
``accept [metric-glob …] [-- reason]``, ``unaccept [metric-glob …]``) and a watch issue's
(``accept``, with the reason after it)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

Command = Literal["rerun", "help", "accept", "unaccept"]
IssueCommand = Literal["accept"]
_COMMANDS: Final[dict[str, Command]] = {
    "rerun": "rerun",
    "help": "help",
    "accept": "accept",
    "unaccept": "unaccept",
}

# At the start of a line (up to three spaces, as markdown allows before a paragraph).
_COMMAND = re.compile(r"^ {0,3}/perfbot[ \t]+(rerun|help|unaccept|accept)\b(.*)$", re.IGNORECASE)
# `` -- `` ends a PR accept's globs: what follows is its reason.
_REASON = re.compile(r"(?:^|[ \t])--(?:[ \t]|$)")
# ``/perfbot accept larger buffers`` or ``/perfbot accept -- larger buffers``.
_ISSUE_COMMAND = re.compile(r"^ {0,3}/perfbot[ \t]+(accept)\b[ \t]*(?:--)?[ \t]*(.*)$", re.I)
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
# A reason is kept for audit and quoted back: a line's worth.
MAX_REASON_CHARS = 300
# A PR accept names its metrics by glob: a few, each a name's worth.
MAX_GLOBS = 20
MAX_GLOB_CHARS = 200


@dataclass(frozen=True, slots=True)
class PullCommand:
    """A command on a pull request: ``globs`` and ``reason`` of an ``accept`` (an
    ``unaccept`` has globs only), empty for the others."""

    command: Command
    globs: tuple[str, ...] = ()
    reason: str = ""


def parse_command(body: str) -> Command | None:
    """The first PR command at the start of a line outside fenced code, or None."""
    said = parse_pull_command(body)
    return None if said is None else said.command


def parse_pull_command(body: str) -> PullCommand | None:
    """The first PR command at the start of a line outside fenced code, with the globs and
    the reason of an ``accept`` (``/perfbot accept udp* tcp_rx.* -- larger buffers``), or
    None. Globs past ``MAX_GLOBS`` or longer than ``MAX_GLOB_CHARS`` are left out."""
    fenced = False
    for line in body.splitlines()[:500]:
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced and (match := _COMMAND.match(line)):
            command = _COMMANDS[match.group(1).lower()]
            if command not in ("accept", "unaccept"):
                return PullCommand(command)
            rest = match.group(2)
            split = _REASON.search(rest)
            words, reason = (
                (rest, "") if split is None else (rest[: split.start()], rest[split.end() :])
            )
            globs = tuple(glob for glob in words.split() if len(glob) <= MAX_GLOB_CHARS)
            if command == "unaccept":
                reason = ""
            return PullCommand(command, globs[:MAX_GLOBS], reason.strip()[:MAX_REASON_CHARS])
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
