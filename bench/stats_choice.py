"""Why the engine computes its own statistics instead of calling ``scipy.stats``.

Side by side in one process (and in fresh interpreters for the import times): the time
to import scipy.stats against perfbot's statistics module, and the time per call of the
two operations a verdict makes per metric, Mann-Whitney's p-value (3 runs against 3,
and 8 against 8) and a t quantile (which perfbot caches per degrees of freedom). The
answers agree (tests/test_stats.py); the cost is what differs.

Run: .venv/bin/python bench/stats_choice.py [--calls N]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial

from scipy import stats as scipy_stats

from perfbot.engine.judge import stats

# Below this, an import's cost is lost in the interpreter's own start-up noise.
RESOLUTION_SECONDS = 0.5e-3


def import_seconds(module: str, repeat: int = 5) -> float:
    """The best wall time of ``import module`` in a fresh interpreter, less a bare start
    taken in turns with it (a busy neighbour slows both alike); never below the resolution."""

    def run(code: str) -> float:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - started

    bare, loaded = [], []
    for _ in range(repeat):
        bare.append(run("pass"))
        loaded.append(run(f"import {module}"))
    return max(min(loaded) - min(bare), RESOLUTION_SECONDS)


def milliseconds(seconds: float) -> str:
    if seconds <= RESOLUTION_SECONDS:
        return f"<= {RESOLUTION_SECONDS * 1e3:.1f} ms"
    return f"{seconds * 1e3:.1f} ms"


def per_call(work: Callable[[], object], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        work()
    return (time.perf_counter() - started) / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    rng = random.Random(1)
    print("| what | scipy | perfbot | scipy / perfbot |")
    print("|---|--:|--:|--:|")
    ours, theirs = import_seconds("perfbot.engine.judge.stats"), import_seconds("scipy.stats")
    print(
        f"| import (fresh interpreter) | {theirs * 1e3:.0f} ms | {milliseconds(ours)} |"
        f" {'>= ' if ours <= RESOLUTION_SECONDS else ''}{theirs / ours:.0f}× |"
    )
    at_three: tuple[float, float] = (0.0, 0.0)
    for n in (3, 8):
        base = [rng.gauss(0, 1) for _ in range(n)]
        head = [rng.gauss(1, 1) for _ in range(n)]
        exact = partial(scipy_stats.mannwhitneyu, alternative="two-sided", method="exact")
        scipy_call = per_call(partial(exact, base, head), args.calls)
        own_call = per_call(partial(stats.mann_whitney_p, base, head), args.calls)
        if n == 3:
            at_three = (scipy_call, own_call)
        print(
            f"| Mann-Whitney p, {n} vs {n} runs | {scipy_call * 1e6:.0f} µs |"
            f" {own_call * 1e6:.1f} µs | {scipy_call / own_call:.0f}× |"
        )
    scipy_t = per_call(lambda: scipy_stats.t.ppf(1 - 0.001 / 2, 4), args.calls)
    uncached = per_call(lambda: stats.t_quantile.__wrapped__(4, 0.001), max(args.calls // 10, 1))
    cached = per_call(lambda: stats.t_quantile(4, 0.001), args.calls)
    print(
        f"| t quantile (uncached) | {scipy_t * 1e6:.0f} µs | {uncached * 1e6:.0f} µs |"
        f" {scipy_t / uncached:.1f}× |"
    )
    print(
        f"| t quantile (as a verdict asks: cached) | {scipy_t * 1e6:.0f} µs |"
        f" {cached * 1e6:.2f} µs | {scipy_t / cached:.0f}× |"
    )
    metrics = 20_000
    print(
        f"\nA report of {metrics:,} metrics at 3 runs a side, its rank tests alone: "
        f"scipy {metrics * at_three[0]:.1f} s, perfbot {metrics * at_three[1]:.2f} s."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
