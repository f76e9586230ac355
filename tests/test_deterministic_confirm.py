"""A deterministic metric is never re-run to confirm it, whatever the store holds.

zperf under QEMU icount repeats its numbers exactly. Found in one scene run 7 times: its
−7 % regression got perfbot's confirming re-run twice, whenever the store already held
measurements of the base commit (their spread is zero: learned noise of sigma 0), which
depends on which job ran first. The format's prior and a zero learned spread both mean
deterministic: the verdict is the same either way, and nothing is re-run.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from perfbot.engine.judge import confirm
from perfbot.engine.judge.compare import Verdict, compare
from perfbot.engine.judge.noise import Noise, Source
from perfbot.sandbox.fakegithub import Run
from tests.builders import side
from tests.harness import (
    ZPERF_BASE,
    World,
    assert_done,
    in_process_service,
    report_zip,
    wait_idle,
)

BASE = "b" * 40
HEAD = "c" * 40
RUN = 7001
DROPPED = {**ZPERF_BASE, "tcp4_mbps": ZPERF_BASE["tcp4_mbps"] * 0.93}  # −7 %
EARLIER_PULLS = (11, 12, 13, 14)  # four measurements of BASE: enough to learn from


def deliver(client: httpx.Client, world: World, run: Run) -> str:
    body, headers = world.delivery(run)
    response = client.post("/webhook", content=body, headers=headers)
    assert response.status_code == 202, response.text
    wait_idle(client.get)
    return headers["X-GitHub-Delivery"]


def scene(tmp_path: Path, *, earlier: bool) -> tuple[list[int], str, str | None]:
    """PR 7's zperf run, −7 % on tcp4; with ``earlier``, other PRs against the same base
    commit were measured first (each records a measurement of BASE, all equal). Returns
    the re-runs perfbot asked for, PR 7's tcp4 row and its check's conclusion."""
    world = World.create()
    database = tmp_path / ("with-history" if earlier else "fresh")
    with in_process_service(world, database) as client:
        if earlier:
            for number in EARLIER_PULLS:
                pull = world.pull(number, f"{number:040x}")
                pull.base_sha = BASE
                run = world.measured_run(pull, 9000 + number, report=report_zip(ZPERF_BASE))
                assert_done(database, deliver(client, world, run), "up to date")
        pull = world.pull(7, HEAD)
        pull.base_sha = BASE
        run = world.measured_run(pull, RUN, report=report_zip(DROPPED))
        assert_done(database, deliver(client, world, run), "up to date")
    (comment,) = world.bot_comments(7)
    row = next(line for line in comment.splitlines() if "<code>tcp4_mbps</code>" in line)
    check = next(c for c in world.fake.check_runs.values() if c.head_sha == HEAD)
    return list(world.fake.reruns), row, check.conclusion


def test_a_deterministic_regression_is_called_at_once_whatever_the_store_holds(
    tmp_path: Path,
) -> None:
    fresh = scene(tmp_path, earlier=False)
    with_history = scene(tmp_path, earlier=True)
    assert fresh[0] == []
    assert with_history[0] == []  # no confirming re-run, though the store knew the commit
    assert "🔴 **−7.00 %** (beyond 5 % tolerance)" in fresh[1]
    assert with_history[1:] == fresh[1:]  # the same verdict, row and check either way


def test_a_zero_learned_spread_means_deterministic() -> None:
    # A format that does not say it is deterministic (perfbot JSON), measured the same
    # four times before: sigma 0 learned from the store.
    base = side({"tcp4_mbps": 5.97}, deterministic=False)
    head = side({"tcp4_mbps": 5.55}, deterministic=False)
    zero = Noise(0.0, 3, Source.LEARNED, "4 measurements of main@bbbbbbb")
    comparison = compare(base, head, noise={("qemu_x86/atom", "tcp4_mbps"): zero})
    (platform,) = comparison.platforms
    (metric,) = platform.metrics
    assert (metric.verdict, metric.beyond_tolerance) == (Verdict.REGRESSED, True)
    assert metric.deterministic
    assert confirm.pending(comparison) == ()
    # A learned spread that is not zero is a stochastic metric's: confirmed first.
    some = Noise(0.001, 3, Source.LEARNED, "4 measurements of main@bbbbbbb")
    stochastic = compare(base, head, noise={("qemu_x86/atom", "tcp4_mbps"): some})
    assert confirm.pending(stochastic) == (("qemu_x86/atom", "tcp4_mbps"),)


def test_the_formats_prior_means_deterministic_even_against_a_scattered_history() -> None:
    base = side({"tcp4_mbps": 5.97})  # zperf-like: the format says deterministic
    head = side({"tcp4_mbps": 5.55})
    scattered = Noise(0.001, 3, Source.LEARNED, "4 measurements of main@bbbbbbb")
    comparison = compare(base, head, noise={("qemu_x86/atom", "tcp4_mbps"): scattered})
    (platform,) = comparison.platforms
    (metric,) = platform.metrics
    assert metric.beyond_tolerance
    assert metric.deterministic
    assert confirm.pending(comparison) == ()


def test_deterministic_runs_repeated_within_the_run_are_not_re_run_either() -> None:
    # Three zperf runs per side under icount: a within-run spread of zero.
    base = side({"tcp4_mbps": [5.97, 5.97, 5.97]})
    head = side({"tcp4_mbps": [5.55, 5.55, 5.55]})
    comparison = compare(base, head)
    assert comparison.regressed_beyond_tolerance == 1
    assert confirm.pending(comparison) == ()
