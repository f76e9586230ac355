"""The registry of report formats and detection by content."""

from __future__ import annotations

from perfbot.formats._base import SNIFF_BYTES, Format

# Filled in explicitly, one line per format: the order is the tie-break order.
REGISTRY: tuple[Format, ...] = ()


def safe_sniff(fmt: Format, head: str, path: str) -> float:
    """A sniffer's confidence, clamped to [0, 1]; a sniffer that raises scores 0."""
    try:
        score = float(fmt.sniff(head, path))
    except Exception:
        return 0.0
    return min(max(score, 0.0), 1.0) if score == score else 0.0


def detect(text: str, path: str, registry: tuple[Format, ...] | None = None) -> Format | None:
    """The format whose sniffer is most confident about ``text``, or None."""
    head = text[:SNIFF_BYTES]
    best: Format | None = None
    best_score = 0.0
    for fmt in REGISTRY if registry is None else registry:
        score = safe_sniff(fmt, head, path)
        if score >= 1.0:
            return fmt
        if score > best_score:
            best, best_score = fmt, score
    return best


def get(name: str) -> Format:
    for fmt in REGISTRY:
        if fmt.name == name:
            return fmt
    raise KeyError(f"no report format is called {name!r}")


__all__ = ["REGISTRY", "SNIFF_BYTES", "Format", "detect", "get", "safe_sniff"]
