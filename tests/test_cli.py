"""``perfbot compare`` and ``perfbot formats`` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from perfbot.cli import main
from tests.paths import REPO, shared

ZPERF_BASE = shared("zephyr-zperf/README-loopback-icount_expected_output.txt")


def zperf_head(tmp_path: Path) -> Path:
    """The base log with tcp4_mbps 6.24 % lower and udp4_frag_mbps 3.57 % higher."""
    text = ZPERF_BASE.read_text()
    text = text.replace("tcp4_mbps=5.970", "tcp4_mbps=5.5975")
    text = text.replace("udp4_frag_mbps=20.249", "udp4_frag_mbps=20.9719")
    head = tmp_path / "head.log"
    head.write_text(text)
    return head


def test_zperf_regression_prints_the_comment_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(ZPERF_BASE), str(zperf_head(tmp_path))]) == 1
    out = capsys.readouterr().out
    assert out.startswith(
        "<!-- perfbot:report -->\n### Performance report: 1 regression, 1 improvement\n"
    )
    assert "🔴 **−6.24 %** (beyond 5 % tolerance)" in out
    assert "🟢 +3.57 %" in out
    assert "<details><summary>6 unchanged metrics</summary>" in out


def test_exit_zero_and_tolerance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = str(zperf_head(tmp_path))
    assert main(["compare", str(ZPERF_BASE), head, "--exit-zero"]) == 0
    assert main(["compare", str(ZPERF_BASE), head, "--tolerance", "7"]) == 0
    assert main(["compare", str(ZPERF_BASE), head, "--threshold", "10"]) == 0
    capsys.readouterr()


def test_json_document_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json, out_md = tmp_path / "r.json", tmp_path / "r.md"
    code = main(
        [
            "compare",
            str(ZPERF_BASE),
            str(zperf_head(tmp_path)),
            "--json",
            str(out_json),
            "--markdown",
            str(out_md),
        ]
    )
    assert code == 1
    assert capsys.readouterr().out == ""  # the files replace stdout
    assert out_md.read_text().startswith("<!-- perfbot:report -->")
    document = json.loads(out_json.read_text())
    assert set(document) >= {"platforms", "failures", "summary"}
    (platform,) = document["platforms"]
    assert platform["name"] == "default"
    metrics = {m["name"]: m for m in platform["metrics"]}
    tcp4 = metrics["tcp4_mbps"]
    assert tcp4["unit"] == "Mbps"
    assert tcp4["better"] == "higher"
    assert tcp4["base"] == {"value": 5.97, "samples": [5.97]}
    assert tcp4["head"]["value"] == 5.5975
    assert tcp4["change_pct"] == pytest.approx(-6.2395, abs=1e-3)
    assert tcp4["verdict"] == "regressed"
    assert document["summary"]["regressed"] == 1
    assert document["summary"]["improved"] == 1
    assert document["summary"]["unchanged"] == 6
    assert document["failures"] == []


def test_directory_layout_with_platforms_and_failures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compare", str(REPO / "examples" / "demo")]) == 1
    out = capsys.readouterr().out
    assert "#### <code>qemu&#95;x86</code>" in out
    assert "<code>fpga-vu13p</code>: 2 unchanged, 1 failed" in out


def test_unparseable_files_are_named_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = tmp_path / "base", tmp_path / "head"
    base.mkdir()
    head.mkdir()
    (base / "z.log").write_text(ZPERF_BASE.read_text())
    (head / "z.log").write_text(ZPERF_BASE.read_text())
    (head / "notes.txt").write_text("just some notes\n")
    assert main(["compare", str(base), str(head)]) == 0
    captured = capsys.readouterr()
    assert "perfbot: head: notes.txt: not a supported report format" in captured.err
    assert "notes.txt" in captured.out  # listed in the comment too


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["compare", "/nonexistent/a", "/nonexistent/b"], "does not exist", id="missing"
        ),
        pytest.param(["compare", "."], "must hold a base/ and a head/", id="no-layout"),
        pytest.param(["compare", "a", "b", "c"], "give BASE and HEAD", id="three-paths"),
    ],
)
def test_usage_errors_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_nothing_parseable_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.txt").write_text("nothing here")
    (tmp_path / "b.bin").write_bytes(b"\x00\x01")
    assert main(["compare", str(tmp_path / "a.txt"), str(tmp_path / "b.bin")]) == 2
    err = capsys.readouterr().err
    assert "a.txt: not a supported report format" in err
    assert "b.bin: binary file" in err
    assert "no report file could be parsed" in err


def test_bad_threshold_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", "a", "b", "--threshold", "lots"])
    assert exit_info.value.code == 2
    assert "'lots' is not a number" in capsys.readouterr().err


def test_formats_lists_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["formats"]) == 0
    out = capsys.readouterr().out
    for name in (
        "zperf",
        "twister",
        "iperf3",
        "netperf",
        "pktgen",
        "dperf",
        "perfbot-json",
        "github-action-benchmark",
    ):
        assert name in out


def test_console_script_runs_as_a_process(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "perfbot", "compare", str(ZPERF_BASE), str(zperf_head(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "1 regression, 1 improvement" in result.stdout
