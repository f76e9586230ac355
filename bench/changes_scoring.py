"""Scoring and the printed table of bench/changes.py (see its docstring for the rules)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from changes_corpus import Case

MATCH = 5  # commits between a planted step and the report that finds it
NEAR = 2
CORPUS_TARGETS = {
    "recall_big": ">= 95 %",
    "recall_2": ">= 60 %",
    "exact": ">= 80 %",
    "near": ">= 95 %",
    "alarms": "<= 1",
    "spikes": "0",
    "det_exact": "all",
    "det_alarms": "0",
}


@dataclass(slots=True)
class Reports:
    """What one tool reported: per case its change indexes and time, the incremental
    delays of the timed steps (None: not within the grid), and the changes ever reported
    on the incrementally run null series."""

    batch: list[list[int]] = field(default_factory=list)
    drift_shaped: list[int] = field(default_factory=list)  # per case; perfbot only
    seconds: list[float] = field(default_factory=list)
    delays: list[int | None] = field(default_factory=list)
    incremental_alarms: int = 0
    incremental_points: int = 0


@dataclass(slots=True)
class Figures:
    steps_big: int = 0
    found_big: int = 0
    steps_2: int = 0
    found_2: int = 0
    found: int = 0
    exact: int = 0
    near: int = 0
    alarms: int = 0
    points: int = 0
    spikes: int = 0
    spikes_reported: int = 0
    det_steps: int = 0
    det_exact: int = 0
    det_alarms: int = 0
    drift_series: int = 0
    drift_reported: int = 0
    drift_reports: int = 0
    drift_shaped: int = 0
    delays: list[int | None] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    incremental_alarms: int = 0
    incremental_points: int = 0

    @property
    def precision(self) -> float:
        true = self.found + self.det_exact_found
        return true / (true + self.alarms + self.det_alarms) if true else 0.0

    det_exact_found: int = 0  # deterministic steps found (within ±5), for F1

    @property
    def recall(self) -> float:
        steps = self.steps_big + self.steps_2 + self.det_steps
        return (self.found + self.det_exact_found) / steps if steps else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def match(steps: Sequence[int], reports: Sequence[int]) -> tuple[dict[int, int], list[int]]:
    """Each step's nearest unused report within ±MATCH (step → report), and the reports
    left unused."""
    unused = sorted(reports)
    found: dict[int, int] = {}
    for step in sorted(steps):
        near = [r for r in unused if abs(r - step) <= MATCH]
        if near:
            best = min(near, key=lambda r: (abs(r - step), r))
            found[step] = best
            unused.remove(best)
    return found, unused


def score(cases: Sequence[Case], reports: Reports) -> Figures:
    figures = Figures(delays=reports.delays, seconds=reports.seconds)
    figures.incremental_alarms = reports.incremental_alarms
    figures.incremental_points = reports.incremental_points
    for index, case in enumerate(cases):
        reported = reports.batch[index]
        if case.drift is not None:
            figures.drift_series += 1
            figures.drift_reported += bool(reported)
            figures.drift_reports += len(reported)
            if reports.drift_shaped:
                figures.drift_shaped += reports.drift_shaped[index]
            continue
        found, unused = match([s.position for s in case.steps], reported)
        spiked = [r for r in unused if any(abs(r - spike) <= NEAR for spike in case.spikes)]
        figures.spikes += len(case.spikes)
        figures.spikes_reported += len(spiked)
        if case.is_deterministic:
            figures.det_steps += len(case.steps)
            figures.det_exact += sum(1 for s, r in found.items() if s == r)
            figures.det_exact_found += len(found)
            figures.det_alarms += len(unused)
            continue
        figures.points += case.length
        figures.alarms += len(unused)
        for step in case.steps:
            big = step.sigmas >= 3
            figures.steps_big += big
            figures.steps_2 += not big
            report = found.get(step.position)
            if report is None:
                continue
            figures.found_big += big
            figures.found_2 += not big
            figures.found += 1
            figures.exact += report == step.position
            figures.near += abs(report - step.position) <= NEAR
    return figures


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} % ({part}/{whole})" if whole else "—"


def _percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


def _rows(f: Figures) -> dict[str, tuple[str, float | None]]:
    per_1000 = 1000 * f.alarms / f.points if f.points else 0.0
    incremental = (
        1000 * f.incremental_alarms / f.incremental_points if f.incremental_points else 0.0
    )
    delays = [d for d in f.delays if d is not None]
    ms = [1000 * s for s in f.seconds]
    return {
        "recall, steps >= 3σ": (_pct(f.found_big, f.steps_big), _share(f.found_big, f.steps_big)),
        "recall, 2σ steps": (_pct(f.found_2, f.steps_2), _share(f.found_2, f.steps_2)),
        "found steps at the exact commit": (_pct(f.exact, f.found), _share(f.exact, f.found)),
        "found steps within ±2 commits": (_pct(f.near, f.found), _share(f.near, f.found)),
        "false alarms per 1,000 commits": (f"{per_1000:.2f} ({f.alarms})", per_1000),
        "  same, run after every commit": (
            f"{incremental:.2f} ({f.incremental_alarms})",
            incremental,
        ),
        "spikes reported as a change": (f"{f.spikes_reported} of {f.spikes}", f.spikes_reported),
        "deterministic steps, exact commit": (
            f"{f.det_exact} of {f.det_steps}",
            f.det_exact,
        ),
        "false alarms, deterministic series": (str(f.det_alarms), f.det_alarms),
        "drift series with a report": (
            f"{f.drift_reported} of {f.drift_series} ({f.drift_reports} reports"
            + (f", {f.drift_shaped} as drift)" if f.drift_shaped else ")"),
            f.drift_reports,
        ),
        "delay, median / 90th pct (commits)": (
            f"{_percentile(delays, 0.5)} / {_percentile(delays, 0.9)}"
            f" ({len(f.delays) - len(delays)} of {len(f.delays)} not within 40)"
            if delays
            else "—",
            _percentile(delays, 0.5) if delays else None,
        ),
        "cost per series, mean (ms)": (
            f"{math.fsum(ms) / len(ms):.1f}" if ms else "—",
            math.fsum(ms) / len(ms) if ms else None,
        ),
        "precision": (f"{f.precision:.3f}", f.precision),
        "recall (all steps)": (f"{f.recall:.3f}", f.recall),
        "F1": (f"{f.f1:.3f}", f.f1),
    }


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def table(figures: Mapping[str, Figures]) -> str:
    names = list(figures)
    rows = {name: _rows(f) for name, f in figures.items()}
    labels = list(rows[names[0]])
    header = ["", *names] + (["perfbot ÷ Otava"] if len(names) == 2 else [])
    lines = [header]
    for label in labels:
        line = [label] + [rows[name][label][0] for name in names]
        if len(names) == 2:
            line.append(_ratio(rows[names[0]][label][1], rows[names[1]][label][1]))
        lines.append(line)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
                     for line in lines)  # fmt: skip
    return "\n" + text + "\n"


def _ratio(first: float | None, second: float | None) -> str:
    if first is None or second is None:
        return "—"
    if second == 0:
        return "—" if first == 0 else "∞"
    return f"{first / second:.2f}"


def per_pool(cases: Sequence[Case], reports: Mapping[str, Reports | None]) -> str:
    lines = ["", "per pool: recall >= 3σ, recall 2σ, false alarms per 1,000 commits"]
    pools = sorted({case.pool for case in cases}, key=[c.pool for c in cases].index)
    for name, answer in reports.items():
        if answer is None:
            continue
        for pool in pools:
            indexes = [i for i, case in enumerate(cases) if case.pool == pool]
            subset = [cases[i] for i in indexes]
            partial = Reports(batch=[answer.batch[i] for i in indexes])
            f = score(subset, partial)
            if f.steps_big + f.steps_2 == 0:
                continue
            per_1000 = 1000 * f.alarms / f.points if f.points else 0.0
            lines.append(
                f"  {name:<12} {pool:<22} {_pct(f.found_big, f.steps_big):<20}"
                f" {_pct(f.found_2, f.steps_2):<20} {per_1000:.2f}"
            )
    return "\n".join(lines) + "\n"


def delay_by_size(
    cases: Sequence[Case], steps: Sequence[tuple[int, int]], reports: Mapping[str, Reports | None]
) -> str:
    """The incremental delay per planted step size: median and 90th percentile."""
    lines = ["", "delay by step size (commits after the step; median / 90th percentile)"]
    sizes = [
        next(step.sigmas for step in cases[index].steps if step.position == position)
        for index, position in steps
    ]
    for name, answer in reports.items():
        if answer is None:
            continue
        cells = []
        for size in sorted(set(sizes)):
            delays = [
                d for d, s in zip(answer.delays, sizes, strict=True) if s == size and d is not None
            ]
            label = f"{size:g}σ" if size else "deterministic"
            shown = f"{_percentile(delays, 0.5)} / {_percentile(delays, 0.9)}" if delays else "—"
            cells.append(f"{label} {shown}")
        lines.append(f"  {name:<12} " + ",  ".join(cells))
    return "\n".join(lines) + "\n"
