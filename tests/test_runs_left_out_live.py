"""Real iperf3 on loopback: three runs of one case, one with -P 2 and one with -O 1, say once
which files were left out and why, in the comment and on the terminal."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.iperf3 import run_client

pytestmark = pytest.mark.slow


def test_runs_with_other_settings_are_named_once_with_their_differences(
    iperf3_server: int, tmp_path: Path
) -> None:
    base, head = tmp_path / "base" / "loopback", tmp_path / "head" / "loopback"
    base.mkdir(parents=True)
    head.mkdir(parents=True)
    run_client(iperf3_server, [], base / "tcp_rx_1.json")
    run_client(iperf3_server, ["-P", "2"], base / "tcp_rx_2.json")
    run_client(iperf3_server, ["-O", "1"], base / "tcp_rx_3.json")
    run_client(iperf3_server, [], head / "tcp_rx_1.json")
    terminal = compare(tmp_path, "--format", "text")
    comment = compare(tmp_path, "--format", "markdown")
    expected = (
        "tcp_rx_2.json ran with streams 2, tcp_rx_3.json with omit 1; "
        "kept tcp_rx_1.json (streams 1, omit 0)"
    )
    said = [line for line in terminal.splitlines() if "tcp_rx_2.json" in line]
    assert said == [f"  ! base loopback: tcp_rx: {expected}"]
    lines = [line for line in comment.splitlines() if "tcp_rx_2.json" in line]
    (line,) = lines  # one line for the case and side, not one per metric and file
    shown = html.unescape(re.sub(r"</?code>", "", line))
    assert shown == f"⚠️ tcp_rx (base): {expected}  "


def compare(root: Path, *options: str) -> str:
    """What ``perfbot compare ROOT OPTIONS --exit-zero`` prints."""
    result = subprocess.run(
        [sys.executable, "-m", "perfbot", "compare", str(root), *options, "--exit-zero"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout
