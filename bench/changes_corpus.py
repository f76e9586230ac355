"""The series of bench/changes.py: real noise (bench/changes_noise.py) with planted changes.

Per noise pool, series of 150 to 250 commits, each commit measured by 1 or 3 samples (the
iperf3 template's RUNS), and one commit in twenty measured once more by a re-run, listed
a few commits later (runs finish out of order):

* ``steps``: one or two steps of 2σ, 3σ, 5σ or 10σ (in turn), up or down, at random
  commits at least 20 from either end and 30 from each other;
* ``null``: nothing changes;
* ``spikes``: three to five single commits 5σ to 20σ off, nothing else;
* ``drift``: a straight ramp of 4σ to 8σ over 40 to 100 commits.

σ is the standard deviation of one commit's value (the median of its samples), measured
on the pool by drawing. Deterministic series (zperf or twister under icount) repeat one
value exactly, with one or two steps of 1 % to 10 % and, in some, a flaky commit (a
one-commit excursion); half say they are deterministic (the format's prior), half leave
it to the data (a ``perfbot history`` file does not say). The seed is fixed.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from changes_noise import Pool

from perfbot.model import Better, Scale

EDGE = 20
STEP_GAP = 30
STEP_SIGMAS = (2.0, 3.0, 5.0, 10.0)
RERUN_SHARE = 0.05
SIGMA_DRAWS = 20_000


@dataclass(frozen=True, slots=True)
class Step:
    position: int  # the first commit at the new level
    sigmas: float  # 0 for a deterministic step (its size is in percent)


@dataclass(slots=True)
class Case:
    """One series and what was planted in it."""

    name: str
    kind: str
    pool: str
    scale: Scale
    better: Better
    shas: list[str]  # one per entry, oldest first; a re-run repeats a sha
    samples: list[list[float]]
    length: int  # commits (re-runs not counted)
    steps: list[Step] = field(default_factory=list)
    spikes: list[int] = field(default_factory=list)
    drift: tuple[int, int] | None = None
    deterministic: bool | None = None  # the prior the series states

    @property
    def is_deterministic(self) -> bool:
        return self.kind.startswith("deterministic")


def commit_sigma(pool: Pool, samples: int, rng: random.Random) -> float:
    """The standard deviation of the median of ``samples`` draws from the pool."""
    draws = [
        _median([rng.choice(pool.deviations) for _ in range(samples)]) for _ in range(SIGMA_DRAWS)
    ]
    mean = math.fsum(draws) / len(draws)
    return math.sqrt(math.fsum((d - mean) ** 2 for d in draws) / (len(draws) - 1))


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def stochastic_cases(pool: Pool, rng: random.Random, per_kind: dict[str, int]) -> list[Case]:
    sigmas = {k: commit_sigma(pool, k, rng) for k in (1, 3)}
    cases = []
    sizes = iter(STEP_SIGMAS * 1000)
    for kind, count in per_kind.items():
        for number in range(count):
            length = rng.randint(150, 250)
            per_commit = rng.choice((1, 3))
            sigma = sigmas[per_commit]
            shift = [0.0] * length
            case = Case(f"{pool.name} {kind} {number}", kind, pool.name, pool.scale,
                        pool.better, [], [], length)  # fmt: skip
            if kind == "steps":
                positions = _positions(rng, length, rng.choice((1, 2)))
                for position in positions:
                    size = next(sizes)
                    case.steps.append(Step(position, size))
                    signed = size * sigma * rng.choice((-1, 1))
                    for index in range(position, length):
                        shift[index] += signed
            elif kind == "spikes":
                for position in rng.sample(range(EDGE, length - EDGE), rng.randint(3, 5)):
                    case.spikes.append(position)
                    shift[position] += rng.uniform(5, 20) * sigma * rng.choice((-1, 1))
            elif kind == "drift":
                span = rng.randint(40, 100)
                start = rng.randint(EDGE, length - EDGE - span)
                total = rng.uniform(4, 8) * sigma * rng.choice((-1, 1))
                case.drift = (start, start + span)
                for index in range(start, length):
                    shift[index] += total * min(1.0, (index - start + 1) / span)
            _fill(case, _measurer(_drawer(pool, rng), shift, per_commit), rng)
            cases.append(case)
    return cases


def _drawer(pool: Pool, rng: random.Random) -> Callable[[float], float]:
    """A sample at ``shift`` (judging units) from the pool's level, with real noise."""
    if pool.scale is Scale.RATIO:
        return lambda shift: pool.level * math.exp(shift + rng.choice(pool.deviations))
    return lambda shift: pool.level + shift + rng.choice(pool.deviations)


def _measurer(
    draw: Callable[[float], float], shift: list[float], per_commit: int
) -> Callable[[int], list[float]]:
    """One measurement of commit i: ``per_commit`` samples at its planted shift."""
    return lambda index: [draw(shift[index]) for _ in range(per_commit)]


def _positions(rng: random.Random, length: int, count: int) -> list[int]:
    while True:
        positions = sorted(rng.randint(EDGE, length - EDGE) for _ in range(count))
        if all(b - a >= STEP_GAP for a, b in itertools.pairwise(positions)):
            return positions


def _fill(case: Case, measure: Callable[[int], list[float]], rng: random.Random) -> None:
    """Entries in commit order, a re-run of a commit (new draws at the same commit's
    level) listed a few commits after it."""
    entries: list[tuple[float, str, list[float]]] = []
    for index in range(case.length):
        sha = f"{rng.getrandbits(160):040x}"
        entries.append((index, sha, measure(index)))
        if rng.random() < RERUN_SHARE:
            entries.append((index + rng.randint(1, 4) + 0.5, sha, measure(index)))
    entries.sort(key=lambda entry: entry[0])
    case.shas = [sha for _, sha, _ in entries]
    case.samples = [samples for _, _, samples in entries]


def deterministic_cases(rng: random.Random, count: int) -> list[Case]:
    """Exactly repeated values; steps of 1 % to 10 %; every third with a flaky commit."""
    cases = []
    for number in range(count):
        length = rng.randint(150, 250)
        level = round(rng.uniform(50, 5000), 2)
        values = [level] * length
        null = number % 4 == 3
        case = Case(f"deterministic {number}", "deterministic null" if null else "deterministic",
                    "zperf/twister", Scale.RATIO, Better.HIGHER, [], [], length,
                    deterministic=True if number % 2 else None)  # fmt: skip
        if not null:
            for position in _positions(rng, length, rng.choice((1, 2))):
                case.steps.append(Step(position, 0.0))
                factor = 1 + rng.uniform(0.01, 0.10) * rng.choice((-1, 1))
                new = round(values[position] * factor, 2)
                values[position:] = [new] * (length - position)
        if number % 3 == 0:
            flaky = rng.choice([i for i in range(EDGE, length - EDGE) if _apart(i, case.steps)])
            case.spikes.append(flaky)
            values[flaky] = round(values[flaky] * rng.uniform(0.5, 0.9), 2)
        _fill(case, _measurer(lambda shift: shift, values, 1), rng)
        cases.append(case)
    return cases


def _apart(index: int, steps: list[Step]) -> bool:
    return all(abs(index - step.position) > 3 for step in steps)
