"""dperf: steady-state medians of the per-second statistics blocks."""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass

from perfbot.engine.read.formats._base import Format
from perfbot.engine.read.formats._common import number_from_text
from perfbot.errors import ParseError
from perfbot.model import Better, Measurement, ParseContext, Parsed, Scale, Settings, settings_of

NAME = "dperf"

# dperf colours non-zero error counters; the codes sit between a name and its value.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SECONDS_LINE = re.compile(r"^[ \t]*seconds[ \t]+\d", re.MULTILINE)
_DPERF_TOKEN = re.compile(r"(?<!\S)(?:pktRx|skOpen|cpuUsage)(?!\S)")
# After this banner dperf prints cumulative totals, which are not per-second rates.
_END_OF_RUN = re.compile(r"dperf Test Finished|Total Numbers:")
_NUMERIC_TOKEN = re.compile(r"[+-]?[\d,.]*\d[\d,.]*(?:[eE][+-]?\d+)?")

# The first seconds are ARP resolution and slow start; the last may be cut short.
WARMUP_BLOCKS = 2
KEEP_LAST_UP_TO = 3

# A counter's values in one second, in the order printed (cpuUsage has one per core).
Block = dict[str, list[str]]


@dataclass(frozen=True, slots=True)
class _Metric:
    suffix: str
    unit: str
    better: Better
    factor: float = 1.0
    scale: Scale = Scale.RATIO


_ERROR_COUNTERS = (
    "dropTx",
    "badRx",
    "rstRx",
    "rstTx",
    "synRt",
    "finRt",
    "ackRt",
    "pushRt",
    "udpRt",
    "tcpDrop",
    "udpDrop",
    "ackDup",
    "skErr",
    "httpErr",
    "ierrors",
    "oerrors",
    "imissed",
)

# Counters not listed (arpRx, synRx, skCon, skClose, …) say nothing about performance.
_METRICS: dict[str, _Metric] = {
    "skOpen": _Metric("cps", "conn/s", Better.HIGHER),
    "pktRx": _Metric("pkt_rx_pps", "pps", Better.HIGHER),
    "pktTx": _Metric("pkt_tx_pps", "pps", Better.HIGHER),
    "bitsRx": _Metric("rx_mbps", "Mbps", Better.HIGHER, factor=1e-6),
    "bitsTx": _Metric("tx_mbps", "Mbps", Better.HIGHER, factor=1e-6),
    "http2XX": _Metric("http_2xx_per_s", "/s", Better.HIGHER),
    "tcpRsp": _Metric("tcp_rsp_per_s", "/s", Better.HIGHER),
    "rtt(us)": _Metric("rtt_us", "µs", Better.LOWER),
    "cpuUsage": _Metric("cpu_usage", "%", Better.LOWER),
    # Errors, drops and retransmits: judged in counts (0 → 3 a second has no ratio).
    **{name: _Metric(name, "/s", Better.LOWER, scale=Scale.COUNT) for name in _ERROR_COUNTERS},
}


def sniff(head: str, path: str) -> float:
    plain = _ANSI.sub("", head)
    if _SECONDS_LINE.search(plain) and _DPERF_TOKEN.search(plain):
        return 1.0
    return 0.0


def parse(text: str, ctx: ParseContext) -> Parsed:
    blocks = _blocks(_ANSI.sub("", text))
    if not blocks:
        raise ParseError(ctx.path, NAME, "no `seconds N` line starts a per-second block")
    steady = _steady_state(blocks)
    settings = _settings(steady)
    measurements = tuple(
        measurement
        for name, metric in _METRICS.items()
        if (measurement := _measure(name, metric, steady, ctx, settings)) is not None
    )
    if not measurements:
        raise ParseError(ctx.path, NAME, "the per-second blocks hold no counter perfbot reads")
    return Parsed(measurements=measurements)


def _blocks(text: str) -> list[Block]:
    """Per-second blocks up to the end-of-run banner; lines before the first are dropped."""
    blocks: list[Block] = []
    for line in text.splitlines():
        if _END_OF_RUN.search(line):
            break
        pairs = _pairs(line)
        if pairs and pairs[0][0] == "seconds" and pairs[0][1]:
            blocks.append({})
            pairs = pairs[1:]
        # A log that starts mid-block (an excerpt) has no second to attribute it to.
        if blocks:
            for name, values in pairs:
                blocks[-1].setdefault(name, values)
    return blocks


def _pairs(line: str) -> list[tuple[str, list[str]]]:
    # Tokens rather than columns: the layout has changed between dperf versions.
    pairs: list[tuple[str, list[str]]] = []
    for token in line.split():
        if not _NUMERIC_TOKEN.fullmatch(token):
            pairs.append((token, []))
        elif pairs:
            pairs[-1][1].append(token)
    return pairs


def _steady_state(blocks: list[Block]) -> list[Block]:
    end = -1 if len(blocks) > KEEP_LAST_UP_TO else len(blocks)
    return blocks[WARMUP_BLOCKS:end] or blocks


def _settings(blocks: list[Block]) -> Settings:
    """What the output states of the run's configuration: its number of worker cores
    (one cpuUsage value each). Nothing else of dperf's configuration is printed."""
    workers = {len(block["cpuUsage"]) for block in blocks if block.get("cpuUsage")}
    return settings_of(workers=workers.pop() if len(workers) == 1 else None)


def _measure(
    name: str, metric: _Metric, blocks: list[Block], ctx: ParseContext, settings: Settings
) -> Measurement | None:
    samples = [_sample(name, block[name], ctx.path) for block in blocks if block.get(name)]
    if not samples:
        return None
    value = statistics.median(samples) * metric.factor
    if not math.isfinite(value):
        raise ParseError(ctx.path, NAME, f"the {name} values are too large to be real")
    return Measurement(
        ctx.platform,
        f"{ctx.case}.{metric.suffix}",
        value,
        metric.unit,
        metric.better,
        metric.scale,
        settings,
    )


def _sample(name: str, values: list[str], path: str) -> float:
    """One second's value of a counter; ``cpuUsage`` is the mean over the worker cores."""
    numbers: list[float] = []
    for text in values if name == "cpuUsage" else values[:1]:
        number = number_from_text(text)
        if number is None:
            raise ParseError(path, NAME, f"the {name} value {text[:40]!r} is not a finite number")
        numbers.append(number)
    # Divide before adding so that large but finite values cannot overflow the sum.
    return sum(number / len(numbers) for number in numbers)


FORMAT = Format(
    name=NAME,
    reads="dperf per-second statistics (steady-state rates)",
    sniff=sniff,
    parse=parse,
)
