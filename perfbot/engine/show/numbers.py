"""Numbers as perfbot writes them, in the comment and on a terminal alike."""

from __future__ import annotations

import math

MINUS = "\u2212"
# Powers of ten between which numbers are written out in full (else in scientific notation).
PLAIN_MAGNITUDES = (-6, 15)


def format_number(value: float) -> str:
    """Five significant digits, thousands separated, no trailing zeros: ``13.037``, ``20,127``."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else "—"
    magnitude = math.floor(math.log10(abs(value)))
    if not PLAIN_MAGNITUDES[0] <= magnitude < PLAIN_MAGNITUDES[1]:
        # Beyond a trillion or below a millionth, digits would flood a cell (1e308 has 309)
        # or round to 0: five significant digits in scientific notation instead.
        mantissa, exponent = f"{value:.4e}".split("e")
        if "." in mantissa:
            mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{int(exponent):+d}".replace("-", MINUS)
    decimals = min(max(4 - magnitude, 0), 9)
    shown = f"{value:,.{decimals}f}"
    if "." in shown:
        shown = shown.rstrip("0").rstrip(".")
    return shown.replace("-", MINUS)


def two_digits(value: float) -> str:
    """A positive figure to two significant digits: ``3.8``, ``0.41``, ``12``, ``1,200``."""
    return format_number(float(f"{value:.2g}"))
