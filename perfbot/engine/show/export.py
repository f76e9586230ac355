"""perfbot's own JSON documents: the comparison (``--json``) and a baseline (``--save``).

Both are perfbot JSON version 2 (``perfbot.engine.read.formats.perfbot_json``), so either can
be given back to ``perfbot compare`` as BASE or HEAD.
"""

from __future__ import annotations

from typing import Any

from perfbot.engine.judge.compare import Comparison, MetricResult, Stats
from perfbot.engine.read.formats.perfbot_json import (
    BASELINE,
    COMPARISON,
    MAX_LABEL,
    MAX_REASON,
    MAX_UNIT,
)
from perfbot.engine.read.sides import SideReport
from perfbot.engine.show.escape import clean

VERSION = 2


def comparison_document(comparison: Comparison) -> dict[str, Any]:
    """The documented JSON shape (docs/formats.md, "The comparison document"): medians."""
    return {
        "perfbot": VERSION,
        "kind": COMPARISON,
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
        # Cases whose files disagreed in their settings: the files left out, with theirs.
        "runs_left_out": [
            {
                "side": left.side,
                "platform": left.runs.platform,
                "case": left.runs.case,
                "kept": list(left.runs.kept),
                "settings": dict(left.runs.settings),
                "left_out": [
                    {"file": path, "settings": dict(settings)}
                    for path, settings in left.runs.left_out
                ],
            }
            for left in comparison.left_out
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
        # Kept for the record by the configuration: its move is not in "summary".
        "report_only": metric.report_only,
    }


def _side(stats: Stats | None) -> dict[str, Any]:
    if stats is None:
        return {"value": None, "samples": []}
    return {"value": stats.value, "samples": list(stats.samples)}


def baseline_document(side: SideReport, saved_from: str) -> dict[str, Any]:
    """One side's measurements with every sample, as a perfbot JSON baseline file.

    ``saved_from`` says which run it was (``head``, or ``run`` for a single run); each
    metric keeps its unit, direction, scale and settings fingerprint, so a comparison
    against the file judges it exactly as it would the run itself.
    """
    metrics = []
    for (platform, name), series in sorted(side.series.items()):
        entry: dict[str, Any] = {
            "platform": _label(platform),
            "name": _label(name),
            "values": list(series.samples),
            "unit": clean(series.unit, MAX_UNIT),
            "better": series.better.value,
        }
        entry["scale"] = series.scale.value
        entry["settings"] = {
            _label(str(key)): clean(str(value), MAX_LABEL) for key, value in series.settings
        }
        # The measuring tool's prior (zperf under icount is deterministic): without it a
        # comparison with the baseline would judge a deterministic metric as noisy.
        entry["deterministic"] = series.deterministic
        metrics.append(entry)
    failures = [
        {
            "platform": _label(failure.platform),
            "case": _label(failure.case),
            "reason": clean(failure.reason, MAX_REASON) or "no reason given",
            "whole_platform": failure.whole_platform,
        }
        for failure in side.failures
    ]
    return {
        "perfbot": VERSION,
        "kind": BASELINE,
        "saved_from": saved_from,
        "metrics": metrics,
        "failures": failures,
    }


def _label(value: str) -> str:
    # The reader refuses control characters and names over MAX_LABEL: a file name that a
    # hostile checkout made long or multi-line must not make the whole baseline unreadable.
    return clean(value, MAX_LABEL) or "(empty)"
