"""What `perfbot compare` says about its outputs (issue 20, item 6): the report still
reaches a terminal when files are asked for, every `--plot` file is named, and a single
run lists its platforms in a comparison's order."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from perfbot.cli import main
from tests.paths import REPO
from tests.test_cli import ZPERF_BASE, zperf_head
from tests.test_cli_platforms import SCENARIO, twister_json
from tests.test_cli_terminal import Terminal, run


def read_all(descriptor: int) -> bytes:
    """Everything written to a pseudo-terminal until its last writer closed it."""
    chunks = []
    while True:
        try:
            chunk = os.read(descriptor, 65536)
        except OSError:  # Linux answers EIO once the other end is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def test_json_on_a_real_terminal_still_prints_the_report(tmp_path: Path) -> None:
    # The case exactly: a person at a terminal asks for --json and a regression
    # exits 1. Before, standard output got nothing and the exit looked like a crash.
    out_json = tmp_path / "out.json"
    argv = ["compare", str(ZPERF_BASE), str(zperf_head(tmp_path)), "--json", str(out_json)]
    leader, follower = pty.openpty()
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "perfbot", *argv],
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=subprocess.PIPE,
            env={**os.environ, "NO_COLOR": "1"},
            cwd=REPO,
        )
        os.close(follower)
        follower = -1
        shown = read_all(leader).decode("utf-8").replace("\r\n", "\n")
        code = child.wait(timeout=60)
        assert child.stderr is not None
        child.stderr.close()
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)
    assert code == 1  # exit codes as documented: 1 is a regression beyond tolerance
    assert shown.startswith("Performance report: 1 regression, 1 improvement\n")
    assert "regressed, beyond 5 % tolerance" in shown  # why it exits 1
    assert "<!-- perfbot:report -->" not in shown  # the terminal's table, not markdown
    assert json.loads(out_json.read_text())["regressed_beyond_tolerance"] == 1


@pytest.mark.parametrize("option", ["--json", "--markdown"])
def test_a_file_option_on_a_terminal_keeps_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    target = tmp_path / "report.out"
    code, out = run([str(ZPERF_BASE), str(zperf_head(tmp_path)), option, str(target)], Terminal())
    assert code == 1
    assert out.startswith("Performance report: 1 regression")
    assert target.stat().st_size > 0


def test_format_still_decides_what_the_terminal_gets_beside_a_file(tmp_path: Path) -> None:
    argv = [str(ZPERF_BASE), str(zperf_head(tmp_path)), "--json", str(tmp_path / "r.json")]
    _, out = run([*argv, "--format", "markdown"], Terminal())
    assert out.startswith("<!-- perfbot:report -->")


def test_a_file_option_off_a_terminal_still_replaces_standard_output(tmp_path: Path) -> None:
    # A script that redirects standard output gets what it always got: nothing there.
    argv = [str(ZPERF_BASE), str(zperf_head(tmp_path)), "--json", str(tmp_path / "r.json")]
    code, out = run(argv, io.StringIO())
    assert code == 1
    assert out == ""


# --- --plot names what it writes ----------------------------------------------------------


def three_platforms(tmp_path: Path) -> tuple[Path, Path]:
    runs = {"qemu_x86/atom": 1.0, "qemu_x86_64/atom": 1.0, "native_sim/native": 1.0}
    base = twister_json(tmp_path / "base" / "twister.json", runs)
    head = twister_json(tmp_path / "head" / "twister.json", {**runs, "qemu_x86/atom": 0.9})
    return base, head


def written(err: str) -> list[str]:
    return re.findall(r"^perfbot: --plot: wrote (.+)$", err, flags=re.MULTILINE)


def test_plot_names_each_file_it_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, head = three_platforms(tmp_path)
    charts = tmp_path / "charts"
    charts.mkdir()
    target = charts / "x.svg"
    assert main(["compare", str(base), str(head), "--plot", str(target), "--exit-zero"]) == 0
    named = written(capsys.readouterr().err)
    assert sorted(named) == sorted(str(path) for path in charts.iterdir())
    assert sorted(Path(name).name for name in named) == [
        "x-native_sim_native.svg",
        "x-qemu_x86_64_atom.svg",
        "x-qemu_x86_atom.svg",
    ]


def test_plot_of_one_platform_names_the_file_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "one.svg"
    assert main(["compare", str(ZPERF_BASE), "--plot", str(target)]) == 0
    assert written(capsys.readouterr().err) == [str(target)]
    assert target.is_file()


# --- a single run in a comparison's order ---------------------------------------------------


def failing_platforms_run(tmp_path: Path) -> Path:
    """A run on three platforms where alphabetical order is not a comparison's order:
    zzz/x has two failed suites, mmm/x one, aaa/x none (the worst platform comes first)."""
    path = twister_json(tmp_path / "run" / "twister.json", {"aaa/x": 1, "mmm/x": 1, "zzz/x": 1})
    document = json.loads(path.read_text())
    # Read mmm's failure first: a listing in read order would put it before zzz's.
    for platform, case in (("mmm/x", "m1"), ("zzz/x", "z1"), ("zzz/x", "z2")):
        document["testsuites"].append(
            {
                "name": f"{SCENARIO}.{case}",
                "platform": platform,
                "status": "failed",
                "reason": f"{case} broke",
            }
        )
    path.write_text(json.dumps(document))
    return path


def comparison_order(run_file: Path, tmp_path: Path) -> list[str]:
    """The platforms as the run's comparison with itself lists them (its --json)."""
    out = tmp_path / "self.json"
    main(["compare", str(run_file), str(run_file), "--json", str(out)])
    return [platform["name"] for platform in json.loads(out.read_text())["platforms"]]


def test_a_single_run_lists_platforms_and_failures_as_a_comparison_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_file = failing_platforms_run(tmp_path)
    expected = comparison_order(run_file, tmp_path)
    assert expected == ["zzz/x", "mmm/x", "aaa/x"]  # not alphabetical: the test can fail
    capsys.readouterr()

    assert main(["compare", str(run_file), "--format", "text"]) == 0
    text = capsys.readouterr().out
    headers = [line for line in text.splitlines() if line in expected]
    assert headers == expected
    failed = re.findall(r"✗ (\S+): \S+: twister: failed: (\S+) broke", text)
    assert failed == [("zzz/x", "z1"), ("zzz/x", "z2"), ("mmm/x", "m1")]

    assert main(["compare", str(run_file), "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert re.findall(r"^#### <code>(.+)</code>$", markdown, flags=re.MULTILINE) == expected
    failed_md = re.findall(r"^- <code>(\S+)</code> <code>\S+</code>", markdown, flags=re.M)
    assert failed_md == ["zzz/x", "zzz/x", "mmm/x"]
