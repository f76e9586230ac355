"""bench/signal_noise.py, the evaluation harness of issue 13 item 9, on a tiny real corpus.

The harness's own code measures real iperf3 on loopback (2 comparisons each of A/A at 3
runs interleaved and of UDP offered 5 % lower on head, 1 s runs), then these tests check
what it computes — the layout and the lower rate really measured, rates counted from the
verdicts the judge returns, the re-judged corpus giving the same figures — and the two
verdict targets that must hold on any machine.
"""

from __future__ import annotations

import io
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from perfbot.engine.judge.compare import Comparison, Verdict
from perfbot.engine.read.sides import Series, SideReport
from perfbot.model import Better

# The harness lives in bench/ and imports its sibling modules by their own names, as every
# bench script does; appended, not prepended, so bench/ shadows nothing.
BENCH = Path(__file__).resolve().parents[1] / "bench"
if str(BENCH) not in sys.path:
    sys.path.append(str(BENCH))

import signal_noise as harness  # noqa: E402

# A rate loopback carries without loss even on a loaded machine (the seeds' labs offer
# 18M and 20M): the 5 % lower offered rate must then show as 5 % lower goodput.
UDP_BPS = 20_000_000
DROP = 0.05
AA = harness.Experiment("aa_3int", "A/A, 3 runs interleaved", ("tcp_tx", "udp"), 3, True, 2)
AB = harness.Experiment("ab_udp", "A/B, UDP 5 % lower", ("udp",), 3, True, 2, "udp", DROP)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    plan = harness.Plan(
        cases=harness.default_cases(UDP_BPS, 2_000_000_000),
        experiments=(AA, AB),
        history=1,
        seconds=1,
    )
    root = tmp_path_factory.mktemp("signal-corpus")
    manifest = harness.measure(plan, root, budget_seconds=150, out=io.StringIO())
    assert not manifest["truncated"], "the tiny corpus did not fit its budget"
    return root, manifest


def _document(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    return document


@pytest.mark.slow
def test_the_corpus_is_laid_out_as_a_lab_uploads_it_and_head_really_offers_less(
    corpus: tuple[Path, dict[str, Any]],
) -> None:
    root, manifest = corpus
    assert [r["error"] for r in manifest["runs"]] == [None] * len(manifest["runs"])
    aa_dirs, ab_dirs = (e["comparison_dirs"] for e in manifest["experiments"])
    assert aa_dirs == ["aa_3int/00", "aa_3int/01"]
    assert ab_dirs == ["ab_udp/00", "ab_udp/01"]
    for where in aa_dirs:
        for side in ("base", "head"):
            names = sorted(p.name for p in (root / where / side / "loopback").iterdir())
            assert names == [f"{c}_{i}.json" for c in ("tcp_tx", "udp") for i in (1, 2, 3)]
    assert sorted(p.name for p in (root / "history/00/loopback").iterdir()) == [
        "tcp_tx_1.json",
        "udp_1.json",
    ]
    lowered = round(UDP_BPS * (1 - DROP))
    for where in ab_dirs:
        sent: dict[str, list[float]] = {}
        for side in ("base", "head"):
            for i in (1, 2, 3):
                document = _document(root / where / side / "loopback" / f"udp_{i}.json")
                sent.setdefault(side, []).append(document["end"]["sum_sent"]["bits_per_second"])
                # The head's report asks for the base's rate, as a slower build's would.
                assert document["start"]["test_start"]["target_bitrate"] == UDP_BPS
        ratio = statistics.median(sent["head"]) / statistics.median(sent["base"])
        assert ratio == pytest.approx(1 - DROP, abs=0.01)  # what was sent, not what was asked
        runs = [r for r in manifest["runs"] if r["path"].startswith(where)]
        assert {(r["side"], r["requested_bps"]) for r in runs} == {
            ("base", UDP_BPS),
            ("head", lowered),
        }
        assert all(r["args"][-2:] == ["-b", str(r["requested_bps"])] for r in runs)


@pytest.mark.slow
def test_rates_are_counted_from_the_verdicts_the_judge_returns(
    corpus: tuple[Path, dict[str, Any]],
) -> None:
    """A judge that calls exactly udp.receiver_mbps a regression beyond tolerance: the
    figures must say so, whatever the real verdicts would have been."""
    root, manifest = corpus
    calls: list[tuple[Path, Path, list[Path]]] = []

    def rigged(base: Path, head: Path, history: Any) -> Comparison:
        calls.append((base, head, list(history)))
        real = harness.judge(base, head, history)
        platforms = tuple(
            replace(
                platform,
                metrics=tuple(
                    replace(
                        metric,
                        verdict=(
                            Verdict.REGRESSED
                            if metric.name == "udp.receiver_mbps"
                            else Verdict.UNCHANGED
                        ),
                        beyond_tolerance=metric.name == "udp.receiver_mbps",
                    )
                    for metric in platform.metrics
                ),
            )
            for platform in real.platforms
        )
        return replace(real, platforms=platforms)

    scored = harness.score(root, manifest, (AA, AB), rigged)
    assert [(c[0], c[1]) for c in calls] == [
        (root / where / "base", root / where / "head")
        for where in ("aa_3int/00", "aa_3int/01", "ab_udp/00", "ab_udp/01")
    ]
    assert all(c[2] == [root / "history/00"] for c in calls)
    aa, ab = harness.summarize((AA, AB), scored)
    metrics_per_aa = sum(len(s.outcomes) for s in scored if s.experiment == "aa_3int")
    assert metrics_per_aa >= 2 * 5  # tcp_tx: rate, retransmits; udp: rate, loss, jitter
    assert (aa.comparisons, aa.exit_1, aa.total.judged) == (2, 2, metrics_per_aa)
    assert (aa.total.moved, aa.total.beyond) == (2, 2)
    assert aa.per_metric["udp.receiver_mbps"].moved == 2
    assert aa.per_metric["tcp_tx.receiver_mbps"].moved == 0
    assert aa.moved_rate == pytest.approx(2 / metrics_per_aa)
    detected = ab.detected()
    assert (detected.judged, detected.regressed, detected.beyond) == (2, 2, 2)
    met = {what: ok for what, ok, _ in harness.targets([aa, ab])}
    assert met == {
        "aa_3int: at most 1% of metrics moved": False,
        "aa_3int: none beyond tolerance": False,
        "aa_3int: exit 0 in every comparison": False,
        "ab_udp: 5 % drop detected ≥ 95%": True,
    }


@pytest.mark.slow
def test_a_saved_corpus_is_rejudged_to_the_same_figures(
    corpus: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    root, manifest = corpus
    loaded, experiments = harness.load_corpus(root)
    assert experiments == (AA, AB)
    assert loaded == json.loads(json.dumps(manifest))
    figures = harness.summarize(
        experiments, harness.score(root, loaded, experiments, harness.judge)
    )
    out = io.StringIO()
    assert harness.main(["--corpus", str(root), "--json", str(tmp_path / "f.json")], out) == 0
    document = _document(tmp_path / "f.json")
    assert [
        (e["name"], e["comparisons"], e["exit_1"], e["total"]["moved"], e["total"]["beyond"])
        for e in document["experiments"]
    ] == [
        (f.experiment.name, f.comparisons, f.exit_1, f.total.moved, f.total.beyond) for f in figures
    ]
    assert "judged 4 comparisons" in out.getvalue()


@pytest.mark.slow
def test_the_cli_exits_as_the_engine_judges(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, manifest = corpus
    scored = harness.score(root, manifest, (AA, AB), harness.judge)
    agree, checked = harness.cli_check(root, scored, io.StringIO())
    assert checked >= 2  # one comparison of each experiment, and a red one if any
    assert agree == checked


@pytest.mark.slow
def test_aa_interleaved_at_three_runs_has_no_metric_beyond_tolerance(
    corpus: tuple[Path, dict[str, Any]],
) -> None:
    root, manifest = corpus
    scored = [
        s for s in harness.score(root, manifest, (AA, AB), harness.judge) if s.experiment == AA.name
    ]
    assert len(scored) == 2
    for s in scored:
        assert sum(o.judged for o in s.outcomes) >= 5, s.outcomes  # the comparison judged
        assert [o.metric for o in s.outcomes if o.beyond] == []
        assert s.exit_code == 0


@pytest.mark.slow
def test_udp_offered_five_percent_lower_at_three_runs_is_a_regression(
    corpus: tuple[Path, dict[str, Any]],
) -> None:
    root, manifest = corpus
    scored = [
        s for s in harness.score(root, manifest, (AA, AB), harness.judge) if s.experiment == AB.name
    ]
    verdicts = [o.verdict for s in scored for o in s.outcomes if o.metric == "udp.receiver_mbps"]
    assert verdicts == ["regressed", "regressed"]


# --- the arithmetic, without iperf3 ------------------------------------------------------


def test_wilson_interval() -> None:
    assert harness.wilson(0, 0) == (0.0, 1.0)
    low, high = harness.wilson(0, 10)
    assert low == 0.0
    assert high == pytest.approx(0.2775, abs=1e-4)
    assert harness.wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert harness.wilson(10, 10)[1] == pytest.approx(1.0)
    assert harness.wilson(10, 10)[0] == pytest.approx(0.7225, abs=1e-4)


def test_robust_sigma_is_per_run_from_pairwise_differences() -> None:
    # MAD of (-2, -1, 0, 1, 2) is 1; one run's σ is the pair's σ over √2.
    assert harness.robust_sigma([-2.0, -1.0, 0.0, 1.0, 2.0]) == pytest.approx(1.4826 / 2**0.5)
    assert harness.robust_sigma([0.1]) is None
    assert harness.mde(0.04, 3) == pytest.approx(0.13, abs=0.005)  # noise.md's example


def test_the_naive_rule_moves_at_one_percent() -> None:
    def side(**values: float) -> SideReport:
        return SideReport(
            series={
                ("p", name): Series("%" if "lost" in name else "Mbps", better, [value])
                for name, value in values.items()
                for better in [Better.LOWER if "lost" in name else Better.HIGHER]
            }
        )

    base = side(a_mbps=100.0, b_mbps=100.0, c_mbps=100.0, lost=0.0, lost_both=0.0)
    head = side(a_mbps=99.5, b_mbps=98.9, c_mbps=94.0, lost=0.3, lost_both=0.0)
    outcomes = {o.metric: o for o in harness.naive_outcomes(base, head)}
    assert [(m, o.moved, o.regressed, o.beyond) for m, o in sorted(outcomes.items())] == [
        ("a_mbps", False, False, False),
        ("b_mbps", True, True, False),
        ("c_mbps", True, True, True),
        ("lost", True, True, True),  # from zero: no percentage, infinitely worse
        ("lost_both", False, False, False),
    ]


def test_interleaved_and_sequential_schedules() -> None:
    sequential = replace(AA, interleaved=False, cases=("udp",))
    assert [(s, i) for s, i, _ in sequential.schedule()] == [
        ("base", 1), ("base", 2), ("base", 3), ("head", 1), ("head", 2), ("head", 3),
    ]  # fmt: skip
    assert [(s, i) for s, i, _ in replace(sequential, interleaved=True).schedule()] == [
        ("base", 1), ("head", 1), ("base", 2), ("head", 2), ("base", 3), ("head", 3),
    ]  # fmt: skip


# --- the history-aware judge, on perfbot-json sides ---------------------------------------


def _side(root: Path, **values: float) -> Path:
    """A side of one run: each metric's one value, in perfbot's own JSON report format."""
    root.mkdir(parents=True)
    metrics = [
        {"name": name, "value": value, "unit": "Mbps", "better": "higher"}
        for name, value in values.items()
    ]
    document = {"perfbot": 1, "platform": "loopback", "metrics": metrics}
    (root / "report.json").write_text(json.dumps(document))
    return root


def test_the_history_aware_judge_learns_each_metrics_noise_from_the_history(
    tmp_path: Path,
) -> None:
    """Six same-commit runs: one metric scatters by about 4 %, the other by 0.1 %. A PR
    that lowers both by 6 % in one run is uncertain to the stateless judge (no noise
    known); with the history, the stable one is a regression beyond tolerance and the
    noisy one stays within its band (the App-level test's story, through the harness)."""
    noisy = (100.0, 104.0, 96.0, 101.0, 97.0, 103.0)
    stable = (100.0, 100.1, 99.9, 100.0, 100.1, 99.9)
    history = [
        _side(tmp_path / f"history/{i:02d}", noisy=n, stable=s)
        for i, (n, s) in enumerate(zip(noisy, stable, strict=True))
    ]
    base = _side(tmp_path / "base", noisy=100.0, stable=100.0)
    head = _side(tmp_path / "head", noisy=94.0, stable=94.0)

    def verdicts(comparison: Comparison) -> dict[str, tuple[str, bool, str]]:
        return {m.name: (str(m.verdict), m.beyond_tolerance, m.note) for m in
                comparison.platforms[0].metrics}  # fmt: skip

    assert verdicts(harness.judge(base, head, history)) == {
        "noisy": ("uncertain", False, "single run, noise unknown"),
        "stable": ("uncertain", False, "single run, noise unknown"),
    }
    with_history = harness.history_judge(base, head, history)
    assert verdicts(with_history) == {
        "noisy": ("unchanged", False, "within noise"),
        "stable": ("regressed", True, ""),
    }
    learned = {m.name: m.noise for m in with_history.platforms[0].metrics}
    assert learned["noisy"] is not None
    assert learned["noisy"].df == 5
    assert learned["noisy"].evidence == "6 measurements of main@history"
    # As three commits of two runs, the same samples give 3 degrees of freedom.
    three = harness.history_judge(base, head, history, groups=3)
    noise = {m.name: m.noise for m in three.platforms[0].metrics}["noisy"]
    assert noise is not None
    assert noise.df == 3
    assert noise.evidence == "6 measurements of 3 commits"


def test_history_groups_are_contiguous_commits() -> None:
    entries = [Path(f"h/{i}") for i in range(7)]
    assert harness.history_groups(entries, 1) == [entries]
    assert harness.history_groups(entries, 3) == [entries[0:3], entries[3:6], entries[6:7]]
    assert harness.history_groups(entries, 20) == [[e] for e in entries]
    assert harness.history_groups([], 2) == []


def test_the_apps_judge_confirms_a_red_metric_with_the_rerun(tmp_path: Path) -> None:
    """A stable metric 6 % lower in one run is red; the App re-runs it and compares both
    attempts' runs together: a re-run that is 6 % lower again confirms it, one back at
    the base's value does not reproduce it (no longer red)."""
    history = [
        _side(tmp_path / f"history/{i:02d}", stable=s)
        for i, s in enumerate((100.0, 100.1, 99.9, 100.0, 100.1, 99.9))
    ]
    base = _side(tmp_path / "base", stable=100.0)
    head = _side(tmp_path / "head", stable=94.0)
    again_base = _side(tmp_path / "again/base", stable=100.0)
    lower_again = _side(tmp_path / "again/lower", stable=94.1)
    back = _side(tmp_path / "again/back", stable=100.05)
    app = harness.ConfirmingJudge()

    def stable(comparison: Comparison) -> tuple[str, bool, str, int]:
        metric = comparison.platforms[0].metrics[0]
        assert metric.base is not None
        return str(metric.verdict), metric.beyond_tolerance, metric.note, metric.base.n

    assert stable(app(base, head, history)) == ("regressed", True, "", 1)
    assert stable(app.with_rerun(base, head, history, (again_base, lower_again))) == (
        "regressed",
        True,
        "confirmed by a second attempt",
        2,
    )
    verdict, beyond, note, runs = stable(app.with_rerun(base, head, history, (again_base, back)))
    assert (verdict, beyond, runs) == ("unchanged", False, 2)
    assert note.endswith("not reproduced by a second attempt")
