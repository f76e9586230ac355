"""iperf3's human-readable output (no ``-J``): the end-of-test receiver lines.

Read as printed by the client or the server, plain or quoted the way mailing-list
threads quote it (``> `` or ``> >> `` before every line). The metric names are those of
the JSON parser, so a text run and a ``-J`` run of one case read alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from perfbot.engine.read.formats._base import Format
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

NAME = "iperf3-text"
MAX_REASON = 200

NO_SUMMARY = "iperf3 printed no end-of-test summary (the run was cut short)"
NO_RECEIVER = "iperf3's end-of-test summary has no receiver line"
NO_DATA = "the iperf3 receiver got no data (0 bytes received)"

# Mail quoting: any run of `>` (each maybe followed by a space) before the text.
_QUOTE = re.compile(r"^[ \t]*(?:>[ \t]?)+")
# `[  5]`, `[SUM]`, with --bidir a role: `[  5][TX-C]` (the server prints TX-S/RX-S).
_INTERVAL = re.compile(
    r"^\[\s*(?P<id>\d+|SUM)\](?:\[(?P<role>[TR]X-[CS])\])?\s+"
    r"(?P<start>\d+(?:\.\d+)?)-\s*(?P<end>\d+(?:\.\d+)?)\s+sec\s+"
    r"(?P<transfer>\d+(?:\.\d+)?)\s+(?P<tunit>[KMGT]?Bytes)\s+"
    r"(?P<rate>\d+(?:\.\d+)?)\s+(?P<runit>[KMGT]?(?:bits|Bytes))/sec"
    r"(?P<rest>.*?)\s*$"
)
_SIDE = re.compile(r"\s(?P<side>sender|receiver)$")
_UDP_REST = re.compile(
    r"^\s*(?P<jitter>\d+(?:\.\d+)?)\s+ms\s+(?P<lost>\d+)/\s*(?P<total>\d+)\s+\(\s*[\d.e+-]+%\)"
)
_RETRANSMITS = re.compile(r"^\s*(?P<retr>\d+)\s*$")
_ERROR = re.compile(r"^iperf3: (?:error|interrupt) - (?P<message>.+?)\s*$")
_REVERSE = re.compile(r"^Reverse mode, remote host \S+ is sending")
_CPU = re.compile(
    r"^CPU Utilization: local/\w+ (?P<host>\d+(?:\.\d+)?)% .*?"
    r"remote/\w+ (?P<remote>\d+(?:\.\d+)?)% "
)
# -V states what the test was asked to do, e.g. `Starting Test: protocol: TCP, 1 streams,
# 131072 byte blocks, omitting 0 seconds, 2 second test, tos 0` (or `N bytes to send`).
_STARTING = re.compile(r"^Starting Test: protocol: (?P<protocol>\w+), (?P<streams>\d+) streams")
_STARTING_PARTS = (
    ("blksize", re.compile(r", (\d+) byte blocks")),
    ("omit", re.compile(r", omitting (\d+) seconds")),
    ("duration", re.compile(r", (\d+) second test")),
    ("bytes", re.compile(r", (\d+) bytes to send")),
    ("blocks", re.compile(r", (\d+) blocks to send")),
    ("tos", re.compile(r", tos (\d+)")),
)
_TARGET = re.compile(r"^\s*Target Bitrate: (\d+)")
# Where one run starts: the client's first line, or the server accepting a client.
_RUN_START = re.compile(r"^(?:Connecting to host \S+, port \d+|Accepted connection from )")
DONE = "iperf Done."
_MARKER = re.compile(
    r"^(?:iperf Done\.|- - - - - |Connecting to host \S+, port \d+|Server listening on \d+"
    r"|\[ ID\](?:\[Role\])? Interval)"
)

_BYTES = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
_DECIMAL = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


@dataclass(frozen=True, slots=True)
class _Line:
    """One end-of-test line: a stream or SUM, its direction and its side."""

    stream: str
    role: str | None
    side: str
    transferred: float  # bytes
    mbps: float
    rest: str


def strip_quotes(text: str) -> list[str]:
    """The lines of ``text`` without mail quoting or trailing blanks."""
    return [_QUOTE.sub("", line).rstrip() for line in text.splitlines()]


def sniff(head: str, path: str) -> float:
    body = head.lstrip("\ufeff \t\r\n")
    if not body or body[0] in "{[":
        return 0.0  # iperf3 -J, --json-stream, or someone else's JSON
    lines = strip_quotes(head)
    intervals = sum(1 for line in lines if _INTERVAL.match(line))
    markers = any(_MARKER.match(line) for line in lines)
    if intervals and markers:
        return 1.0
    if intervals:
        return 0.9
    if markers or any(_ERROR.match(line) for line in lines):
        return 0.8
    return 0.0


def parse(text: str, ctx: ParseContext) -> Parsed:
    lines = strip_quotes(text)
    if not any(lines):
        raise ParseError(ctx.path, NAME, "the file is empty")
    measurements: list[Measurement] = []
    failed_runs: list[tuple[FailedCase, bool]] = []  # and whether the log shows it start
    recognised = False
    for run in _runs(lines):
        recognised = recognised or any(
            _INTERVAL.match(line) or _MARKER.match(line) or _ERROR.match(line) for line in run
        )
        try:
            measurements += _measure(run, ctx)
        except _RunFailed as failed:
            started = any(_RUN_START.match(line) for line in run)
            failed_runs.append((FailedCase(ctx.platform, ctx.case, failed.reason), started))
    if not recognised:
        raise ParseError(ctx.path, NAME, "no iperf3 interval, summary or error line")
    if measurements:
        # A quoted fragment without a summary beside a whole run is no failed repetition;
        # a run the log shows starting (its "Connecting to host" line) and then cut short is.
        failures = [f for f, started in failed_runs if started or f.reason != NO_SUMMARY]
    else:
        failures = [f for f, _ in failed_runs]
    # One failed case per distinct reason: three runs refused alike say it once.
    return Parsed(tuple(measurements), tuple(dict.fromkeys(failures)))


class _RunFailed(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _runs(lines: list[str]) -> Iterator[list[str]]:
    """The runs in the text: a log can hold several, each one sample."""
    current: list[str] = []
    for line in lines:
        # A run is over once it measured or failed; after "iperf Done." an error line is
        # the next run's (a refused connection prints nothing else), not the run before's.
        started = _RUN_START.match(line) and any(
            _INTERVAL.match(seen) or _ERROR.match(seen) for seen in current
        )
        refused = _ERROR.match(line) and DONE in current
        if started or refused:
            yield current
            current = []
        current.append(line)
    yield current


@dataclass(slots=True)
class _Out:
    """The measurements of one run, all with the run's settings."""

    ctx: ParseContext
    settings: Settings
    measurements: list[Measurement] = field(default_factory=list)

    def add(
        self, name: str, value: float | None, unit: str, better: Better, scale: Scale = Scale.RATIO
    ) -> None:
        if value is not None:
            metric = f"{self.ctx.case}.{name}"
            self.measurements.append(
                Measurement(self.ctx.platform, metric, value, unit, better, scale, self.settings)
            )


# With --bidir, the forward direction carries data from the client to the server.
_FORWARD = ("TX-C", "RX-S")
_BACKWARD = ("RX-C", "TX-S")


def _measure(run: list[str], ctx: ParseContext) -> list[Measurement]:
    for line in run:
        error = _ERROR.match(line)
        if error:
            raise _RunFailed(_error_reason(error.group("message")))
    summary = [line for line in map(_summary_line, run) if line is not None]
    if not summary:
        raise _RunFailed(NO_SUMMARY)
    udp = any(_UDP_REST.match(line.rest) for line in summary)
    bidir = any(line.role is not None for line in summary)
    out = _Out(ctx, _settings(run, summary, udp, bidir))
    directions: tuple[tuple[str, tuple[str | None, ...]], ...] = (
        (("forward", _FORWARD), ("reverse", _BACKWARD)) if bidir else (("receiver", (None,)),)
    )
    rates: list[float] = []
    for index, (name, roles) in enumerate(directions):
        lines = [line for line in summary if line.role in roles]
        receiver = _total(lines, "receiver")
        if receiver is None:
            raise _RunFailed(NO_RECEIVER)
        if receiver.transferred == 0 or receiver.mbps == 0:
            raise _RunFailed(NO_DATA)
        rates.append(receiver.mbps)
        out.add(f"{name}_mbps", receiver.mbps, "Mbps", Better.HIGHER)
        if udp:
            # The forward direction keeps the plain names that a one-way run has.
            _add_loss(out, "reverse_" if index else "", receiver)
        elif index == 0:
            sender = _total(lines, "sender")
            retransmits = _RETRANSMITS.match(sender.rest) if sender is not None else None
            if retransmits:
                count = float(retransmits["retr"])
                out.add("retransmits", count, "", Better.LOWER, Scale.COUNT)
    if bidir:
        # The RX + TX total of one run: the two receivers' rates, read at the same time.
        out.add("total_mbps", sum(rates), "Mbps", Better.HIGHER)
    cpu = next((m for m in map(_CPU.match, run) if m), None)
    if cpu is not None:
        out.add("cpu_host_percent", float(cpu["host"]), "%", Better.LOWER)
        out.add("cpu_remote_percent", float(cpu["remote"]), "%", Better.LOWER)
    return out.measurements


def _add_loss(out: _Out, prefix: str, receiver: _Line) -> None:
    udp = _UDP_REST.match(receiver.rest)
    if udp is None:
        return
    lost, total = float(udp["lost"]), float(udp["total"])
    # The printed percentage is rounded to an integer; the counts give the exact one.
    out.add(
        f"{prefix}lost_percent",
        100 * lost / total if total else None,
        "%",
        Better.LOWER,
        Scale.POINTS,
    )
    out.add(f"{prefix}lost_packets", lost, "packets", Better.LOWER, Scale.COUNT)
    # A volume, not an error counter (as in the JSON parser): judged relative to the base.
    out.add(f"{prefix}packets", total, "packets", Better.HIGHER)
    out.add(f"{prefix}jitter_ms", float(udp["jitter"]), "ms", Better.LOWER)


def _summary_line(line: str) -> _Line | None:
    match = _INTERVAL.match(line)
    if match is None:
        return None
    side = _SIDE.search(match["rest"])
    if side is None:
        return None  # a reporting interval, not the end-of-test summary
    rest = match["rest"][: side.start()]
    transferred = float(match["transfer"]) * _BYTES[match["tunit"][:-5]]
    unit = match["runit"]
    if unit.endswith("Bytes"):
        mbps = float(match["rate"]) * _BYTES[unit[:-5]] * 8 / 1e6
    else:
        mbps = float(match["rate"]) * _DECIMAL[unit[:-4]] / 1e6
    return _Line(match["id"], match["role"], side["side"], transferred, mbps, rest)


def _total(lines: list[_Line], side: str) -> _Line | None:
    """The SUM line of ``side`` (-P), else the only stream's line."""
    of_side = [line for line in lines if line.side == side]
    sums = [line for line in of_side if line.stream == "SUM"]
    if sums:
        return sums[-1]
    streams = {line.stream for line in of_side}
    return of_side[-1] if len(streams) == 1 else None


def _settings(run: list[str], summary: list[_Line], udp: bool, bidir: bool) -> Settings:
    """What the header states the run was asked to do; -V states the most."""
    stated: dict[str, object] = {}
    for line in run:
        starting = _STARTING.match(line)
        if starting:
            stated["protocol"] = starting["protocol"].upper()
            stated["streams"] = int(starting["streams"])
            for name, pattern in _STARTING_PARTS:
                part = pattern.search(line)
                if part:
                    stated[name] = int(part.group(1))
        target = _TARGET.match(line)
        if target:
            stated["target_bitrate"] = int(target.group(1))
    for name in ("bytes", "blocks", "tos"):
        if stated.get(name) == 0:
            del stated[name]  # as in the JSON fingerprint: only when set
    forward = [s for s in summary if s.role in (None, *_FORWARD) and s.stream != "SUM"]
    stated.setdefault("protocol", "UDP" if udp else "TCP")
    stated.setdefault("streams", len({s.stream for s in forward}) or None)
    reverse = any(_REVERSE.match(line) for line in run)
    return settings_of(reverse=reverse, bidir=bidir, **stated)


def _error_reason(message: str) -> str:
    cleaned = " ".join("".join(c if c.isprintable() else " " for c in message).split())
    reason = f"iperf3 reported an error: {cleaned}" if cleaned else "iperf3 reported an error"
    return reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 1] + "…"


FORMAT = Format(
    name=NAME,
    reads="iperf3 human-readable output (TCP, UDP, -R, -P, --bidir; mail-quoted too)",
    sniff=sniff,
    parse=parse,
)
