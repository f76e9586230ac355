"""netperf output (classic, ``-P 0``, ``-o`` CSV, ``-O`` columns, ``-k`` keys): rates, latencies."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from perfbot.engine.read.formats._base import SNIFF_BYTES, Format
from perfbot.engine.read.formats._common import number_from_text
from perfbot.engine.read.formats._netperf_columns import (
    CELL,
    DEFAULT_UNIT,
    KEY_VALUE,
    KNOWN_KEYS,
    TRANS,
    Kind,
    Reading,
    csv_records,
    field_readings,
    human_records,
    key_records,
    one_line,
    reading,
    test_length,
    unit_label,
    with_settings,
)
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

NAME = "netperf"
MAX_REASON = 200

# `MIGRATED TCP STREAM TEST from 0.0.0.0 ...`; older netperf and the omni tests print no
# `MIGRATED` (`OMNI Send TEST from ...`), so only the `TEST from` part is required.
_BANNER = re.compile(
    r"^[ \t]*(?P<migrated>MIGRATED[ \t]+)?"
    r"(?P<test>[A-Z][\w/|+-]*(?:[ \t]+[\w/|+-]+)*?)[ \t]+TEST[ \t]+from[ \t]",
    re.MULTILINE,
)
_CONNECT_ERROR = re.compile(
    r"^[^\n]*(establish control|netserver listening)[^\n]*", re.IGNORECASE | re.MULTILINE
)
# Other messages netperf prints when a test dies (`netperf: send_omni: ...`,
# `recv_response: partial response received`): enough to know the file is netperf's.
_NETPERF_ERROR = re.compile(
    r"^[ \t]*(netperf|netserver|send_\w+|recv_\w+|establish_control)\b[^\n]*:[^\n]*",
    re.MULTILINE,
)

_FIRST_BURST = re.compile(r": first burst (\d+)")


@dataclass(frozen=True, slots=True)
class _Row:
    """A line made only of numbers; ``unit`` is a trailing units word (omni ``-O`` output)."""

    cells: tuple[float | None, ...]
    unit: str | None = None


@dataclass(frozen=True, slots=True)
class _Run:
    """The lines of one test: from a banner to the next, or a banner-less file."""

    kind: Kind | None
    lines: tuple[str, ...]
    # What the banner states: the test (`TCP REQUEST/RESPONSE`) and its first burst.
    stated: Settings = ()


def sniff(head: str, path: str) -> float:
    body = head.lstrip("\ufeff \t\r\n")
    if not body or body[0] in "{[":
        return 0.0
    banner = _BANNER.search(head)
    if banner:
        return 1.0 if banner.group("migrated") else 0.9
    if _CONNECT_ERROR.search(head):
        return 0.9
    known = sum(m.group("key") in KNOWN_KEYS for m in KEY_VALUE.finditer(head))
    if known >= 2:
        return 0.9
    # Bare -P 0 lines carry no name at all: only a file made of nothing else that has a
    # netperf shape is a plausible candidate, and other formats must be able to win.
    return 0.5 if _only_result_rows(head) else 0.0


def parse(text: str, ctx: ParseContext) -> Parsed:
    lines = text.splitlines()
    if not any(line.strip() for line in lines):
        raise ParseError(ctx.path, NAME, "the file is empty")
    runs = _split_runs(lines)
    recognised = False
    readings: list[Reading] = []
    for run in runs:
        seen, found = _read_run(run)
        recognised = recognised or seen
        readings.extend(found)
    if readings:
        return Parsed(measurements=tuple(_measurement(r, ctx) for r in readings))
    # A failed repetition among good ones is dropped above; a file with no number at all is
    # a failed case, so that a broken run shows as failed and never as zero.
    if not (recognised or _NETPERF_ERROR.search(text) or _CONNECT_ERROR.search(text)):
        raise ParseError(ctx.path, NAME, _unreadable_reason(lines))
    return Parsed(failures=(FailedCase(ctx.platform, ctx.case, _failure_reason(text)),))


def _split_runs(lines: list[str]) -> list[_Run]:
    runs: list[_Run] = []
    kind: Kind | None = None
    stated: Settings = ()
    start = 0
    for index, line in enumerate(lines):
        banner = _BANNER.match(line)
        if banner is None:
            continue
        if index > start:
            runs.append(_Run(kind, tuple(lines[start:index]), stated))
        kind, start = _kind_of(banner.group("test")), index + 1
        burst = _FIRST_BURST.search(line)
        test = " ".join(banner.group("test").split())
        stated = settings_of(test=test, first_burst=burst.group(1) if burst else None)
    runs.append(_Run(kind, tuple(lines[start:]), stated))
    return runs


def _kind_of(test: str) -> Kind:
    upper = test.upper()
    # Omni request/response tests are called `OMNI Send|Recv`, the migrated ones
    # `TCP REQUEST/RESPONSE`, `TCP Connect/Request/Response` or `TCP Connect/Close`.
    if "REQUEST/RESPONSE" in upper or "CONNECT/" in upper or "|" in upper:
        return Kind.RR
    if "UDP" in upper and "STREAM" in upper:
        return Kind.UDP_STREAM
    return Kind.STREAM


def _read_run(run: _Run) -> tuple[bool, list[Reading]]:
    """Whether the run looks like netperf output, and what it measured."""
    seen, readings = _read_layout(run)
    # Each result's own sizes, then what the banner says of the whole test.
    return seen, [
        replace(r, settings=settings_of(**{**dict(run.stated), **dict(r.settings)}))
        for r in readings
    ]


def _read_layout(run: _Run) -> tuple[bool, list[Reading]]:
    kind = run.kind or Kind.UNKNOWN
    # -k, -o and -O name their columns; classic and -P 0 lines are read by position.
    records = key_records(run.lines) or csv_records(run.lines) or human_records(run.lines)
    if records:
        return True, [r for record in records for r in field_readings(record, kind)]
    rows = [row for row in map(_row, run.lines) if row is not None]
    seen, readings = _row_readings(rows, kind, _header_unit(run.lines))
    return seen or run.kind is not None, readings


def _header_unit(lines: Iterable[str]) -> str:
    """The throughput unit of a classic header (`10^6bits/sec`), or the -f m default."""
    for line in lines:
        if line.lstrip().startswith("Interim result"):
            continue  # demo-mode lines on stderr, interleaved with the header
        for token in line.split():
            label = unit_label(token)
            if label is not None and label != TRANS:
                return label
    return DEFAULT_UNIT


def _row(line: str) -> _Row | None:
    tokens = line.split()
    unit = unit_label(tokens[-1]) if len(tokens) > 1 else None
    if unit is not None:
        tokens = tokens[:-1]
    if not tokens or not all(CELL.fullmatch(token) for token in tokens):
        return None
    return _Row(tuple(number_from_text(token) for token in tokens), unit)


def _infer_kind(row: _Row, following: _Row | None) -> Kind:
    """The test of a banner-less (-P 0) result line, guessed from its shape.

    netperf prints, per test (the larger widths are with -c/-C CPU columns):
    TCP_RR/UDP_RR 6 or 10 columns, then a 2-column line of remote socket sizes;
    UDP_STREAM a sender line of 6 (8) columns, then a receiver line of 4 (6);
    TCP_STREAM/TCP_MAERTS a single line of 5 (9) columns.
    """
    width = len(row.cells)
    after = len(following.cells) if following is not None else 0
    if width in (6, 10) and after == 2:
        return Kind.RR
    if (width, after) in ((6, 4), (8, 6)):
        return Kind.UDP_STREAM
    if width in (5, 9):
        return Kind.STREAM
    return Kind.UNKNOWN


def _row_readings(rows: list[_Row], kind: Kind, unit: str) -> tuple[bool, list[Reading]]:
    """Readings of every result line; whether any line had a netperf shape."""
    seen = False
    readings: list[Reading] = []
    index = 0
    while index < len(rows):
        row = rows[index]
        following = rows[index + 1] if index + 1 < len(rows) else None
        used = _read_result(row, following, kind, unit)
        if used is None:
            index += 1
            continue
        seen = True
        index += used[0]
        readings += used[1]
    return seen, readings


def _read_result(
    row: _Row, following: _Row | None, kind: Kind, unit: str
) -> tuple[int, list[Reading]] | None:
    """How many rows one result takes, and its readings; None when the row is no result."""
    if row.unit is not None:
        # Omni default output ends with THROUGHPUT and THROUGHPUT_UNITS.
        return 1, _throughput(row.cells[-1], row.unit)
    shape = kind if kind is not Kind.UNKNOWN else _infer_kind(row, following)
    width = len(row.cells)
    cells = row.cells
    # The sizes the test was run with; socket sizes are left out, as the kernel picks them.
    if shape is Kind.RR and width >= 6:
        # The 2-column line after it holds the remote socket sizes: nothing to compare.
        skip = 2 if following is not None and len(following.cells) == 2 else 1
        sizes = {"request_size": _cell(cells, 2), "response_size": _cell(cells, 3)}
        return skip, with_settings(_rr_readings(cells), **sizes, length_s=_elapsed(cells, 4))
    if shape is Kind.UDP_STREAM and following is not None and 4 <= len(following.cells) < width:
        readings = _udp_readings(cells, following.cells, unit)
        return 2, with_settings(readings, message_size=_cell(cells, 1), length_s=_elapsed(cells, 2))
    if shape is Kind.STREAM and width >= 5:
        readings = _stream_readings(cells, unit)
        return 1, with_settings(readings, message_size=_cell(cells, 2), length_s=_elapsed(cells, 3))
    return None


def _elapsed(cells: tuple[float | None, ...], index: int) -> int | None:
    return test_length(_cell(cells, index))


def _stream_readings(cells: tuple[float | None, ...], unit: str) -> list[Reading]:
    # recv socket, send socket, message size, elapsed, throughput, then with -c -C:
    # local CPU %, remote CPU %, local and remote service demand in us/KB.
    return (
        _throughput(_cell(cells, 4), unit)
        + _cpu(_cell(cells, 5), _cell(cells, 6))
        + _demand("local", _cell(cells, 7), "kb")
        + _demand("remote", _cell(cells, 8), "kb")
    )


def _rr_readings(cells: tuple[float | None, ...]) -> list[Reading]:
    # send socket, recv socket, request size, response size, elapsed, transactions/s,
    # then with -c -C: local CPU %, remote CPU %, local and remote service demand in us/Tr.
    return (
        reading("transaction_rate", _cell(cells, 5), TRANS, Better.HIGHER)
        + _cpu(_cell(cells, 6), _cell(cells, 7))
        + _demand("local", _cell(cells, 8), "trans")
        + _demand("remote", _cell(cells, 9), "trans")
    )


def _udp_readings(
    sender: tuple[float | None, ...], receiver: tuple[float | None, ...], unit: str
) -> list[Reading]:
    # sender: socket, message size, elapsed, messages sent, errors, throughput [CPU, demand];
    # receiver: socket, elapsed, messages received, throughput [CPU, demand]. What arrived
    # is what counts, so the receiver's throughput is the result.
    sent, received = _cell(sender, 3), _cell(receiver, 2)
    lost = sent - received if sent is not None and received is not None else None
    return (
        _throughput(_cell(receiver, 3), unit)
        + reading("lost_messages", lost, "messages", Better.LOWER, Scale.COUNT)
        + _cpu(_cell(sender, 6), _cell(receiver, 4))
        + _demand("local", _cell(sender, 7), "kb")
        + _demand("remote", _cell(receiver, 5), "kb")
    )


def _throughput(value: float | None, unit: str) -> list[Reading]:
    if unit == TRANS:
        return reading("transaction_rate", value, TRANS, Better.HIGHER)
    return reading("throughput", value, unit, Better.HIGHER)


def _cpu(local: float | None, remote: float | None) -> list[Reading]:
    return reading("local_cpu_percent", local, "%", Better.LOWER) + reading(
        "remote_cpu_percent", remote, "%", Better.LOWER
    )


def _demand(side: str, value: float | None, per: str) -> list[Reading]:
    unit = "µs/KB" if per == "kb" else "µs/trans"
    return reading(f"{side}_service_demand_us_per_{per}", value, unit, Better.LOWER)


def _cell(cells: tuple[float | None, ...], index: int) -> float | None:
    return cells[index] if index < len(cells) else None


def _measurement(reading: Reading, ctx: ParseContext) -> Measurement:
    return Measurement(
        platform=ctx.platform,
        metric=f"{ctx.case}.{reading.suffix}",
        value=reading.value,
        unit=reading.unit,
        better=reading.better,
        scale=reading.scale,
        settings=reading.settings,
    )


def _unreadable_reason(lines: list[str]) -> str:
    # `-P 0 -- -o a,b` prints the values without the names: their order is only known
    # to whoever chose the selectors.
    if any(
        "," in line and all(CELL.fullmatch(c.strip()) for c in line.split(",")) for line in lines
    ):
        return (
            "-o values without their header line (from -P 0) cannot be named; drop -P 0 or use -k"
        )
    return "no netperf banner, result line or error message found"


def _failure_reason(text: str) -> str:
    connect = _CONNECT_ERROR.search(text)
    if connect:
        return one_line(f"netperf could not connect: {connect.group(0)}", MAX_REASON)
    error = _NETPERF_ERROR.search(text)
    if error:
        return one_line(f"netperf failed: {error.group(0)}", MAX_REASON)
    return "netperf printed no result line with a usable number"


def _only_result_rows(head: str) -> bool:
    """Whether ``head`` is nothing but complete banner-less result lines of known shapes."""
    lines = head.splitlines()
    if len(head) >= SNIFF_BYTES:
        lines = lines[:-1]  # cut off mid-line by the sniffer
    rows = [_row(line) for line in lines if line.strip()]
    if not rows or any(row is None or row.unit is not None for row in rows):
        return False
    numeric = [row for row in rows if row is not None]
    if any(cell is None for row in numeric for cell in row.cells):
        return False
    index = 0
    while index < len(numeric):
        following = numeric[index + 1] if index + 1 < len(numeric) else None
        used = _read_result(numeric[index], following, Kind.UNKNOWN, DEFAULT_UNIT)
        if used is None:
            return False
        index += used[0]
    return True


FORMAT = Format(
    name=NAME,
    reads="netperf classic, -P 0, -o CSV, -O columns and -k key=value output (STREAM and RR)",
    sniff=sniff,
    parse=parse,
)
