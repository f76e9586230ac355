"""What a report format is: a name, a content sniffer and a parser."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from perfbot.model import ParseContext, Parsed

# Sniffers look at the start of a file only, so that detection stays cheap even for
# a 20 MB twister.json that every JSON-based sniffer gets to see.
SNIFF_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Format:
    """A report format.

    ``sniff(head, path)`` gets the first ``SNIFF_BYTES`` characters of the file and
    returns a confidence from 0.0 (not mine) to 1.0 (certainly mine); the path may only
    break ties, never decide alone. ``parse(text, context)`` reads the whole file and
    raises ``perfbot.errors.ParseError`` when the file is broken as a whole; a case
    that ran and failed is a ``FailedCase`` in the result instead.

    Parsers set ``Measurement.settings`` to what the run was asked to do (see
    ``perfbot.model.Settings``) and ``Measurement.scale`` for loss and error counters.
    """

    name: str
    reads: str
    sniff: Callable[[str, str], float]
    parse: Callable[[str, ParseContext], Parsed]
    # The prior when nothing is known of a metric's noise: a deterministic tool (zperf or
    # twister under QEMU icount) repeats its numbers exactly; the others scatter.
    deterministic: bool = False
