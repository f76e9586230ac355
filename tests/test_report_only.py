"""``report_only: true`` under ``metrics:``: a flaky metric in quarantine is measured, judged,
shown, recorded and learned from, but never red, never beyond tolerance, never confirmed by
a re-run and never fails the check."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from perfbot.app.configfile import resolve_config
from perfbot.engine.judge import conclusion, confirm
from perfbot.engine.judge.compare import Comparison, MetricRule, Policy, Verdict, compare
from perfbot.engine.show import terminal
from perfbot.engine.show.export import comparison_document
from perfbot.engine.show.render import render
from perfbot.engine.show.sections import headline
from perfbot.sandbox.fakegithub import Run
from tests.builders import side
from tests.harness import World, assert_done, in_process_service, wait_idle, zip_of
from tests.test_recording import rows

QUARANTINE = Policy(rules=(MetricRule("*.jitter_ms", report_only=True),))
STEADY = [100.0, 100.05, 99.95]
DROPPED = [90.0, 90.05, 89.95]  # −10 %: beyond tolerance, far beyond the runs' noise


def jittery(jitter: list[float], mbps: list[float] | None = None) -> dict[str, list[float]]:
    return {"udp.jitter_ms": jitter, "udp.receiver_mbps": mbps or STEADY}


def judged(base: list[float], head: list[float], policy: Policy = QUARANTINE) -> Comparison:
    return compare(
        side(jittery(base), unit="ms", deterministic=False),
        side(jittery(head), unit="ms", deterministic=False),
        policy,
    )


def jitter_row(comparison: Comparison) -> str:
    return next(line for line in render(comparison).splitlines() if "jitter" in line)


def test_a_report_only_regression_is_judged_and_shown_but_never_red() -> None:
    # Jitter is "higher is better" here only because the builder says so: what matters
    # is that the move is a regression beyond tolerance, which the rule quarantines.
    comparison = judged(STEADY, DROPPED)
    (platform,) = comparison.platforms
    metric = next(m for m in platform.metrics if m.name == "udp.jitter_ms")
    assert metric.verdict is Verdict.REGRESSED  # what happened is still said
    assert metric.report_only
    assert not metric.beyond_tolerance
    row = jitter_row(comparison)
    assert "📝 −10.00 % (regressed; report only)" in row
    assert "🔴" not in row
    assert "🟠" not in row
    assert headline(comparison) == "1 report-only metric moved"
    assert comparison.regressed_beyond_tolerance == 0
    # The same move without the rule is red: the rule, not the data, made the difference.
    unruled = judged(STEADY, DROPPED, Policy())
    assert unruled.regressed_beyond_tolerance == 1
    assert "🔴" in jitter_row(unruled)


def test_a_report_only_metric_never_fails_the_check_nor_waits_for_a_confirmation() -> None:
    comparison = judged(STEADY, DROPPED)
    assert confirm.pending(comparison) == ()
    assert conclusion.of_comparison(comparison, fail_on_regression=True) == "success"
    unruled = judged(STEADY, DROPPED, Policy())
    assert confirm.pending(unruled) != ()
    assert conclusion.of_comparison(unruled, fail_on_regression=True) == "failure"


def test_a_report_only_metric_is_counted_apart_beside_real_moves() -> None:
    base = side(jittery(STEADY, STEADY), unit="ms", deterministic=False)
    head = side(jittery(DROPPED, DROPPED), unit="ms", deterministic=False)
    comparison = compare(base, head, QUARANTINE)
    assert headline(comparison) == "1 regression, 1 report-only metric moved"
    body = render(comparison)
    assert "| 🔴 1 |  | " in body  # the overview counts only the move that counts
    assert "📝 1 report only" in body
    document = comparison_document(comparison)
    assert document["summary"]["regressed"] == 1
    flags = {m["name"]: m["report_only"] for m in document["platforms"][0]["metrics"]}
    assert flags == {"udp.jitter_ms": True, "udp.receiver_mbps": False}


def test_an_unchanged_report_only_metric_is_marked_too() -> None:
    comparison = judged(STEADY, STEADY)
    assert "(report only)" in jitter_row(comparison)
    assert headline(comparison) == "no change beyond the noise floor"


def test_the_terminal_says_report_only_and_does_not_colour_the_move() -> None:
    table = terminal.comparison_table(judged(STEADY, DROPPED), colour=True)
    line = next(line for line in table.splitlines() if "jitter" in line)
    assert "regressed (report only)" in line
    for colour in ("\x1b[31m", "\x1b[1;31m", "\x1b[33m"):
        assert colour not in line


def test_a_later_rule_takes_a_metric_out_of_quarantine() -> None:
    policy = Policy(rules=(MetricRule("*", report_only=True), MetricRule("udp.*", threshold=2.0)))
    assert policy.rule("udp.jitter_ms").report_only  # a rule that does not say keeps it
    released = Policy(rules=(*policy.rules, MetricRule("udp.jitter_ms", report_only=False)))
    assert not released.rule("udp.jitter_ms").report_only
    assert released.rule("udp.receiver_mbps").report_only


def test_the_configuration_reads_report_only() -> None:
    text = 'metrics:\n  "*.jitter_ms": {report_only: true}\n  "x": {report_only: maybe}\n'
    result = resolve_config(text, None, "widget")
    assert result.repo_config.metrics == (
        MetricRule("*.jitter_ms", report_only=True),
        MetricRule("x"),
    )
    (error,) = result.errors
    assert "metrics.x.report_only" in error
    assert "true or false" in error


# --- the App -------------------------------------------------------------------------------

BASE_SHA = "b" * 40
HEAD_SHA = "c" * 40


def suite(values: list[float]) -> str:
    """Three runs of a stochastic suite (perfbot JSON: not a deterministic tool)."""
    metric = {"name": "udp.jitter_ms", "values": values, "unit": "ms", "better": "higher"}
    return json.dumps({"perfbot": 1, "platform": "lab-board", "metrics": [metric]})


def test_the_app_neither_re_runs_nor_fails_the_check_for_a_report_only_metric(
    tmp_path: Path,
) -> None:
    config = 'fail_on_regression: true\nmetrics:\n  "*.jitter_ms": {report_only: true}\n'
    world = World.create({".github/perfbot.yml": config})
    world.pull(7, HEAD_SHA).base_sha = BASE_SHA
    database = tmp_path / "db"
    report = zip_of(
        {"base/lab-board/suite.json": suite(STEADY), "head/lab-board/suite.json": suite(DROPPED)}
    )
    with in_process_service(world, database) as client:
        pull = world.fake.repo(world.repo).pulls[7]
        run = world.measured_run(pull, 7001, report=report)
        delivery = deliver(client, world, run)
        assert_done(database, delivery, "up to date")
    assert world.fake.reruns == []  # a stochastic regression beyond tolerance, not confirmed
    (comment,) = world.bot_comments(7)
    assert "### Performance report: 1 report-only metric moved" in comment
    assert "📝 −10.00 % (regressed; report only)" in comment
    assert "🔴" not in comment
    assert "Confirming" not in comment
    (check,) = world.fake.check_runs.values()
    assert check.conclusion == "success"
    # Recorded like any metric, both sides: the branch's history and learned noise read it.
    stored = {
        (r["side"], r["metric"], r["sha"], tuple(json.loads(r["samples"]))) for r in rows(database)
    }
    assert stored == {
        ("base", "udp.jitter_ms", BASE_SHA, tuple(STEADY)),
        ("head", "udp.jitter_ms", HEAD_SHA, tuple(DROPPED)),
    }


def deliver(client: httpx.Client, world: World, run: Run) -> str:
    body, headers = world.delivery(run)
    response = client.post("/webhook", content=body, headers=headers)
    assert response.status_code == 202, response.text
    wait_idle(client.get)
    return headers["X-GitHub-Delivery"]
