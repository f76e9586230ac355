"""Change points on the default branch: perfbot's detector beside Apache Otava 0.8.0.

The series (bench/changes_corpus.py) carry real noise (bench/changes_noise.py: iperf3 on
loopback measured here or reused from the cache, iperf3 between clouds and netperf from
shared/fixtures) and planted steps of 2σ, 3σ, 5σ and 10σ, spikes, drifts, series where
nothing changes and deterministic series. Both tools get the same series: perfbot every
sample of every commit (``perfbot.engine.judge.changes.detect``), Otava one value per
commit (the mean of its samples) with its documented defaults, in its own environment
(bench/changes_otava.py). Printed: a table of both and their ratio, then one line per pool.

Scoring: a planted step is found when a reported change lies within ±5 commits of it (the
nearest, each report used once); a report that finds nothing is a false alarm, and one
within ±2 commits of a spike is a spike reported as a change. Drift series are scored
apart (a drift has no one commit to find). The delay is measured incrementally, as the
App runs: each tool is given the series up to k commits after the step, k on a fixed
grid, and the delay is the first k at which it reports the step within ±2 commits.

  .venv/bin/python bench/changes.py                  # measures loopback once (≈ 2 min)
  .venv/bin/python bench/changes.py --remeasure      # measure loopback again
  .venv/bin/python bench/changes.py --no-otava       # perfbot's figures alone
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import changes_otava
import changes_scoring as scoring
from changes_corpus import Case, deterministic_cases, stochastic_cases
from changes_noise import Pool, fixture_pools, loopback_pools, missing_formats
from changes_scoring import Reports

from perfbot.engine.judge import changes
from perfbot.engine.judge.changes import BranchSeries, MeasuredCommit, Shape

SEED = 20_261_201
PER_POOL = {"steps": 30, "null": 10, "spikes": 10, "drift": 8}
DETERMINISTIC_SERIES = 40
# Commits after a step at which the incremental delay is looked for (a fixed grid keeps
# Otava's share of the run bounded).
DELAY_GRID: tuple[int, ...] = (*range(13), 14, 16, 18, 20, 25, 30, 40)
INCREMENTAL_NULLS_PER_POOL = 2


def branch_series(case: Case, length: int | None = None) -> BranchSeries:
    commits = []
    seen: set[str] = set()
    for sha, samples in zip(case.shas, case.samples, strict=True):
        if sha not in seen and length is not None and len(seen) >= length:
            continue  # a commit beyond the prefix; its re-runs too
        seen.add(sha)
        commits.append(MeasuredCommit(sha, tuple(samples)))
    return BranchSeries(
        platform="bench",
        metric=case.name,
        unit="",
        better=case.better,
        commits=tuple(commits),
        scale=case.scale,
        deterministic=case.deterministic,
    )


def commit_values(case: Case) -> list[float]:
    """One value per commit for Otava: the mean of all its samples, re-runs included."""
    merged: dict[str, list[float]] = {}
    for sha, samples in zip(case.shas, case.samples, strict=True):
        merged.setdefault(sha, []).extend(samples)
    return [math.fsum(values) / len(values) for values in merged.values()]


def run_perfbot(cases: Sequence[Case], delay_steps: list[tuple[int, int]]) -> Reports:
    reports = Reports()
    for case in cases:
        started = time.perf_counter()
        found = changes.detect(branch_series(case))
        reports.seconds.append(time.perf_counter() - started)
        reports.batch.append([change.index for change in found])
        reports.drift_shaped.append(sum(1 for c in found if c.shape is Shape.DRIFT))
    for case_index, position in delay_steps:
        reports.delays.append(_delay(cases[case_index], position))
    for case in _incremental_nulls(cases):
        reports.incremental_alarms += len(_ever_reported(case))
        reports.incremental_points += case.length
    return reports


def _delay(case: Case, position: int) -> int | None:
    for k in DELAY_GRID:
        found = changes.detect(branch_series(case, position + 1 + k))
        if any(abs(change.index - position) <= 2 for change in found):
            return k
    return None


def _ever_reported(case: Case) -> set[int]:
    """Every change reported by some prefix of ``case`` (the App's view of a null series)."""
    ever: set[int] = set()
    for length in range(10, case.length + 1):
        ever.update(change.index for change in changes.detect(branch_series(case, length)))
    return ever


def _incremental_nulls(cases: Sequence[Case]) -> list[Case]:
    chosen: list[Case] = []
    per_pool: dict[str, int] = {}
    for case in cases:
        wanted = per_pool.get(case.pool, 0) < INCREMENTAL_NULLS_PER_POOL
        if case.kind in ("null", "deterministic null") and wanted:
            per_pool[case.pool] = per_pool.get(case.pool, 0) + 1
            chosen.append(case)
    return chosen


def run_otava(python: Path, cases: Sequence[Case], delay_steps: list[tuple[int, int]]) -> Reports:
    values = [commit_values(case) for case in cases]
    prefixes = [(i, position + 1 + k) for i, position in delay_steps for k in DELAY_GRID]
    nulls = _incremental_nulls(cases)
    null_index = {id(case): cases.index(case) for case in nulls}
    for case in nulls:
        prefixes += [(null_index[id(case)], n) for n in range(10, case.length + 1)]
    answer = changes_otava.run(python, values, prefixes)
    reports = Reports(batch=answer.batch, seconds=answer.seconds)
    answers = iter(answer.prefix)
    for _, position in delay_steps:
        delay = None
        for k in DELAY_GRID:
            found = next(answers)
            if delay is None and any(abs(index - position) <= 2 for index in found):
                delay = k
        reports.delays.append(delay)
    for case in nulls:
        ever: set[int] = set()
        for _ in range(10, case.length + 1):
            ever.update(next(answers))
        reports.incremental_alarms += len(ever)
        reports.incremental_points += case.length
    return reports


def delay_steps(cases: Sequence[Case], limit: int) -> list[tuple[int, int]]:
    """(case, step position) of steps with no other step in the 45 commits after them."""
    chosen = []
    for index, case in enumerate(cases):
        for step in case.steps:
            later = [s.position for s in case.steps if s.position > step.position]
            if all(p - step.position > max(DELAY_GRID) + 5 for p in later):
                chosen.append((index, step.position))
    return chosen[:limit]


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path.home() / ".cache" / "perfbot",
        help="where the loopback corpus and Otava's environment live (outside the repository)",
    )
    parser.add_argument("--rounds", type=int, default=40, help="loopback rounds to measure")
    parser.add_argument("--remeasure", action="store_true", help="measure loopback again")
    parser.add_argument("--no-otava", action="store_true", help="perfbot's figures only")
    parser.add_argument("--delay-steps", type=int, default=120, help="steps timed incrementally")
    parser.add_argument("--seed", type=int, default=SEED, help=f"the corpus' seed (default {SEED})")
    args = parser.parse_args(argv)

    pools = loopback_pools(args.cache / "changes-corpus", args.rounds, args.remeasure, out)
    pools += fixture_pools()
    usable = [pool for pool in pools if pool.usable]
    _describe(pools, out)
    rng = random.Random(args.seed)
    cases: list[Case] = []
    for pool in usable:
        cases += stochastic_cases(pool, rng, PER_POOL)
    cases += deterministic_cases(rng, DETERMINISTIC_SERIES)
    steps = delay_steps(cases, args.delay_steps)
    points = sum(case.length for case in cases)
    print(f"{len(cases)} series, {points:,} commits, seed {args.seed}", file=out)

    perfbot = run_perfbot(cases, steps)
    otava: Reports | None = None
    if not args.no_otava:
        try:
            otava = run_otava(changes_otava.python_of(args.cache), cases, steps)
        except changes_otava.OtavaUnavailable as exc:
            print(f"Otava is left out: {exc}.", file=out)
    figures = {"perfbot": scoring.score(cases, perfbot)}
    if otava is not None:
        figures["Otava 0.8.0"] = scoring.score(cases, otava)
    out.write(scoring.table(figures))
    both = {"perfbot": perfbot, "Otava 0.8.0": otava}
    out.write(scoring.delay_by_size(cases, steps, both))
    out.write(scoring.per_pool(cases, both))
    return 0


def _describe(pools: Sequence[Pool], out: TextIO) -> None:
    for pool in pools:
        spread = _sd(pool.deviations)
        unit = {"ratio": "%", "points": " pp", "count": " counts"}[pool.scale.value]
        shown = spread * 100 if pool.scale.value == "ratio" else spread
        state = "" if pool.usable else "  (left out: too few distinct values)"
        print(
            f"  pool {pool.name}: {pool.source}, σ of one sample {shown:.3g}{unit}{state}", file=out
        )
    print(f"  {missing_formats()}", file=out)


def _sd(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


if __name__ == "__main__":
    raise SystemExit(main())
