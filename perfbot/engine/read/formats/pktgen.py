"""Linux pktgen: the ``Result: OK:`` lines of ``/proc/net/pktgen/<dev>`` files."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from perfbot.engine.read.formats._base import Format
from perfbot.engine.read.formats._common import number_from_text
from perfbot.errors import ParseError
from perfbot.model import (
    Better,
    FailedCase,
    Measurement,
    ParseContext,
    Parsed,
    Scale,
    Settings,
    settings_of,
)

NAME = "pktgen"
MAX_REASON = 200

# show_results() in net/core/pktgen.c. The second line is indented by two spaces in real
# output but not in the kernel documentation; forks print `nsec` and ` Mb/sec`; frags is
# -1 when the skb was already freed.
_RESULT = re.compile(
    r"^[ \t]*Result: OK: (?P<elapsed>\d+)\(c\d+\+d\d+\) [un]sec, (?P<sent>\d+) "
    r"\((?P<size>\d+)byte,(?P<frags>-?\d+)frags\)[ \t]*\r?\n"
    r"[ \t]*(?P<pps>\d+)pps \d+ ?Mb/sec \((?P<bps>\d+)bps\) errors: (?P<errors>\d+)",
    re.MULTILINE,
)
# Any start of a measurement, complete or not: a truncated one must not be skipped silently.
_RESULT_START = re.compile(r"^[ \t]*Result: OK: \d", re.MULTILINE)
_RESULT_HEAD = re.compile(r"^[ \t]*Result: OK: \d+\(c\d+\+d\d+\) [un]sec, ", re.MULTILINE)
_RESULT_LINE = re.compile(r"^[ \t]*(Result:[^\r\n]*)", re.MULTILINE)
# What a thread file (kpktgend_N) answers to its commands, and the lines only it prints.
_THREAD_RESULT = re.compile(r"Result: OK: (?:add_device|rem_device_all|max_before_softirq)")
_THREAD_FILE = re.compile(r"^[ \t]*(?:Running:|Stopped:)", re.MULTILINE)
_IFNAME = re.compile(r"\bifname: (\S+)")
# The Params block: what the run was asked to do (never the Current counters).
_PARAMS = (
    ("count", re.compile(r"Params: count (\d+)")),
    ("min_pkt_size", re.compile(r"\bmin_pkt_size: (\d+)")),
    ("max_pkt_size", re.compile(r"\bmax_pkt_size: (\d+)")),
    ("frags", re.compile(r"(?<![\w(,])frags: (\d+)")),
    ("delay", re.compile(r"\bdelay: (\d+)")),
    ("clone_skb", re.compile(r"\bclone_skb: (\d+)")),
    ("flows", re.compile(r"^[ \t]*flows: (\d+) flowlen", re.MULTILINE)),
    ("imix_weights", re.compile(r"^[ \t]*imix_weights: ([\d, ]*\d)", re.MULTILINE)),
)

# Device and thread files that carry no measurement. A thread file always prints
# `Running:` and `Stopped:` together, so a lone "Running:" in some CI log does not count.
_PKTGEN_FILE = re.compile(
    r"^[ \t]*(Params: count \d|Result: Idle|Result: OK: add_device="
    r"|Running:[^\n]*\n[ \t]*Stopped:)",
    re.MULTILINE,
)


@dataclass(frozen=True, slots=True)
class _Totals:
    pps: float
    bps: float
    errors: float


def sniff(head: str, path: str) -> float:
    # The first line is enough: a block cut off by the sniff window is still pktgen.
    if _RESULT_HEAD.search(head):
        return 1.0
    # Below 1.0 so that a real report wins, yet high enough to be reported as a failed
    # pktgen case rather than as an unknown file.
    if _PKTGEN_FILE.search(head):
        return 0.8
    return 0.0


def parse(text: str, ctx: ParseContext) -> Parsed:
    matches = list(_RESULT.finditer(text))
    # Summing the blocks that happen to be complete would understate a multi-queue run.
    if len(matches) != len(_RESULT_START.findall(text)):
        raise ParseError(ctx.path, NAME, "a `Result: OK:` block is truncated or malformed")
    if not matches:
        return Parsed(failures=(_no_measurement(text, ctx),))
    queues = _queues(text)
    idle = [queue for queue in queues if queue.result is None]
    if idle:
        # The other queues alone are not the run: their sum would read as a drop.
        return Parsed(
            failures=tuple(_idle_queue(queue, len(queues) - len(idle), ctx) for queue in idle)
        )
    totals = _sum_blocks(matches, ctx.path)
    return Parsed(measurements=_measurements(totals, ctx, _settings(queues)))


@dataclass(frozen=True, slots=True)
class _Queue:
    """One device file (``dev@N``) in the text: what precedes its Result line, and the
    measurement, or None when the queue did not measure (``Result: Idle``, an error)."""

    name: str
    details: str
    line: str
    result: re.Match[str] | None


def _queues(text: str) -> list[_Queue]:
    """The device files among the concatenated ones; thread files are left out."""
    queues: list[_Queue] = []
    start = 0
    for line in _RESULT_LINE.finditer(text):
        if line.start() < start:
            continue  # the second line of an OK block already consumed
        details = text[start : line.start()]
        result = _RESULT.match(text, line.start())
        start = result.end() if result is not None else line.end()
        if _THREAD_RESULT.match(line.group(1)) or _THREAD_FILE.search(details):
            continue
        name = _IFNAME.search(details)
        label = name.group(1) if name else f"#{len(queues) + 1}"
        queues.append(_Queue(label, details, line.group(1), result))
    return queues


def _idle_queue(queue: _Queue, measured: int, ctx: ParseContext) -> FailedCase:
    others = f"{measured} measured queue is" if measured == 1 else f"{measured} measured queues are"
    reason = (
        f"queue {_one_line(queue.name)[:40]}: pktgen reported no measurement "
        f"({_one_line(queue.line)[:60]}); the {others} not summed as the run's total"
    )
    return FailedCase(platform=ctx.platform, case=ctx.case, reason=reason[:MAX_REASON])


def _settings(queues: list[_Queue]) -> Settings:
    """What the run was asked to do, from each queue's Params block and result line."""
    found: dict[str, set[str]] = {}
    for queue in queues:
        for name, pattern in _PARAMS:
            match = pattern.search(queue.details)
            if match:
                found.setdefault(name, set()).add(match.group(1))
        if queue.result is not None:
            found.setdefault("pkt_size", set()).add(queue.result["size"])
    values = {name: ",".join(sorted(v, key=_numeric_first)) for name, v in found.items()}
    return settings_of(queues=len(queues), **values)


def _numeric_first(value: str) -> tuple[int, str]:
    return (int(value), value) if value.isdigit() and len(value) < 20 else (0, value)


def _sum_blocks(matches: list[re.Match[str]], path: str) -> _Totals:
    """One sample per file: per-queue files (``dev@N``) are summed, as pktgen users do."""
    pps = bps = errors = 0.0
    for match in matches:
        pps += _number(match["pps"], "pps", path)
        bps += _number(match["bps"], "bps", path)
        errors += _number(match["errors"], "errors", path)
    for label, total in (("pps", pps), ("bps", bps), ("errors", errors)):
        if not math.isfinite(total):
            raise ParseError(path, NAME, f"the summed {label} is too large to be a real count")
    return _Totals(pps=pps, bps=bps, errors=errors)


def _number(digits: str, label: str, path: str) -> float:
    value = number_from_text(digits)
    if value is None:
        raise ParseError(path, NAME, f"the {label} value is too large to be a real count")
    return value


def _measurements(
    totals: _Totals, ctx: ParseContext, settings: Settings
) -> tuple[Measurement, ...]:
    # Mb/sec in the report is truncated to an integer; the exact bps gives the real Mbps.
    def metric(name: str, value: float, unit: str, better: Better, scale: Scale) -> Measurement:
        return Measurement(ctx.platform, f"{ctx.case}.{name}", value, unit, better, scale, settings)

    return (
        metric("pps", totals.pps, "pps", Better.HIGHER, Scale.RATIO),
        metric("mbps", totals.bps / 1e6, "Mbps", Better.HIGHER, Scale.RATIO),
        metric("errors", totals.errors, "", Better.LOWER, Scale.COUNT),
    )


def _no_measurement(text: str, ctx: ParseContext) -> FailedCase:
    """A pktgen file without a result is a case that did not run; anything else is not ours."""
    if not _PKTGEN_FILE.search(text):
        raise ParseError(ctx.path, NAME, "no `Result: OK:` measurement and no pktgen device file")
    line = _RESULT_LINE.search(text)
    quoted = _one_line(line.group(1)) if line else "no Result line"
    reason = f"pktgen reported no measurement ({quoted})"
    if len(reason) > MAX_REASON:
        reason = reason[: MAX_REASON - 4] + "…)"
    return FailedCase(platform=ctx.platform, case=ctx.case, reason=reason)


def _one_line(text: str) -> str:
    # The reason lands in a PR comment: no control characters, no layout tricks.
    printable = "".join(ch if ch.isprintable() else " " for ch in text)
    return " ".join(printable.split())


FORMAT = Format(
    name=NAME,
    reads="Linux pktgen /proc/net/pktgen result blocks",
    sniff=sniff,
    parse=parse,
)
