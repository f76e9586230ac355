"""`perfbot try`: the whole scene against the stand-in GitHub, its step lines and the
state it leaves, your own report folders, a missing one, and the conversation page as
headless Chromium draws it (headline, tables, mermaid's charts)."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfbot.cli import main, try_scene, try_service, trying
from perfbot.sandbox import fixtures
from perfbot.sandbox.page import Conversation, render_fragment
from tests.harness import free_port, zperf_log
from tests.paths import REPO
from tests.test_plot import chromium

STEPS = [
    r"1\. PR #7 opened: run 1001 finished → comment (\d+) created; check run 'perfbot' on \w{7}: ",
    r"2\. second push \w{7}: run 1002 finished → comment (\d+) edited in place; "
    r"check run 'perfbot'",
    r"3\. /perfbot rerun by bob, a reviewer \(write\) → comment (\d+) edited in place; "
    r"reacted 🚀 to bob's comment; re-ran run 1002",
    r"4\. re-run of run 1002 \(attempt 2\) finished → comment (\d+) edited in place",
    r"5\. /perfbot rerun by mallory, a stranger \(none\) → reacted 😕 to mallory's comment \[",
    r"6\. push run 1003 on main \w{7} finished → posted nothing \(recorded \d+ series of main@",
]


def play(tmp_path: Path, report: Path | None = None) -> tuple[int, str, str, Conversation]:
    args = argparse.Namespace(report=report, dir=tmp_path / "try", port=0, open=False, exit=True)
    out, err = io.StringIO(), io.StringIO()
    seen: list[Conversation] = []
    code = trying.run(args, out, err, played=seen.append)
    assert len(seen) == 1, err.getvalue()
    return code, out.getvalue(), err.getvalue(), seen[0]


def test_the_scene_plays_each_step_and_leaves_one_comment_edited_in_place(tmp_path: Path) -> None:
    code, out, err, conversation = play(tmp_path)
    assert (code, err) == (0, "")
    steps = [line for line in out.splitlines() if re.match(r"\d+\. ", line)]
    assert len(steps) == len(STEPS), out
    ids: set[str] = set()
    for line, pattern in zip(steps, STEPS, strict=True):
        found = re.match(pattern, line)
        assert found, f"{line!r} is not {pattern!r}"
        ids.update(found.groups())
    assert len(ids) == 1  # created once, then edited in place by every later step
    database = tmp_path / "try" / "perfbot.db"
    assert f"the database is {database}" in out
    assert re.search(r"the conversation page is http://127\.0\.0\.1:\d+/", out)
    # The stand-in's own state says the same.
    fake = conversation.fake
    comments = fake.comments_on(conversation.repo, 7)
    ours = [c for c in comments if c.app_id == fake.app_id]
    assert len(ours) == 1
    assert ours[0].edits >= 3
    assert "\n### Performance report: " in ours[0].body
    reactions = {c.user: [r.content for r in c.reactions] for c in comments if c.reactions}
    assert reactions == {"bob": ["rocket"], "mallory": ["confused"]}
    head = fake.repo(conversation.repo).pulls[7].head_sha
    checks = fake.check_runs_for(conversation.repo, head)
    assert [(c.name, c.status) for c in checks] == [("perfbot", "completed")]
    assert fake.reruns == [1002]
    assert fake.unknown_routes == []
    # main's measurement is in the database, and every job ended DONE.
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        statuses = {s for (s,) in conn.execute("SELECT status FROM jobs")}
        pushed = conn.execute("SELECT COUNT(*) FROM measurements WHERE side = 'push'").fetchone()
    assert statuses == {"done"}
    assert pushed[0] > 0


def zperf_report(folder: Path, base: float, head: float) -> Path:
    for side, tcp in (("base", base), ("head", head)):
        (folder / side / "board_a").mkdir(parents=True)
        values = {"tcp4_mbps": tcp, "udp4_mbps": 11.0}
        (folder / side / "board_a" / "zperf.log").write_text(zperf_log(values))
    return folder


def test_the_scene_measures_your_own_report_folders(tmp_path: Path) -> None:
    report = zperf_report(tmp_path / "mine", base=100.0, head=80.0)
    code, out, err, conversation = play(tmp_path, report)
    assert (code, err) == (0, "")
    assert "comment" in out
    assert "created" in out
    page = render_fragment(conversation)
    assert "board_a" in page  # the platform of these folders, not the demo's
    assert "qemu_x86" not in page
    assert "tcp4_mbps" in page
    assert "−20" in page


@pytest.mark.parametrize("missing", ["nowhere", "no-head"])
def test_a_missing_report_folder_is_one_sentence_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], missing: str
) -> None:
    folder = tmp_path / missing
    if missing == "no-head":
        (folder / "base").mkdir(parents=True)
    assert main(["try", "--exit", "--report", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"perfbot: {folder}")
    assert "base/ and head/" in lines[0]
    assert "Traceback" not in captured.err


def test_missing_fixtures_are_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(fixtures.VARIABLE, str(tmp_path / "none"))
    fixtures.templates.cache_clear()
    try:
        assert main(["try", "--exit"]) == 2
    finally:
        fixtures.templates.cache_clear()
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "PERFBOT_FIXTURES" in err
    assert str(tmp_path) in err


@pytest.mark.parametrize("content", ["nothing", "no report", "a symbolic link out"])
def test_a_report_folder_perfbot_cannot_read_is_one_sentence_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    """Checked before anything starts, as `perfbot compare` would refuse it: a scene of
    comments saying nothing was measured is not what --report was asked for."""
    folder = tmp_path / "mine"
    for side in ("base", "head"):
        (folder / side / "board_a").mkdir(parents=True)
    outside = tmp_path / "outside.log"
    outside.write_text(zperf_log({"tcp4_mbps": 5.0}))
    if content == "no report":
        (folder / "base" / "board_a" / "x.json").write_text("garbage{{")
        (folder / "head" / "board_a" / "x.json").write_text("garbage{{")
    elif content == "a symbolic link out":
        (folder / "base" / "board_a" / "zperf.log").write_text(zperf_log({"tcp4_mbps": 5.0}))
        (folder / "head" / "board_a" / "zperf.log").symlink_to(outside)
    assert main(["try", "--exit", "--dir", str(tmp_path / "db"), "--report", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing started
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    side = "base" if content != "a symbolic link out" else "head"
    assert lines[0].startswith(f"perfbot: {folder / side} holds no report file"), lines[0]
    assert "Traceback" not in captured.err


@pytest.mark.parametrize("where", ["start-up", "scene"])
def test_ctrl_c_before_the_scene_ends_is_one_line_and_exit_1(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    """Ctrl-C while the servers start or the scene plays: no traceback, the servers
    stopped, and where the database is kept said."""

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    if where == "start-up":
        monkeypatch.setattr(try_service, "create_app", interrupted)
    else:
        monkeypatch.setattr(try_scene.Scene, "play", interrupted)
    database = tmp_path / "db" / "perfbot.db"
    assert main(["try", "--exit", "--dir", str(database.parent)]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"perfbot try: stopped before the scene ended; the database is {database} (kept)"
    ]


@pytest.mark.slow
def test_chromium_draws_the_conversation_with_its_tables_and_charts(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "try.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "perfbot", "try", "--port", str(port), "--dir", str(tmp_path)],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while "the page stays up" not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"perfbot try did not finish: {log.read_text()}"
            time.sleep(0.1)
        dom = chromium(
            tmp_path,
            "--virtual-time-budget=20000",
            "--window-size=1000,3000",  # a column narrower than a chart
            "--dump-dom",
            f"http://127.0.0.1:{port}/#open",
        )
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C, to the process this test started
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    assert process.returncode == 0, log.read_text()
    assert re.search(r"<h3>Performance report: \d+ regression", dom)  # the comment's headline
    assert dom.count("<table>") >= 4  # its overview and per-platform tables
    charts = re.findall(r'<svg[^>]*aria-roledescription="xychart"', dom)
    assert len(charts) >= 2, "mermaid drew no chart"
    for right_edge, (x, size, text) in _last_x_labels(dom):
        # Mermaid measured the label at its real size: half of it (centred on its tick,
        # about half an em a character) fits between the tick and the chart's right edge.
        assert right_edge - x >= len(text) * size * 0.45 / 2, f"{text!r} is cut off"
    assert 'data-content="confused"' in dom
    assert 'data-content="rocket"' in dom
    assert "All checks have passed" in dom or "Some checks were not successful" in dom


def _last_x_labels(dom: str) -> list[tuple[float, tuple[float, float, str]]]:
    """Each xychart's width and its last x-axis label: (tick x, font size, text)."""
    found = []
    for chart in re.findall(r'<svg[^>]*aria-roledescription="xychart".*?</svg>', dom, re.S):
        width = float(re.search(r'viewBox="0 0 ([0-9.]+) ', chart)[1])  # type: ignore[index]
        axis = chart[chart.index('class="bottom-axis"') :]
        labels = re.findall(
            r'<text[^>]*font-size="([0-9.]+)"[^>]*translate\(([0-9.]+), [0-9.]+\)[^>]*>([^<]*)<',
            axis[axis.index('class="label"') : axis.index('class="ticks"')],
        )
        size, x, text = labels[-1]
        found.append((width, (float(x), float(size), text)))
    assert found, "no chart has an x axis"
    return found
