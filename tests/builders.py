"""Small builders for sides and comparisons, so tests state only what matters to them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from perfbot.engine.read.sides import SideReport
from perfbot.model import Better, FailedCase, Measurement, Scale

Values = float | list[float]


def side(
    metrics: Mapping[str, Values] | None = None,
    *,
    platform: str = "qemu_x86/atom",
    unit: str = "Mbps",
    better: Better = Better.HIGHER,
    failures: Iterable[FailedCase] = (),
    into: SideReport | None = None,
    deterministic: bool = True,
    scale: Scale = Scale.RATIO,
) -> SideReport:
    """A side with ``metrics`` (name → one value or several samples) on one platform.

    Deterministic by default, like the zperf-under-icount numbers most tests use: the
    plain floor and tolerance decide. ``deterministic=False`` is a stochastic tool.
    """
    report = into or SideReport()
    for name, values in (metrics or {}).items():
        for value in values if isinstance(values, list) else [values]:
            report.add(
                Measurement(platform, name, value, unit, better, scale=scale),
                deterministic=deterministic,
            )
    report.failures.extend(failures)
    report.files_read += 1
    return report
