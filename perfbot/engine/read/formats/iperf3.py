"""iperf3 JSON reports (`iperf3 -J` and `--json-stream`): throughput, retransmits, UDP loss."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from perfbot.engine.read.formats import iperf3_text
from perfbot.engine.read.formats._base import Format
from perfbot.engine.read.formats._common import finite_number, load_json
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

NAME = "iperf3"
MAX_REASON = 200

NO_SUMMARY = "iperf3 produced no end-of-test summary (the run was cut short)"
NO_THROUGHPUT = "iperf3's end-of-test summary has no usable receiver throughput"
NO_DATA = "the iperf3 receiver got no data (0 bytes received)"
TRUNCATED = "truncated or invalid iperf3 JSON output"

# The keys a -J report has at the top level; an object with none of them is not iperf3's.
_TOP_KEYS = ("start", "intervals", "end", "error")
_BIDIR_KEYS = ("sum_sent_bidir_reverse", "sum_received_bidir_reverse", "sum_bidir_reverse")

# JSON strings cannot hold a raw newline, so a line starting like this is always outside
# the JSON object: iperf3 prints it after the closing brace (esnet/iperf#1143).
_ERROR_LINE = re.compile(r"^iperf3: (?:error|interrupt) - (.+?)\s*$", re.MULTILINE)
_OLD_ERROR_PREFIX = re.compile(r"^(?:iperf3: )?error - ")
# Old UDP reports print printf's `nan`/`-nan` (esnet/iperf#613); only bare values are replaced.
_BARE_NONFINITE = re.compile(
    r"(?<=[:\[,])(\s*)[-+]?(?:nan|inf(?:inity)?)(?=\s*[,\]}])", re.IGNORECASE
)

_JSON_START = re.compile(r'"start"\s*:\s*\{')
_JSON_VERSION = re.compile(r'"version"\s*:\s*"iperf 3')
_JSON_CONNECTED = re.compile(r'"connected"\s*:\s*\[')
_JSON_BODY = re.compile(r'"(?:intervals|end)"\s*:\s*[\[{]')
_STREAM_EVENT = re.compile(r'^\{\s*"event"\s*:\s*"(?:start|interval|end|error)"', re.MULTILINE)


class _HumanReadable(Exception):
    """The text is iperf3's human-readable output, not JSON."""


class _CaseFailed(Exception):
    """The run is iperf3's but yielded no usable number; carries the one-line reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def sniff(head: str, path: str) -> float:
    """Confidence that ``head`` is iperf3 output, judged by content alone."""
    if _JSON_START.search(head) and _JSON_VERSION.search(head):
        return 1.0
    if _STREAM_EVENT.search(head) and (_JSON_VERSION.search(head) or _JSON_CONNECTED.search(head)):
        return 1.0 if _JSON_VERSION.search(head) else 0.9
    if _JSON_START.search(head) and _JSON_CONNECTED.search(head) and _JSON_BODY.search(head):
        return 0.95
    # Human-readable output is the iperf3-text format's (iperf3_text.py).
    return 0.0


def parse(text: str, ctx: ParseContext) -> Parsed:
    """Measurements of one iperf3 run, or a failed case saying why there are none."""
    try:
        report = _load_report(text, ctx.path)
        measurements = _measure(report, ctx.platform, ctx.case)
    except _CaseFailed as failed:
        return Parsed(failures=(FailedCase(ctx.platform, ctx.case, failed.reason),))
    except _HumanReadable:
        # A run without -J handed to this format (by name, in a config): read it as text.
        return iperf3_text.parse(text, ctx)
    return Parsed(measurements=measurements)


# --- reading the file -------------------------------------------------------------------------


def _load_report(text: str, path: str) -> dict[str, Any]:
    if not text.strip():
        raise ParseError(path, NAME, "the file is empty")
    value = _load_stream(text, path)
    if value is None:
        try:
            value = load_json(text, path, NAME)
        except ParseError as error:
            value = _recover(text, path, error)
    if not isinstance(value, dict):
        raise ParseError(path, NAME, f"expected a JSON object, found {type(value).__name__}")
    if "event" in value and not any(key in value for key in _TOP_KEYS):
        value = _from_events([value])  # a --json-stream file with a single line
    if not any(key in value for key in _TOP_KEYS):
        raise ParseError(path, NAME, "a JSON object without iperf3's start, intervals or end")
    trailing = _ERROR_LINE.search(text)
    if value.get("error") is None and trailing:
        value = {**value, "error": trailing.group(1)}
    return value


def _recover(text: str, path: str, error: ParseError) -> Any:
    """The outermost object of polluted output (warnings before, error lines after, nan)."""
    first, last = text.find("{"), text.rfind("}")
    if first != -1:
        candidate = text[first : last + 1] if last > first else text[first:]
        try:
            return load_json(_BARE_NONFINITE.sub(r"\1null", candidate), path, NAME)
        except ParseError:
            pass
    raise _not_json(text, error)


def _not_json(text: str, error: ParseError) -> Exception:
    """Why unreadable text failed: iperf3's own error, cut-short JSON, text output, or junk."""
    trailing = _ERROR_LINE.search(text)
    if trailing:
        return _CaseFailed(_error_reason(trailing.group(1)))
    if _JSON_START.search(text) or _JSON_VERSION.search(text) or _JSON_BODY.search(text):
        return _CaseFailed(TRUNCATED)
    if iperf3_text.sniff(text, "") > 0:
        return _HumanReadable()
    return error


def _load_stream(text: str, path: str) -> dict[str, Any] | None:
    """A --json-stream file (one ``{"event": ..., "data": ...}`` per line) as a -J report."""
    events: list[dict[str, Any]] = []
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line.startswith("{"):
            continue  # warnings and error lines around the events
        try:
            event = load_json(line, path, NAME)
        except ParseError:
            if not events:
                return None  # a pretty-printed -J report: its first line is a lone "{"
            continue  # a line cut short at the end of a killed run
        if not isinstance(event, dict) or "event" not in event:
            return None if not events else _from_events(events)
        events.append(event)
    return _from_events(events) if len(events) > 1 else None


def _from_events(events: list[dict[str, Any]]) -> dict[str, Any]:
    report: dict[str, Any] = {"intervals": []}
    for event in events:
        kind, data = event.get("event"), event.get("data")
        if kind == "interval":
            report["intervals"].append(data)
        elif kind in ("start", "end", "error"):
            report[str(kind)] = data
    return report


# --- turning a report into numbers ------------------------------------------------------------


def _measure(report: Mapping[str, Any], platform: str, case: str) -> tuple[Measurement, ...]:
    if report.get("error") is not None:
        raise _CaseFailed(_error_reason(report["error"]))
    end = report.get("end")
    if not isinstance(end, dict) or not end:
        raise _CaseFailed(NO_SUMMARY)
    udp = _is_udp(report, end)
    bidir = any(key in end for key in _BIDIR_KEYS)
    settings = _settings(report, udp, bidir)

    def metric(
        name: str, value: float | None, unit: str, better: Better, scale: Scale = Scale.RATIO
    ) -> list[Measurement]:
        if value is None:
            return []
        return [Measurement(platform, f"{case}.{name}", value, unit, better, scale, settings)]

    # --bidir reports each direction on its own; the reverse one has `_bidir_reverse` keys.
    directions = (("forward", ""), ("reverse", "_bidir_reverse")) if bidir else (("receiver", ""),)
    result: list[Measurement] = []
    rates = [(name, suffix, _goodput_mbps(end, suffix, udp)) for name, suffix in directions]
    for name, _, rate in rates:
        result += metric(f"{name}_mbps", rate, "Mbps", Better.HIGHER)
    if bidir:
        # The RX + TX total of one run: the two receivers' rates, read at the same time.
        result += metric("total_mbps", sum(rate for _, _, rate in rates), "Mbps", Better.HIGHER)
    if udp:
        for _, suffix, _ in rates:
            # The forward direction keeps the plain names that a one-way run has.
            prefix = "reverse_" if suffix else ""
            receiver = _section(end, "sum_received" + suffix) or _section(end, "sum" + suffix)
            loss = _number(receiver, "lost_percent")
            result += metric(f"{prefix}lost_percent", loss, "%", Better.LOWER, Scale.POINTS)
            lost = _number(receiver, "lost_packets")
            result += metric(f"{prefix}lost_packets", lost, "packets", Better.LOWER, Scale.COUNT)
            packets = _number(receiver, "packets")
            # A volume, not an error counter: 5 % fewer datagrams is −5 %, not −446 counts.
            result += metric(f"{prefix}packets", packets, "packets", Better.HIGHER)
            jitter = _number(receiver, "jitter_ms")
            result += metric(f"{prefix}jitter_ms", jitter, "ms", Better.LOWER)
    else:
        retransmits = _number(_section(end, "sum_sent"), "retransmits")
        result += metric("retransmits", retransmits, "", Better.LOWER, Scale.COUNT)
    cpu = _section(end, "cpu_utilization_percent")
    # How busy each host was for that rate: lower is better at an equal rate.
    result += metric("cpu_host_percent", _number(cpu, "host_total"), "%", Better.LOWER)
    result += metric("cpu_remote_percent", _number(cpu, "remote_total"), "%", Better.LOWER)
    return tuple(result)


def _settings(report: Mapping[str, Any], udp: bool, bidir: bool) -> Settings:
    """What the run was asked to do (start.test_start), never what it measured."""
    start = report.get("start")
    asked = start.get("test_start") if isinstance(start, dict) else None
    if not isinstance(asked, dict):
        return settings_of(protocol="UDP" if udp else "TCP", bidir=bidir)

    def asked_number(key: str) -> float | None:
        return finite_number(asked.get(key))

    def when_set(key: str) -> float | None:
        value = asked_number(key)
        return value if value else None

    reverse = asked_number("reverse")
    return settings_of(
        protocol="UDP" if udp else "TCP",
        streams=asked_number("num_streams"),
        duration=asked_number("duration"),
        omit=asked_number("omit"),
        target_bitrate=asked_number("target_bitrate"),
        blksize=asked_number("blksize"),
        reverse=None if reverse is None else bool(reverse),
        # test_start does not say --bidir (3.12); the _bidir_reverse sums do.
        bidir=bidir,
        bytes=when_set("bytes"),
        blocks=when_set("blocks"),
        tos=when_set("tos"),
    )


def _is_udp(report: Mapping[str, Any], end: Mapping[str, Any]) -> bool:
    start = report.get("start")
    test_start = start.get("test_start") if isinstance(start, dict) else None
    if isinstance(test_start, dict) and isinstance(test_start.get("protocol"), str):
        return bool(test_start["protocol"].upper() == "UDP")
    # Only UDP reports have the mixed-side `sum`; TCP has sum_sent/sum_received alone.
    return isinstance(end.get("sum"), dict)


def _goodput_mbps(end: Mapping[str, Any], suffix: str, udp: bool) -> float:
    """What the receiver read, in Mbit/s; a run that moved nothing is a failure, never 0."""
    received = _section(end, "sum_received" + suffix)
    if received is not None:
        bits = _number(received, "bits_per_second")
        if _number(received, "bytes") == 0:
            raise _CaseFailed(NO_DATA)
    elif udp and (mixed := _section(end, "sum" + suffix)) is not None:
        # Before 3.11 UDP has only `sum`, whose rate is the sender's and loss the receiver's.
        sent, lost = _number(mixed, "bits_per_second"), _number(mixed, "lost_percent")
        bits = None if sent is None or lost is None or lost > 100 else sent * (1 - lost / 100)
    else:
        bits = None
    if bits is None:
        raise _CaseFailed(NO_THROUGHPUT)
    if bits == 0:
        raise _CaseFailed(NO_DATA)
    return bits / 1e6


def _section(end: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    value = end.get(key)
    return value if isinstance(value, dict) else None


def _number(section: Mapping[str, Any] | None, key: str) -> float | None:
    """A finite, non-negative number from ``section``; anything else counts as absent."""
    if section is None:
        return None
    number = finite_number(section.get(key))
    return number if number is not None and number >= 0 else None


def _error_reason(error: Any) -> str:
    message = " ".join(str(error).split())
    message = _OLD_ERROR_PREFIX.sub("", message)
    prefix = "iperf3 reported an error"
    if not message:
        return prefix
    prefix += ": "
    room = MAX_REASON - len(prefix)
    if len(message) > room:
        message = message[: room - 1] + "…"
    return prefix + message


FORMAT = Format(
    name=NAME,
    reads="iperf3 -J output (TCP, UDP, -R, -P, --bidir, --json-stream)",
    sniff=sniff,
    parse=parse,
)
