"""The comparison as the stable JSON document of ``perfbot compare --json``."""

from __future__ import annotations

from typing import Any

from perfbot.engine.compare import Comparison, MetricResult, Stats


def comparison_document(comparison: Comparison) -> dict[str, Any]:
    """The documented JSON shape (see README, "The JSON document"); values are medians."""
    return {
        "platforms": [
            {
                "name": platform.name,
                "available": platform.unavailable is None,
                "unavailable_reason": platform.unavailable,
                "metrics": [_metric(metric) for metric in platform.metrics],
            }
            for platform in comparison.platforms
        ],
        "failures": [
            {
                "side": failure.side,
                "platform": failure.platform,
                "case": failure.case,
                "reason": failure.reason,
            }
            for failure in comparison.failures
        ],
        "summary": {verdict.value: count for verdict, count in comparison.summary().items()},
        "regressed_beyond_tolerance": comparison.regressed_beyond_tolerance,
        "policy": {
            "threshold_pct": comparison.policy.threshold,
            "tolerance_pct": comparison.policy.tolerance,
        },
    }


def _metric(metric: MetricResult) -> dict[str, Any]:
    return {
        "name": metric.name,
        "unit": metric.unit,
        "better": metric.better.value,
        "base": _side(metric.base),
        "head": _side(metric.head),
        "change_pct": None if metric.change_pct is None else round(metric.change_pct, 4),
        "verdict": metric.verdict.value,
        "beyond_tolerance": metric.beyond_tolerance,
        "note": metric.note or None,
    }


def _side(stats: Stats | None) -> dict[str, Any]:
    if stats is None:
        return {"value": None, "samples": []}
    return {"value": stats.value, "samples": list(stats.samples)}
