"""The registry of report formats and detection by content."""

from __future__ import annotations

import math

from perfbot.engine.read.formats import (
    action_benchmark,
    dperf,
    iperf3,
    iperf3_text,
    netperf,
    perfbot_json,
    pktgen,
    twister,
    zperf,
)
from perfbot.engine.read.formats._base import SNIFF_BYTES, Format

# Explicit, one line per format; on equal confidence the earlier one wins.
REGISTRY: tuple[Format, ...] = (
    zperf.FORMAT,
    twister.FORMAT,
    iperf3.FORMAT,
    iperf3_text.FORMAT,
    netperf.FORMAT,
    pktgen.FORMAT,
    dperf.FORMAT,
    perfbot_json.FORMAT,
    action_benchmark.FORMAT,
)


def safe_sniff(fmt: Format, head: str, path: str) -> float:
    """A sniffer's confidence, clamped to [0, 1]; a sniffer that raises scores 0."""
    try:
        score = float(fmt.sniff(head, path))
    except Exception:
        # A buggy sniffer must never stop detection of the other formats.
        return 0.0
    return min(max(score, 0.0), 1.0) if math.isfinite(score) else 0.0


def detect(text: str, path: str, registry: tuple[Format, ...] = REGISTRY) -> Format | None:
    """The format whose sniffer is most confident about ``text``, or None."""
    head = text[:SNIFF_BYTES]
    best: Format | None = None
    best_score = 0.0
    for fmt in registry:
        score = safe_sniff(fmt, head, path)
        if score >= 1.0:
            return fmt
        if score > best_score:
            best, best_score = fmt, score
    return best


def get(name: str) -> Format:
    """The format called ``name``; raises KeyError naming the known ones."""
    for fmt in REGISTRY:
        if fmt.name == name:
            return fmt
    known = ", ".join(fmt.name for fmt in REGISTRY)
    raise KeyError(f"no report format is called {name!r} (known: {known})")


__all__ = ["REGISTRY", "SNIFF_BYTES", "Format", "detect", "get", "safe_sniff"]
