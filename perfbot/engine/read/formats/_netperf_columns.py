"""netperf's named columns: ``-k`` key=value lines, ``-o`` CSV and ``-O`` columns, read into
the readings of one test, and the vocabulary both of netperf's layouts share (the test's
kind, a reading, the units). ``netperf`` reads the positional lines and runs the format.
"""

from __future__ import annotations

import enum
import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from perfbot.engine.read.formats._common import number_from_text
from perfbot.model import Better, Scale, Settings, settings_of

TRANS = "trans/s"


KEY_VALUE = re.compile(r"^[ \t]*(?P<key>[A-Z][A-Z0-9_]*)=(?P<value>[^\r\n]*)$", re.MULTILINE)


# format_units() in netlib.c + "/sec" (classic headers) or "/s" (omni, -c -C headers).
UNIT = re.compile(r"(?P<unit>10\^[0369]bits|[KMG]?Bytes|Trans?)/s(?:ec)?")


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
DEFAULT_UNIT = "Mbps"


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


KNOWN_KEYS = frozenset(_FIELDS) | frozenset(_THROUGHPUT_KEYS)


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


class Kind(enum.Enum):
    """How a test lays out its result lines."""

    STREAM = "stream"  # TCP_STREAM, TCP_MAERTS, TCP_SENDFILE: one line
    RR = "rr"  # TCP_RR, UDP_RR, TCP_CRR: one line, then the remote socket sizes
    UDP_STREAM = "udp_stream"  # a sender line, then a receiver line
    UNKNOWN = "unknown"  # -P 0: no banner, the layout is inferred from the columns


@dataclass(frozen=True, slots=True)
class Reading:
    suffix: str
    value: float
    unit: str
    better: Better
    scale: Scale = Scale.RATIO
    settings: Settings = ()


def human_records(lines: tuple[str, ...]) -> list[dict[str, str]]:
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
    return record if KNOWN_KEYS & record.keys() else None


def key_records(lines: Iterable[str]) -> list[dict[str, str]]:
    """-k output as one dict per test; a repeated key starts the next test's record."""
    records: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in lines:
        match = KEY_VALUE.match(line)
        if match is None:
            continue
        key, value = match.group("key"), match.group("value")
        if key in current:
            records.append(current)
            current = {}
        current[key] = value
    records.append(current)
    return [record for record in records if KNOWN_KEYS & record.keys()]


def csv_records(lines: tuple[str, ...]) -> list[dict[str, str]]:
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
        if record and any(CELL.fullmatch(cell.strip()) for cell in cells):
            records.append(record)
    return records


def _csv_key(name: str) -> str | None:
    lowered = " ".join(name.strip().strip('"').lower().split())
    if lowered in _OMNI_NAMES:
        return _OMNI_NAMES[lowered]
    if lowered.upper().replace(" ", "_") in KNOWN_KEYS:
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


def field_readings(fields: Mapping[str, str], kind: Kind) -> list[Reading]:
    readings = _named_readings(fields, kind)
    stated: dict[str, object] = {
        name: one_line(fields[key], 40) for key, name in _SETTING_KEYS.items() if key in fields
    }
    if "ELAPSED_TIME" in fields:
        stated["length_s"] = test_length(number(fields["ELAPSED_TIME"]))
    return with_settings(readings, **stated)


def _named_readings(fields: Mapping[str, str], kind: Kind) -> list[Reading]:
    readings: list[Reading] = []
    for key, (suffix, unit, better) in _FIELDS.items():
        if key in fields:
            readings += reading(suffix, number(fields[key]), unit, better)
    if "THROUGHPUT" in fields:
        unit = throughput_unit(fields.get("THROUGHPUT_UNITS"), kind)
        value = number(fields["THROUGHPUT"])
        # For RR tests THROUGHPUT is the transaction rate again, in Trans/s.
        if unit != TRANS:
            readings += reading("throughput", value, unit, Better.HIGHER)
        elif "TRANSACTION_RATE" not in fields:
            readings += reading("transaction_rate", value, TRANS, Better.HIGHER)
    return readings


def throughput_unit(units: str | None, kind: Kind) -> str:
    if units is None or not units.strip():
        # Omni reports RR throughput in Trans/s and everything else in 10^6bits/s.
        return TRANS if kind is Kind.RR else DEFAULT_UNIT
    label = unit_label(units.strip())
    return label if label is not None else one_line(units, 20)


def unit_label(token: str) -> str | None:
    match = UNIT.fullmatch(token)
    return _UNIT_LABELS[match.group("unit")] if match else None


# A cell of a result line: a decimal, or a non-finite value netperf's printf may write.
CELL = re.compile(
    r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf(?:inity)?)", re.IGNORECASE
)


def with_settings(readings: list[Reading], **values: object) -> list[Reading]:
    fingerprint = settings_of(**values)
    return [replace(reading, settings=fingerprint) for reading in readings]


def test_length(elapsed: float | None) -> int | None:
    """The -l test length a timed run was asked for, from its elapsed time (3.00 → 3).

    netperf prints no test length; a timed test's elapsed time is that length to within a
    few hundredths of a second. Anything further off (a -l -N transaction count) is no
    length, so it is left out of the fingerprint rather than guessed.
    """
    if elapsed is None or elapsed < 1:
        return None
    length = round(elapsed)
    return length if abs(elapsed - length) <= 0.02 * length else None


def reading(
    suffix: str, value: float | None, unit: str, better: Better, scale: Scale = Scale.RATIO
) -> list[Reading]:
    # netperf prints -1 for a CPU figure it did not measure; no counted quantity here can
    # be negative, so a negative number means "not measured", never a value to compare.
    if value is None or value < 0:
        return []
    return [Reading(suffix, value, unit, better, scale)]


def number(text: str) -> float | None:
    # netperf never groups digits, so a comma is a separator or junk, not thousands.
    return None if "," in text else number_from_text(text)


def one_line(text: str, limit: int) -> str:
    printable = "".join(char if char.isprintable() else " " for char in text)
    line = " ".join(printable.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
