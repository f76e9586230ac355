"""Issue 15's "done when", end to end: ``perfbot serve`` as a process, the fake GitHub on
loopback sockets. Five push runs on main post nothing; then a PR with three pushes ends
with one comment showing its earlier pushes, main's recent values and a mermaid chart that
closes, as GitHub's markdown engine (cmark-gfm) renders it; a hostile metric name in a
charted metric breaks neither the mermaid block nor the markdown."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from perfbot.engine.show.mermaid import label
from perfbot.sandbox.fakegithub import serve
from tests.harness import (
    ZPERF_BASE,
    World,
    assert_done,
    perfbot_process,
    settings_env,
    wait_idle,
    wait_until,
    zip_of,
    zperf_log,
)
from tests.test_markdown_render import assert_structure
from tests.test_push_runs import MAIN_SHAS, post, push_run, push_values

pytestmark = pytest.mark.slow

HOSTILE = 'rx"]; %%{init}%% --> ```</details> @mallory #1 [x]'
PUSHES = ["a" * 40, "b" * 40, "c" * 40]
# tcp4 on each push: 10 %, then 6 %, then 3 % below main; the hostile metric down 20 %.
TCP4_FACTORS = [0.90, 0.94, 0.97]
RERUN = 3002  # the third push's run, run again


def hostile_json(values: list[float]) -> str:
    metric = {"name": HOSTILE, "values": values, "unit": "Mbps"}
    return json.dumps({"perfbot": 1, "platform": "json", "metrics": [metric]})


def pr_report(factor: float) -> bytes:
    head = {**ZPERF_BASE, "tcp4_mbps": ZPERF_BASE["tcp4_mbps"] * factor}
    return zip_of(
        {
            "base/qemu_x86/zperf.log": zperf_log(ZPERF_BASE),
            "head/qemu_x86/zperf.log": zperf_log(head),
            "base/json/j.json": hostile_json([100.0, 100.5, 99.5, 100.2, 99.8]),
            "head/json/j.json": hostile_json([80.0, 80.5, 79.5, 80.2, 79.8]),
        }
    )


def test_push_runs_then_a_pr_of_three_pushes_with_history_and_a_chart(tmp_path: Path) -> None:
    world = World.create()
    database = tmp_path / "perfbot.db"
    with serve(world.fake) as fake:
        env = settings_env(fake.api_url, database)
        with perfbot_process(env, tmp_path / "perfbot.log") as bot:
            # Five push runs on main: recorded, nothing posted.
            deliveries = []
            for index, sha in enumerate(MAIN_SHAS):
                run_id = 2000 + index
                files: dict[str, str | bytes] = {
                    "head/qemu_x86/zperf.log": zperf_log(push_values(run_id)),
                    "head/json/j.json": hostile_json([100.0 + index / 10, 100.1 + index / 10]),
                }
                run = push_run(world, run_id, sha, files=files)
                deliveries.append(post(bot.client, *world.delivery(run)))
            wait_idle(bot.client.get, 30, database=database)
            for delivery, sha in zip(deliveries, MAIN_SHAS, strict=True):
                reason = assert_done(database, delivery, "of main@", sha[:7])
                assert reason is not None
                assert reason.endswith("(push run): nothing to comment; watch queued")
            assert world.fake.comments == {}
            assert world.fake.check_runs == {}
            # A PR with three pushes, each measured once (the last one twice: a re-run).
            pull = world.pull(7, PUSHES[0])
            for number, (sha, factor) in enumerate(zip(PUSHES, TCP4_FACTORS, strict=True)):
                pull.head_sha = sha
                run = world.measured_run(pull, 3000 + number, report=pr_report(factor))
                post(bot.client, *world.delivery(run))
                wait_until(shows(world, sha), 30, f"the comment of push {sha[:7]}")
                wait_idle(bot.client.get, 30, database=database)
                assert len(world.bot_comments(7)) == 1
            rerun = world.fake.add_run(world.repo, RERUN, PUSHES[2], pull.head_ref, run_attempt=2)
            world.fake.add_artifact(world.repo, rerun, "perf-report", pr_report(0.97))
            world.fake.add_artifact(world.repo, rerun, "pr-number", zip_of({"n.txt": "7\n"}))
            post(bot.client, *world.delivery(rerun))
            wait_idle(bot.client.get, 30, database=database)
    (body,) = world.bot_comments(7)  # one comment, edited in place
    check_comment(body)


def shows(world: World, sha: str) -> Callable[[], bool]:
    """Whether PR 7's comment reports ``sha``."""
    return lambda: any(f"<code>{sha[:7]}</code> (this PR" in c for c in world.bot_comments(7))


def check_comment(body: str) -> None:
    """What the last comment must show, as GitHub's markdown engine renders it."""
    root = assert_structure(body, links=[f"https://github.com/acme/widget/actions/runs/{RERUN}"])
    # The earlier pushes, newest first, each once (the re-run is an attempt of push c).
    pushes = body[body.index("This PR's pushes") :]
    assert "This PR's pushes: 2 earlier measured pushes" in body
    order = [pushes.index(f"<code>{sha[:7]}</code>") for sha in reversed(PUSHES)]
    assert order == sorted(order)
    assert pushes.count("<code>ccccccc</code>") == 1
    assert "<code>ccccccc</code> (this report)" in pushes
    assert "🔴 −10.00 %" in pushes  # push a's tcp4 change
    # main's recent values: the five pushed commits (and the PR's base commit).
    trend = body[body.index("Recent values on <code>main</code>") :]
    for sha in MAIN_SHAS:
        assert f"<code>{sha[:7]}</code>" in trend
    assert "below all 6 recent <code>main</code> commits" in trend
    # The charts: each one code block in the charts' <details>, the hostile one too.
    charts = [c for c in root.find("code") if c.attrs.get("class") == "language-mermaid"]
    assert len(charts) == 2
    titles = [c.text().split('title "', 1)[1].split('"', 1)[0] for c in charts]
    assert any(title.startswith(label(HOSTILE, 40)[:20]) for title in titles), titles
    for chart in charts:
        assert chart.parent is not None
        assert chart.parent.tag == "pre"
        (holder,) = [a for a in chart.ancestors() if a.tag == "details"]
        assert holder.find("summary")[0].text() == "2 charts of the metrics that moved"
        lines = chart.text().rstrip("\n").split("\n")
        assert lines[-1].startswith("    line [")
        assert sum('"' in line for line in lines) == 4  # palette, title, x axis, y axis
        assert "%%" not in chart.text()
        assert "```" not in chart.text()
        categories = lines[-3]
        assert '"PR aaaaaaa", "PR bbbbbbb", "PR ccccccc"]' in categories
    # The footer is outside every <details>: the markdown closed around the charts.
    (footer,) = root.find("sub")
    assert not [a for a in footer.ancestors() if a.tag == "details"]
