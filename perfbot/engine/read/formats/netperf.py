"""netperf output (classic, ``-P 0``, ``-o`` CSV, ``-O`` columns, ``-k`` keys): rates, latencies."""

from __future__ import annotations

import enum
import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from perfbot.engine.read.formats._base import SNIFF_BYTES, Format
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

NAME = "netperf"
MAX_REASON = 200
TRANS = "trans/s"

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
_KEY_VALUE = re.compile(r"^[ \t]*(?P<key>[A-Z][A-Z0-9_]*)=(?P<value>[^\r\n]*)$", re.MULTILINE)
# A cell of a result line: a decimal, or a non-finite value netperf's printf may write.
_CELL = re.compile(
    r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf(?:inity)?)", re.IGNORECASE
)
# format_units() in netlib.c + "/sec" (classic headers) or "/s" (omni, -c -C headers).
_UNIT = re.compile(r"(?P<unit>10\^[0369]bits|[KMG]?Bytes|Trans?)/s(?:ec)?")
# netperf's K/M/GBytes are powers of 1024; the labels follow the project's unit names.
_UNIT_LABELS = {
    "10^0bits": "bps",
    "10^3bits": "kbps",
    "10^6bits": "Mbps",
    "10^9bits": "Gbps",
    "Bytes": "B/s",
    "KBytes": "kB/s",
    "MBytes": "MB/s",
    "GBytes": "GB/s",
    "Trans": TRANS,
    "Tran": TRANS,
}
# Without a header (-P 0) or THROUGHPUT_UNITS the unit is unknown: netperf's default
# (`-f m`) is 10^6 bits/s, so that is assumed.
_DEFAULT_UNIT = "Mbps"

# Omni output selectors (-k keys; -o header names are mapped onto them) other than
# THROUGHPUT/THROUGHPUT_UNITS, which need each other and are handled apart.
_FIELDS: dict[str, tuple[str, str, Better]] = {
    "MIN_LATENCY": ("min_latency_us", "µs", Better.LOWER),
    "MEAN_LATENCY": ("mean_latency_us", "µs", Better.LOWER),
    "MAX_LATENCY": ("max_latency_us", "µs", Better.LOWER),
    "STDDEV_LATENCY": ("stddev_latency_us", "µs", Better.LOWER),
    "P50_LATENCY": ("p50_latency_us", "µs", Better.LOWER),
    "P90_LATENCY": ("p90_latency_us", "µs", Better.LOWER),
    "P99_LATENCY": ("p99_latency_us", "µs", Better.LOWER),
    "TRANSACTION_RATE": ("transaction_rate", TRANS, Better.HIGHER),
    "LOCAL_CPU_UTIL": ("local_cpu_percent", "%", Better.LOWER),
    "REMOTE_CPU_UTIL": ("remote_cpu_percent", "%", Better.LOWER),
}
_THROUGHPUT_KEYS = ("THROUGHPUT", "THROUGHPUT_UNITS")
# Omni selectors that say what the test was asked to do, with their fingerprint names.
_SETTING_KEYS = {
    "PROTOCOL": "protocol",
    "DIRECTION": "direction",
    "REQUEST_SIZE": "request_size",
    "RESPONSE_SIZE": "response_size",
    "LOCAL_SEND_SIZE": "message_size",
    "BURST_SIZE": "first_burst",
}
# -O column names: the four header words of each selector joined (set_output_elt calls in
# nettest_omni.c). Matched whole, unlike the looser -o CSV names.
_OMNI_NAMES = {
    "minimum latency microseconds": "MIN_LATENCY",
    "mean latency microseconds": "MEAN_LATENCY",
    "maximum latency microseconds": "MAX_LATENCY",
    "stddev latency microseconds": "STDDEV_LATENCY",
    "50th percentile latency microseconds": "P50_LATENCY",
    "90th percentile latency microseconds": "P90_LATENCY",
    "99th percentile latency microseconds": "P99_LATENCY",
    "transaction rate tran/s": "TRANSACTION_RATE",
    "throughput": "THROUGHPUT",
    "throughput units": "THROUGHPUT_UNITS",
    "local cpu util %": "LOCAL_CPU_UTIL",
    "remote cpu util %": "REMOTE_CPU_UTIL",
    "protocol": "PROTOCOL",
    "direction": "DIRECTION",
    "request size bytes": "REQUEST_SIZE",
    "response size bytes": "RESPONSE_SIZE",
    "local send size": "LOCAL_SEND_SIZE",
    "initial burst requests": "BURST_SIZE",
    "elapsed time (sec)": "ELAPSED_TIME",
}
_FIRST_BURST = re.compile(r": first burst (\d+)")
_KNOWN_KEYS = frozenset(_FIELDS) | frozenset(_THROUGHPUT_KEYS)
# Words of the -o CSV header names (`50th Percentile Latency Microseconds`) → -k keys.
_LATENCY_WORDS = (
    ("minimum", "MIN_LATENCY"),
    ("mean", "MEAN_LATENCY"),
    ("maximum", "MAX_LATENCY"),
    ("stddev", "STDDEV_LATENCY"),
    ("50th", "P50_LATENCY"),
    ("90th", "P90_LATENCY"),
    ("99th", "P99_LATENCY"),
)


class _Kind(enum.Enum):
    """How a test lays out its result lines."""

    STREAM = "stream"  # TCP_STREAM, TCP_MAERTS, TCP_SENDFILE: one line
    RR = "rr"  # TCP_RR, UDP_RR, TCP_CRR: one line, then the remote socket sizes
    UDP_STREAM = "udp_stream"  # a sender line, then a receiver line
    UNKNOWN = "unknown"  # -P 0: no banner, the layout is inferred from the columns


@dataclass(frozen=True, slots=True)
class _Reading:
    suffix: str
    value: float
    unit: str
    better: Better
    scale: Scale = Scale.RATIO
    settings: Settings = ()


@dataclass(frozen=True, slots=True)
class _Row:
    """A line made only of numbers; ``unit`` is a trailing units word (omni ``-O`` output)."""

    cells: tuple[float | None, ...]
    unit: str | None = None


@dataclass(frozen=True, slots=True)
class _Run:
    """The lines of one test: from a banner to the next, or a banner-less file."""

    kind: _Kind | None
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
    known = sum(m.group("key") in _KNOWN_KEYS for m in _KEY_VALUE.finditer(head))
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
    readings: list[_Reading] = []
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
    kind: _Kind | None = None
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


def _kind_of(test: str) -> _Kind:
    upper = test.upper()
    # Omni request/response tests are called `OMNI Send|Recv`, the migrated ones
    # `TCP REQUEST/RESPONSE`, `TCP Connect/Request/Response` or `TCP Connect/Close`.
    if "REQUEST/RESPONSE" in upper or "CONNECT/" in upper or "|" in upper:
        return _Kind.RR
    if "UDP" in upper and "STREAM" in upper:
        return _Kind.UDP_STREAM
    return _Kind.STREAM


def _read_run(run: _Run) -> tuple[bool, list[_Reading]]:
    """Whether the run looks like netperf output, and what it measured."""
    seen, readings = _read_layout(run)
    # Each result's own sizes, then what the banner says of the whole test.
    return seen, [
        replace(r, settings=settings_of(**{**dict(run.stated), **dict(r.settings)}))
        for r in readings
    ]


def _read_layout(run: _Run) -> tuple[bool, list[_Reading]]:
    kind = run.kind or _Kind.UNKNOWN
    # -k, -o and -O name their columns; classic and -P 0 lines are read by position.
    records = _key_records(run.lines) or _csv_records(run.lines) or _human_records(run.lines)
    if records:
        return True, [r for record in records for r in _field_readings(record, kind)]
    rows = [row for row in map(_row, run.lines) if row is not None]
    seen, readings = _row_readings(rows, kind, _header_unit(run.lines))
    return seen or run.kind is not None, readings


def _human_records(lines: tuple[str, ...]) -> list[dict[str, str]]:
    """-O output: four header lines, each column's name one word per line (print_omni_human
    in netperf's nettest_omni.c), then the values, every column left-aligned in its width.
    """
    records: list[dict[str, str]] = []
    for index in range(4, len(lines)):
        header, values = lines[index - 4 : index], lines[index]
        if not header[0].strip() or not values.strip():
            continue
        record = _human_record(header, values)
        if record is not None:
            records.append(record)
    return records


def _human_record(header: tuple[str, ...], values: str) -> dict[str, str] | None:
    block = (*header, values)
    width = max(len(line) for line in block)
    padded = [line.ljust(width) for line in block]
    # A column ends where every line has a blank: netperf leaves one after each width.
    filled = [any(line[at] != " " for line in padded) for at in range(width)]
    spans: list[tuple[int, int]] = []
    for at, used in enumerate(filled):
        if used and (at == 0 or not filled[at - 1]):
            spans.append((at, at + 1))
        elif used:
            spans[-1] = (spans[-1][0], at + 1)
    record: dict[str, str] = {}
    for begin, end in spans:
        name = " ".join(" ".join(line[begin:end].split()) for line in header).split()
        value = padded[-1][begin:end].split()
        key = _OMNI_NAMES.get(" ".join(name).lower())
        if key is None or len(value) != 1:
            continue
        record[key] = value[0]
    # Only exact -O column names count, so that a classic header never reads as one.
    return record if _KNOWN_KEYS & record.keys() else None


def _key_records(lines: Iterable[str]) -> list[dict[str, str]]:
    """-k output as one dict per test; a repeated key starts the next test's record."""
    records: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in lines:
        match = _KEY_VALUE.match(line)
        if match is None:
            continue
        key, value = match.group("key"), match.group("value")
        if key in current:
            records.append(current)
            current = {}
        current[key] = value
    records.append(current)
    return [record for record in records if _KNOWN_KEYS & record.keys()]


def _csv_records(lines: tuple[str, ...]) -> list[dict[str, str]]:
    """-o output: a header of human names, then a line of as many comma-separated values."""
    records: list[dict[str, str]] = []
    content = [line for line in lines if line.strip()]
    for header, values in itertools.pairwise(content):
        names, cells = header.split(","), values.split(",")
        if len(names) != len(cells) or any(_csv_key(cell) for cell in cells):
            continue
        keys = [_csv_key(name) for name in names]
        record = {key: cell for key, cell in zip(keys, cells, strict=True) if key is not None}
        # The value line must hold numbers, so that a header line followed by another
        # header line (classic output) is not taken for a table.
        if record and any(_CELL.fullmatch(cell.strip()) for cell in cells):
            records.append(record)
    return records


def _csv_key(name: str) -> str | None:
    lowered = " ".join(name.strip().strip('"').lower().split())
    if lowered in _OMNI_NAMES:
        return _OMNI_NAMES[lowered]
    if lowered.upper().replace(" ", "_") in _KNOWN_KEYS:
        return lowered.upper().replace(" ", "_")
    if "latency" in lowered:
        return next((key for word, key in _LATENCY_WORDS if word in lowered.split()), None)
    if lowered.startswith("transaction rate"):
        return "TRANSACTION_RATE"
    if lowered.startswith("throughput"):
        return "THROUGHPUT_UNITS" if "units" in lowered else "THROUGHPUT"
    if "cpu util" in lowered and lowered.split()[0] in ("local", "remote"):
        return f"{lowered.split()[0].upper()}_CPU_UTIL"
    return None


def _field_readings(fields: Mapping[str, str], kind: _Kind) -> list[_Reading]:
    readings = _named_readings(fields, kind)
    stated: dict[str, object] = {
        name: _one_line(fields[key], 40) for key, name in _SETTING_KEYS.items() if key in fields
    }
    if "ELAPSED_TIME" in fields:
        stated["length_s"] = _test_length(_number(fields["ELAPSED_TIME"]))
    return _stated(readings, **stated)


def _named_readings(fields: Mapping[str, str], kind: _Kind) -> list[_Reading]:
    readings: list[_Reading] = []
    for key, (suffix, unit, better) in _FIELDS.items():
        if key in fields:
            readings += _reading(suffix, _number(fields[key]), unit, better)
    if "THROUGHPUT" in fields:
        unit = _throughput_unit(fields.get("THROUGHPUT_UNITS"), kind)
        value = _number(fields["THROUGHPUT"])
        # For RR tests THROUGHPUT is the transaction rate again, in Trans/s.
        if unit != TRANS:
            readings += _reading("throughput", value, unit, Better.HIGHER)
        elif "TRANSACTION_RATE" not in fields:
            readings += _reading("transaction_rate", value, TRANS, Better.HIGHER)
    return readings


def _throughput_unit(units: str | None, kind: _Kind) -> str:
    if units is None or not units.strip():
        # Omni reports RR throughput in Trans/s and everything else in 10^6bits/s.
        return TRANS if kind is _Kind.RR else _DEFAULT_UNIT
    label = _unit_label(units.strip())
    return label if label is not None else _one_line(units, 20)


def _unit_label(token: str) -> str | None:
    match = _UNIT.fullmatch(token)
    return _UNIT_LABELS[match.group("unit")] if match else None


def _header_unit(lines: Iterable[str]) -> str:
    """The throughput unit of a classic header (`10^6bits/sec`), or the -f m default."""
    for line in lines:
        if line.lstrip().startswith("Interim result"):
            continue  # demo-mode lines on stderr, interleaved with the header
        for token in line.split():
            label = _unit_label(token)
            if label is not None and label != TRANS:
                return label
    return _DEFAULT_UNIT


def _row(line: str) -> _Row | None:
    tokens = line.split()
    unit = _unit_label(tokens[-1]) if len(tokens) > 1 else None
    if unit is not None:
        tokens = tokens[:-1]
    if not tokens or not all(_CELL.fullmatch(token) for token in tokens):
        return None
    return _Row(tuple(number_from_text(token) for token in tokens), unit)


def _infer_kind(row: _Row, following: _Row | None) -> _Kind:
    """The test of a banner-less (-P 0) result line, guessed from its shape.

    netperf prints, per test (the larger widths are with -c/-C CPU columns):
    TCP_RR/UDP_RR 6 or 10 columns, then a 2-column line of remote socket sizes;
    UDP_STREAM a sender line of 6 (8) columns, then a receiver line of 4 (6);
    TCP_STREAM/TCP_MAERTS a single line of 5 (9) columns.
    """
    width = len(row.cells)
    after = len(following.cells) if following is not None else 0
    if width in (6, 10) and after == 2:
        return _Kind.RR
    if (width, after) in ((6, 4), (8, 6)):
        return _Kind.UDP_STREAM
    if width in (5, 9):
        return _Kind.STREAM
    return _Kind.UNKNOWN


def _row_readings(rows: list[_Row], kind: _Kind, unit: str) -> tuple[bool, list[_Reading]]:
    """Readings of every result line; whether any line had a netperf shape."""
    seen = False
    readings: list[_Reading] = []
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
    row: _Row, following: _Row | None, kind: _Kind, unit: str
) -> tuple[int, list[_Reading]] | None:
    """How many rows one result takes, and its readings; None when the row is no result."""
    if row.unit is not None:
        # Omni default output ends with THROUGHPUT and THROUGHPUT_UNITS.
        return 1, _throughput(row.cells[-1], row.unit)
    shape = kind if kind is not _Kind.UNKNOWN else _infer_kind(row, following)
    width = len(row.cells)
    cells = row.cells
    # The sizes the test was run with; socket sizes are left out, as the kernel picks them.
    if shape is _Kind.RR and width >= 6:
        # The 2-column line after it holds the remote socket sizes: nothing to compare.
        skip = 2 if following is not None and len(following.cells) == 2 else 1
        sizes = {"request_size": _cell(cells, 2), "response_size": _cell(cells, 3)}
        return skip, _stated(_rr_readings(cells), **sizes, length_s=_elapsed(cells, 4))
    if shape is _Kind.UDP_STREAM and following is not None and 4 <= len(following.cells) < width:
        readings = _udp_readings(cells, following.cells, unit)
        return 2, _stated(readings, message_size=_cell(cells, 1), length_s=_elapsed(cells, 2))
    if shape is _Kind.STREAM and width >= 5:
        readings = _stream_readings(cells, unit)
        return 1, _stated(readings, message_size=_cell(cells, 2), length_s=_elapsed(cells, 3))
    return None


def _stated(readings: list[_Reading], **values: object) -> list[_Reading]:
    fingerprint = settings_of(**values)
    return [replace(reading, settings=fingerprint) for reading in readings]


def _elapsed(cells: tuple[float | None, ...], index: int) -> int | None:
    return _test_length(_cell(cells, index))


def _test_length(elapsed: float | None) -> int | None:
    """The -l test length a timed run was asked for, from its elapsed time (3.00 → 3).

    netperf prints no test length; a timed test's elapsed time is that length to within a
    few hundredths of a second. Anything further off (a -l -N transaction count) is no
    length, so it is left out of the fingerprint rather than guessed.
    """
    if elapsed is None or elapsed < 1:
        return None
    length = round(elapsed)
    return length if abs(elapsed - length) <= 0.02 * length else None


def _stream_readings(cells: tuple[float | None, ...], unit: str) -> list[_Reading]:
    # recv socket, send socket, message size, elapsed, throughput, then with -c -C:
    # local CPU %, remote CPU %, local and remote service demand in us/KB.
    return (
        _throughput(_cell(cells, 4), unit)
        + _cpu(_cell(cells, 5), _cell(cells, 6))
        + _demand("local", _cell(cells, 7), "kb")
        + _demand("remote", _cell(cells, 8), "kb")
    )


def _rr_readings(cells: tuple[float | None, ...]) -> list[_Reading]:
    # send socket, recv socket, request size, response size, elapsed, transactions/s,
    # then with -c -C: local CPU %, remote CPU %, local and remote service demand in us/Tr.
    return (
        _reading("transaction_rate", _cell(cells, 5), TRANS, Better.HIGHER)
        + _cpu(_cell(cells, 6), _cell(cells, 7))
        + _demand("local", _cell(cells, 8), "trans")
        + _demand("remote", _cell(cells, 9), "trans")
    )


def _udp_readings(
    sender: tuple[float | None, ...], receiver: tuple[float | None, ...], unit: str
) -> list[_Reading]:
    # sender: socket, message size, elapsed, messages sent, errors, throughput [CPU, demand];
    # receiver: socket, elapsed, messages received, throughput [CPU, demand]. What arrived
    # is what counts, so the receiver's throughput is the result.
    sent, received = _cell(sender, 3), _cell(receiver, 2)
    lost = sent - received if sent is not None and received is not None else None
    return (
        _throughput(_cell(receiver, 3), unit)
        + _reading("lost_messages", lost, "messages", Better.LOWER, Scale.COUNT)
        + _cpu(_cell(sender, 6), _cell(receiver, 4))
        + _demand("local", _cell(sender, 7), "kb")
        + _demand("remote", _cell(receiver, 5), "kb")
    )


def _throughput(value: float | None, unit: str) -> list[_Reading]:
    if unit == TRANS:
        return _reading("transaction_rate", value, TRANS, Better.HIGHER)
    return _reading("throughput", value, unit, Better.HIGHER)


def _cpu(local: float | None, remote: float | None) -> list[_Reading]:
    return _reading("local_cpu_percent", local, "%", Better.LOWER) + _reading(
        "remote_cpu_percent", remote, "%", Better.LOWER
    )


def _demand(side: str, value: float | None, per: str) -> list[_Reading]:
    unit = "µs/KB" if per == "kb" else "µs/trans"
    return _reading(f"{side}_service_demand_us_per_{per}", value, unit, Better.LOWER)


def _reading(
    suffix: str, value: float | None, unit: str, better: Better, scale: Scale = Scale.RATIO
) -> list[_Reading]:
    # netperf prints -1 for a CPU figure it did not measure; no counted quantity here can
    # be negative, so a negative number means "not measured", never a value to compare.
    if value is None or value < 0:
        return []
    return [_Reading(suffix, value, unit, better, scale)]


def _cell(cells: tuple[float | None, ...], index: int) -> float | None:
    return cells[index] if index < len(cells) else None


def _number(text: str) -> float | None:
    # netperf never groups digits, so a comma is a separator or junk, not thousands.
    return None if "," in text else number_from_text(text)


def _measurement(reading: _Reading, ctx: ParseContext) -> Measurement:
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
        "," in line and all(_CELL.fullmatch(c.strip()) for c in line.split(",")) for line in lines
    ):
        return (
            "-o values without their header line (from -P 0) cannot be named; drop -P 0 or use -k"
        )
    return "no netperf banner, result line or error message found"


def _failure_reason(text: str) -> str:
    connect = _CONNECT_ERROR.search(text)
    if connect:
        return _one_line(f"netperf could not connect: {connect.group(0)}", MAX_REASON)
    error = _NETPERF_ERROR.search(text)
    if error:
        return _one_line(f"netperf failed: {error.group(0)}", MAX_REASON)
    return "netperf printed no result line with a usable number"


def _one_line(text: str, limit: int) -> str:
    printable = "".join(char if char.isprintable() else " " for char in text)
    line = " ".join(printable.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


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
        used = _read_result(numeric[index], following, _Kind.UNKNOWN, _DEFAULT_UNIT)
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
