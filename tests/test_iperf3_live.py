"""The real iperf3 on loopback: two short runs of a TCP and a UDP case, compared end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.iperf3 import IPERF3, free_port, run_client

pytestmark = pytest.mark.slow


def test_two_real_runs_compare_end_to_end(iperf3_server: int, tmp_path: Path) -> None:
    for side in ("base", "head"):
        platform = tmp_path / side / "loopback"
        platform.mkdir(parents=True)
        for run in (1, 2):
            run_client(iperf3_server, [], platform / f"tcp_{run}.json")
            run_client(
                iperf3_server, ["-u", "-b", "10M", "-l", "1200"], platform / f"udp_10M_{run}.json"
            )
    report = tmp_path / "comparison.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "perfbot",
            "compare",
            str(tmp_path),
            "--json",
            str(report),
            "--exit-zero",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    document = json.loads(report.read_text())
    assert document["failures"] == []
    (platform,) = document["platforms"]
    assert platform["name"] == "loopback"
    metrics = {m["name"]: m for m in platform["metrics"]}
    assert set(metrics) == {
        "tcp.receiver_mbps",
        "tcp.retransmits",
        "udp_10M.receiver_mbps",
        "udp_10M.lost_percent",
        "udp_10M.lost_packets",
        "udp_10M.packets",
        "udp_10M.jitter_ms",
        *(
            f"{case}.cpu_{host}_percent"
            for case in ("tcp", "udp_10M")
            for host in ("host", "remote")
        ),
    }
    for name in ("tcp.receiver_mbps", "udp_10M.receiver_mbps"):
        for side in ("base", "head"):
            assert len(metrics[name][side]["samples"]) == 2  # two runs → two samples
            assert metrics[name][side]["value"] > 0
        assert metrics[name]["verdict"] in {"unchanged", "improved", "regressed"}
    # An offered rate of 10 Mbit/s on loopback arrives at about 10 Mbit/s.
    assert metrics["udp_10M.receiver_mbps"]["head"]["value"] == pytest.approx(10, rel=0.2)


def test_a_refused_connection_is_a_failed_case(tmp_path: Path) -> None:
    assert IPERF3, "iperf3 is not installed: run scripts/bootstrap"
    (tmp_path / "base").mkdir()
    (tmp_path / "head").mkdir()
    port = free_port()  # nothing listens here
    run_client(port, [], tmp_path / "head" / "tcp.json", refused=True)
    run_client(port, [], tmp_path / "base" / "tcp.json", refused=True)
    report = tmp_path / "comparison.json"
    subprocess.run(
        [sys.executable, "-m", "perfbot", "compare", str(tmp_path), "--json", str(report)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    document = json.loads(report.read_text())
    reasons = [f["reason"] for f in document["failures"]]
    assert len(reasons) == 2
    assert all("unable to connect" in reason for reason in reasons)
    assert all(p["metrics"] == [] for p in document["platforms"])
