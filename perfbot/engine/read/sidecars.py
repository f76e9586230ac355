"""Lab sidecar files: ``<case>.exit`` and ``<case>.stderr`` saved beside each report.

A lab script such as the OpenNIC method's stores the tool's exit status and its standard
error next to the report it wrote. Neither file is a report. A non-zero exit status marks
that run failed, with the first line of its standard error as the reason; a zero status
says nothing more than the report itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

EXIT_SUFFIX = ".exit"
STDERR_SUFFIX = ".stderr"
MAX_REASON = 200
# An exit status is small; a large .exit is not one, and is not read whole.
MAX_SIDECAR_BYTES = 64 * 1024

_STATUS = re.compile(r"\s*(?:exit(?:ed)?(?: status| code)?[:=]?\s*)?(-?\d{1,6})\s*", re.IGNORECASE)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True, slots=True)
class FailedRun:
    """A run whose sidecar says it failed: the run's path without suffix, and why."""

    stem: str
    reason: str


@dataclass(slots=True)
class Sidecars:
    """The sidecars of one side, keyed by the path of their run without the suffix."""

    failed: dict[str, FailedRun] = field(default_factory=dict)
    claimed: set[str] = field(default_factory=set)

    def failure_of(self, report_path: str) -> FailedRun | None:
        """The failure a sidecar states for this report (``x.json`` ← ``x.exit`` or
        ``x.json.exit``), marking it as claimed so that it is not said twice."""
        for stem in (report_path, _without_suffix(report_path)):
            failed = self.failed.get(stem)
            if failed is not None:
                self.claimed.add(stem)
                return failed
        return None

    def unclaimed(self) -> list[FailedRun]:
        """Failed runs whose report is missing (the tool died before writing it)."""
        return [run for stem, run in sorted(self.failed.items()) if stem not in self.claimed]


def is_sidecar(path: str) -> bool:
    name = PurePosixPath(path).name
    return any(name.endswith(s) and len(name) > len(s) for s in (EXIT_SUFFIX, STDERR_SUFFIX))


def collect(files: Iterable[tuple[str, bytes]]) -> Sidecars:
    """The failed runs that the ``.exit`` files among ``files`` state."""
    exits: dict[str, bytes] = {}
    stderrs: dict[str, bytes] = {}
    for path, data in files:
        if path.endswith(EXIT_SUFFIX):
            exits[path[: -len(EXIT_SUFFIX)]] = data
        elif path.endswith(STDERR_SUFFIX):
            stderrs[path[: -len(STDERR_SUFFIX)]] = data
    sidecars = Sidecars()
    for stem, data in exits.items():
        reason = _failure(data, stderrs.get(stem))
        if reason is not None:
            # The run's name says which repetition failed; the case covers them all.
            named = f"run {PurePosixPath(stem).name} {reason}"
            sidecars.failed[stem] = FailedRun(stem, _bounded(named))
    return sidecars


def _failure(exit_data: bytes, stderr: bytes | None) -> str | None:
    """Why the run failed, or None when its exit status is 0."""
    match = _STATUS.fullmatch(_text(exit_data[:MAX_SIDECAR_BYTES])) if exit_data else None
    if match is None:
        return "failed: its .exit file holds no exit status"
    status = int(match.group(1))
    if status == 0:
        return None
    reason = f"exited with status {status}"
    first = _first_line(stderr) if stderr is not None else ""
    return f"{reason}: {first}" if first else reason


def _first_line(stderr: bytes) -> str:
    for line in _text(stderr[:MAX_SIDECAR_BYTES]).splitlines():
        cleaned = _clean(line)
        if cleaned:
            return cleaned
    return ""


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _clean(line: str) -> str:
    # The reason lands in a PR comment: no colour codes, no control characters.
    printable = "".join(ch if ch.isprintable() else " " for ch in _ANSI.sub("", line))
    return " ".join(printable.split())


def _bounded(reason: str) -> str:
    return reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 1] + "…"


def _without_suffix(path: str) -> str:
    pure = PurePosixPath(path)
    return str(pure.with_suffix("")) if pure.suffix else path
