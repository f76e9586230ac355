"""GitHub Actions outputs: --annotate, --job-summary, perfbot comment's summary, and the
advisory exit (issue 14, items 3 and 5)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from perfbot.cli import main
from perfbot.cli.workflow import annotation_lines, escape_data, escape_property
from perfbot.engine.judge.compare import compare
from perfbot.engine.read.formats._common import guess_better
from perfbot.model import Better, Scale
from perfbot.sandbox.fakegithub import serve
from tests.builders import side as side_of
from tests.harness import World
from tests.paths import shared
from tests.test_actions_comment import HEAD_A, run_cli
from tests.test_cli_platforms import twister_json

ZPERF_BASE = shared("zephyr-zperf/README-loopback-icount_expected_output.txt")
COMMAND = re.compile(r"^::(?P<kind>[a-z-]+)(?: (?P<props>[^:]*))?::(?P<data>.*)$")
# Names a pull request could give a platform or a metric (twister carries both as
# written): line breaks to start a command of their own, the escapes themselves, a
# property's separators, terminal escapes, and the markdown tricks of tests/test_hostile.py.
HOSTILE = (
    "x\n::error::injected",
    "x\r\n::add-mask::secret",
    "x%0A::error::encoded",
    "x%250A::stop-commands::tok",
    "a,title=owned:b::c",
    "x\x1b[2J\x1b]0;title\x07",
    "@mallory ping",
    "</details><details open><summary>ok",
)


def zperf_head(tmp_path: Path, tcp4: str = "5.5975") -> Path:
    head = tmp_path / "head.log"
    head.write_text(ZPERF_BASE.read_text().replace("tcp4_mbps=5.970", f"tcp4_mbps={tcp4}"))
    return head


def unescape_data(value: str) -> str:
    """What the runner makes of an escaped message (actions/runner ActionCommand)."""
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(value: str) -> str:
    return unescape_data(value.replace("%3A", ":").replace("%2C", ","))


def commands(out: str) -> list[tuple[str, dict[str, str], str]]:
    """The workflow commands in ``out`` as the runner reads them, line by line."""
    found = []
    for line in out.splitlines():
        match = COMMAND.match(line)
        if match is None:
            continue
        props = {}
        for pair in (match["props"] or "").split(","):
            key, _, value = pair.partition("=")
            if key:
                props[key] = unescape_property(value)
        found.append((match["kind"], props, unescape_data(match["data"])))
    return found


@pytest.mark.parametrize(
    ("raw", "data", "prop"),
    [
        ("100%", "100%25", "100%25"),
        ("a\r\nb", "a%0D%0Ab", "a%0D%0Ab"),
        ("%0A", "%250A", "%250A"),
        ("a:b,c", "a:b,c", "a%3Ab%2Cc"),
    ],
)
def test_escaping_follows_the_workflow_command_rules(raw: str, data: str, prop: str) -> None:
    assert escape_data(raw) == data
    assert escape_property(raw) == prop
    assert unescape_data(escape_data(raw)) == raw
    assert unescape_property(escape_property(raw)) == raw


def test_annotate_a_notice_per_moved_platform_and_a_warning_per_regression(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", str(ZPERF_BASE), str(zperf_head(tmp_path)), "--annotate", "--exit-zero"]
    assert main(argv) == 0
    found = commands(capsys.readouterr().out)
    assert [kind for kind, _, _ in found] == ["notice", "warning"]
    (_, notice_props, notice), (_, warning_props, warning) = found
    assert notice_props == {"title": "perfbot (default)"}
    assert notice == "default: tcp4_mbps −6.24 %"
    assert warning_props == {"title": "perfbot regression (default)"}
    assert warning == "default: tcp4_mbps regressed −6.24 % (beyond 5 % tolerance)"


def test_annotate_says_nothing_when_nothing_moved(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(ZPERF_BASE), str(ZPERF_BASE), "--annotate"]) == 0
    out = capsys.readouterr().out
    assert "no change beyond the noise floor" in out  # the comparison ran
    assert commands(out) == []


@pytest.mark.parametrize("name", HOSTILE)
def test_no_name_can_inject_a_workflow_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    platform = f"qemu_x86/{name}"
    metric = f"{name}_mbps"
    runs = []
    # A regression either way: a name holding "error" reads as lower-is-better.
    worse = "50.0" if guess_better(metric) is Better.HIGHER else "200.0"
    for side, value in (("base", "100.0"), ("head", worse)):
        path = twister_json(tmp_path / side / "twister.json", {platform: 1})
        document = json.loads(path.read_text())
        document["testsuites"][0]["recording"] = [{metric: value}]
        path.write_text(json.dumps(document))
        runs.append(str(path))
    assert main(["compare", *runs, "--annotate", "--exit-zero", "--format", "text"]) == 0
    out = capsys.readouterr().out
    found = commands(out)
    # Exactly perfbot's two commands, and each is whole: one line, its title one property.
    assert [kind for kind, _, _ in found] == ["notice", "warning"]
    for _, props, data in found:
        assert set(props) == {"title"}
        for part in (data, props["title"]):
            assert "\n" not in part
            assert "\r" not in part
    # No other line of the output is a workflow command, nor carries a terminal escape.
    starts = [line for line in out.splitlines() if line.startswith("::")]
    assert len(starts) == 2
    assert "\x1b" not in out.replace("\x1b[0m", "")
    assert "\x07" not in out


def test_job_summary_appends_the_markdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "step_summary.md"
    summary.write_text("## earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    argv = ["compare", str(ZPERF_BASE), str(zperf_head(tmp_path)), "--job-summary"]
    assert main([*argv, "--exit-zero"]) == 0
    written = summary.read_text()
    assert written.startswith("## earlier step\n<!-- perfbot:report -->\n")
    assert "−6.24 %" in written
    capsys.readouterr()


def test_job_summary_outside_actions_is_said_and_changes_nothing_else(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    argv = ["compare", str(ZPERF_BASE), str(zperf_head(tmp_path)), "--job-summary"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert "--job-summary: $GITHUB_STEP_SUMMARY is not set" in captured.err
    assert "−6.24 %" in captured.out


def test_perfbot_comment_writes_its_report_to_the_job_summary(tmp_path: Path) -> None:
    world = World.create()
    pull = world.pull(7, HEAD_A)
    run = world.measured_run(pull, 3001)
    summary = tmp_path / "summary.md"
    with serve(world.fake) as fake:
        done = run_cli(
            ["--run-id", str(run.id)],
            {
                "GITHUB_TOKEN": fake.issue_actions_token(world.repo),
                "GITHUB_API_URL": fake.api_url,
                "GITHUB_REPOSITORY": "acme/widget",
                "GITHUB_STEP_SUMMARY": str(summary),
            },
        )
    assert done.returncode == 0, done.stderr
    (comment,) = world.fake.comments_on(world.repo, 7)
    written = summary.read_text()
    assert written.startswith("<!-- perfbot:report -->")
    assert "tcp4" in written
    assert written.strip() in comment.body


# --- advisory exits (item 5) -----------------------------------------------------------------


@pytest.mark.parametrize("broken", ["missing", "unreadable"])
def test_exit_zero_reports_a_missing_or_unreadable_baseline_as_not_available(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], broken: str
) -> None:
    baseline = tmp_path / "baseline.json"
    if broken == "unreadable":
        # Broken as a whole (a broken item alone would be a failed case of the file).
        baseline.write_text('{"perfbot": 2, "kind": "baseline", "metrics": {"name": 1}}')
    markdown = tmp_path / "report.md"
    argv = ["compare", "--baseline", str(baseline), str(ZPERF_BASE), "--markdown", str(markdown)]
    assert main(argv) == 2
    assert not markdown.exists()
    assert "--exit-zero reports it instead" in capsys.readouterr().err

    assert main([*argv, "--exit-zero", "--annotate"]) == 0
    captured = capsys.readouterr()
    written = markdown.read_text()
    assert "not available" in written
    reason = "does not exist" if broken == "missing" else "could be read"
    assert reason in written
    (annotation, *_) = commands(captured.out)
    assert annotation[0] == "notice"
    assert annotation[2].startswith("comparison not available: ")


def test_a_loss_warning_names_its_tolerance_in_points() -> None:
    base = side_of(
        {"udp.lost_percent": [0.0, 0.0, 0.0]}, scale=Scale.POINTS, unit="%", better=Better.LOWER
    )
    head = side_of(
        {"udp.lost_percent": [5.7, 5.5, 6.0]}, scale=Scale.POINTS, unit="%", better=Better.LOWER
    )
    (_, warning) = annotation_lines(compare(base, head))
    assert "beyond 1 pp tolerance" in warning
