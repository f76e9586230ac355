"""Real noise for bench/changes.py: the relative deviations of measured runs, per tool.

A pool is a list of deviations in the metric's judging units around its own median
(``log(value / median)`` for ratio metrics, ``value − median`` for points and counts), to
be drawn with replacement: every tail, every quantisation and every skew of the real tool
comes along, which a Gaussian would not have.

* **iperf3 on loopback**, measured here: ``--rounds`` rounds of a 1-second TCP test and a
  1-second UDP test at 2 Gbit/s against an ``iperf3 -s`` on 127.0.0.1 (bench/loopback.py),
  about a minute and a half for the default 40 rounds; saved in the cache directory and
  reused by later runs (``--remeasure`` measures again). Four pools: TCP receiver
  throughput (ratio), UDP receiver throughput (ratio), UDP loss (points), TCP
  retransmits (counts).
* **iperf3 between clouds** (shared/fixtures/iperf3-third-party): the per-interval rates
  of the two real runs, warm-up and omitted intervals left out: quantised, heavy-tailed.
* **netperf** (shared/fixtures/generated/netperf): the throughput of the TCP_STREAM runs
  and the transaction rate of the TCP_RR runs, each against its own test's median; five
  runs, so this pool is coarse (few distinct values) by nature.

The pktgen and dperf fixtures hold one result each (one run, one second), so they have no
repeat to take a deviation from: they add no pool, and the bench says so.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import loopback

from perfbot.model import Better, Scale

SHARED = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
CACHE_FORMAT = "perfbot-changes-loopback/1"
UDP_RATE = "2G"
# iperf3 reports carry one run each; the first intervals of a cloud run are its ramp-up.
_RAMP_INTERVALS = 2


@dataclass(frozen=True, slots=True)
class Pool:
    """Deviations of one tool's metric, and how that metric is judged."""

    name: str
    source: str
    scale: Scale
    better: Better
    deviations: tuple[float, ...]
    level: float  # the metric's median, the series' starting level

    @property
    def usable(self) -> bool:
        return len(self.deviations) >= 3 and len(set(self.deviations)) >= 2


def _relative(values: Sequence[float]) -> list[float]:
    centre = _median(values)
    return [math.log(value / centre) for value in values if value > 0]


def _absolute(values: Sequence[float]) -> list[float]:
    centre = _median(values)
    return [value - centre for value in values]


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


# --- iperf3 on loopback, measured ---------------------------------------------------------


def loopback_pools(cache: Path, rounds: int, remeasure: bool, out: TextIO) -> list[Pool]:
    """The four loopback pools, from the cache or measured now (then cached)."""
    path = cache / "loopback.json"
    document: dict[str, Any] | None = None
    if path.exists() and not remeasure:
        loaded = json.loads(path.read_text())
        if loaded.get("format") == CACHE_FORMAT and len(loaded.get("rounds", [])) >= 3:
            document = loaded
            print(f"iperf3 on loopback: {len(loaded['rounds'])} rounds from {path}", file=out)
    if document is None:
        document = _measure(rounds, out)
        cache.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=1) + "\n")
        print(f"iperf3 on loopback: measured, saved to {path}", file=out)
    return _pools_of(document)


def _measure(rounds: int, out: TextIO) -> dict[str, Any]:
    measured: list[dict[str, float]] = []
    print(f"measuring iperf3 on 127.0.0.1: {rounds} rounds of TCP and UDP, 1 s each", file=out)
    with loopback.server() as port:
        for _ in range(rounds):
            tcp = loopback.client(port, (), seconds=1)
            udp = loopback.client(port, ("-u", "-b", UDP_RATE, "-l", "1400"), seconds=1)
            row = _round(tcp.output, udp.output)
            if row is not None:
                measured.append(row)
    return {
        "format": CACHE_FORMAT,
        "iperf3": loopback.version(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "rounds": measured,
    }


def _round(tcp: bytes, udp: bytes) -> dict[str, float] | None:
    try:
        tcp_end = json.loads(tcp)["end"]
        udp_end = json.loads(udp)["end"]["sum"]
        return {
            "tcp_mbps": float(tcp_end["sum_received"]["bits_per_second"]) / 1e6,
            "tcp_retransmits": float(tcp_end["sum_sent"].get("retransmits", 0)),
            "udp_mbps": float(udp_end["bits_per_second"])
            / 1e6
            * (1 - float(udp_end["lost_percent"]) / 100),
            "udp_loss_pct": float(udp_end["lost_percent"]),
        }
    except (ValueError, KeyError, TypeError):
        return None  # a failed run is no sample of the noise


def _pools_of(document: dict[str, Any]) -> list[Pool]:
    rounds = document["rounds"]
    source = f"iperf3 on 127.0.0.1, {len(rounds)} runs ({document.get('iperf3', '?')})"

    def column(name: str) -> list[float]:
        return [float(row[name]) for row in rounds]

    specs: list[tuple[str, str, Scale, Better, Callable[[Sequence[float]], list[float]]]] = [
        ("loopback tcp", "tcp_mbps", Scale.RATIO, Better.HIGHER, _relative),
        ("loopback udp", "udp_mbps", Scale.RATIO, Better.HIGHER, _relative),
        ("loopback udp loss", "udp_loss_pct", Scale.POINTS, Better.LOWER, _absolute),
        ("loopback retransmits", "tcp_retransmits", Scale.COUNT, Better.LOWER, _absolute),
    ]
    return [
        Pool(name, source, scale, better, tuple(deviate(column(key))), _median(column(key)))
        for name, key, scale, better, deviate in specs
    ]


# --- the shared fixtures ------------------------------------------------------------------


def fixture_pools() -> list[Pool]:
    return [_cloud_pool(), _netperf_pool()]


def _cloud_pool() -> Pool:
    deviations: list[float] = []
    levels: list[float] = []
    for path in sorted((SHARED / "iperf3-third-party").glob("*.json")):
        rates = [
            float(interval["sum"]["bits_per_second"]) / 1e6
            for interval in json.loads(path.read_text()).get("intervals", [])
            if not interval["sum"].get("omitted", False)
        ][_RAMP_INTERVALS:]
        if len(rates) >= 3:
            deviations += _relative(rates)
            levels.append(_median(rates))
    source = f"iperf3 between clouds, {len(deviations)} intervals (shared/fixtures)"
    level = _median(levels) if levels else 100.0
    return Pool("cloud iperf3", source, Scale.RATIO, Better.HIGHER, tuple(deviations), level)


_NETPERF_LAST_NUMBER = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*$")


def _netperf_pool() -> Pool:
    root = SHARED / "generated" / "netperf"
    groups = {
        "stream": ["tcp_stream_default.txt", "tcp_stream_P0.txt"],
        "rr": ["tcp_rr_default.txt", "tcp_rr_P0.txt", "tcp_rr_o_csv.txt"],
    }
    deviations: list[float] = []
    for names in groups.values():
        values = [v for v in (_netperf_result(root / name) for name in names) if v is not None]
        if len(values) >= 2:
            deviations += _relative(values)
    source = f"netperf on 127.0.0.1, {len(deviations)} runs (shared/fixtures)"
    return Pool("netperf", source, Scale.RATIO, Better.HIGHER, tuple(deviations), 20_000.0)


def _netperf_result(path: Path) -> float | None:
    """The run's headline number: the last number of its result line (throughput or
    transactions per second; the CSV output's last column is the transaction rate)."""
    if not path.exists():
        return None
    for line in reversed(path.read_text().splitlines()):
        numbers = line.replace(",", " ").split()
        if len(numbers) >= 4 and all(_is_number(cell) for cell in numbers[-3:]):
            match = _NETPERF_LAST_NUMBER.search(line)
            return float(match.group(1)) if match else None
    return None


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def missing_formats() -> str:
    return (
        "pktgen and dperf: their fixtures hold one result each (no repeat), so they give no "
        "noise pool"
    )
