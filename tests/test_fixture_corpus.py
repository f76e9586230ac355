"""Every real report in ../shared/fixtures is recognised and read, or named as a failed case."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from perfbot.engine.read import formats
from perfbot.engine.read.sides import ReportFile, read_side
from tests.paths import REPO, SHARED_FIXTURES

REPORT_DIRS = {
    "zephyr-zperf": "zperf",
    "zephyr-twister": "twister",
    "iperf3-third-party": "iperf3",
    "generated/iperf3": "iperf3",
    "generated/netperf": "netperf",
    "pktgen": "pktgen",
    "dperf": "dperf",
}
TEXT_OUTPUT = {"tcp_text.txt"}
NOT_REPORTS = [
    "octokit-webhooks",
    "github-rest-pygithub-replay",
    "generated/github-webhooks-derived",
]


def files_in(directories: list[str]) -> list[Path]:
    found = [
        p for d in directories for p in sorted((SHARED_FIXTURES / d).rglob("*")) if p.is_file()
    ]
    assert found, f"no fixture under {directories}: is ../shared beside the checkout?"
    return found


REPORTS = [(path, fmt) for d, fmt in REPORT_DIRS.items() for path in files_in([d])]


@pytest.mark.parametrize(
    ("path", "expected"), REPORTS, ids=[str(p.relative_to(SHARED_FIXTURES)) for p, _ in REPORTS]
)
def test_every_report_fixture_is_read(path: Path, expected: str) -> None:
    text = path.read_text(encoding="utf-8")
    detected = formats.detect(text, path.name)
    assert detected is not None
    # iperf3 without -J is read by its own format (it was refused as "use -J").
    assert detected.name == ("iperf3-text" if path.name in TEXT_OUTPUT else expected)
    side = read_side([ReportFile(f"board/{path.name}", path.read_bytes())])
    assert side.unreadable == [], side.unreadable
    assert side.series or side.failures
    for failure in side.failures:
        assert failure.case
        assert failure.reason
        assert "\n" not in failure.reason
        assert len(failure.reason) <= 200
    for series in side.series.values():
        assert series.samples
        assert all(math.isfinite(value) for value in series.samples)


@pytest.mark.parametrize(
    "path", files_in(NOT_REPORTS), ids=lambda p: str(p.relative_to(SHARED_FIXTURES))
)
def test_webhook_payloads_are_not_mistaken_for_reports(path: Path) -> None:
    side = read_side([ReportFile(path.name, path.read_bytes())])
    assert side.files_read == 0
    ((_, reason),) = side.unreadable
    assert "not a supported report format" in reason


# Our own generated runs (tests/data/iperf3/commands.log): read, or named as a failed case.
OWN_RUNS = sorted(p for p in (REPO / "tests" / "data" / "iperf3").iterdir() if p.suffix != ".log")


@pytest.mark.parametrize("path", OWN_RUNS, ids=lambda p: p.name)
def test_every_generated_iperf3_run_is_read(path: Path) -> None:
    expected = "iperf3" if path.suffix == ".json" else "iperf3-text"
    detected = formats.detect(path.read_text(encoding="utf-8"), path.name)
    assert detected is not None
    assert detected.name == expected
    side = read_side([ReportFile(f"loopback/{path.name}", path.read_bytes())])
    assert side.unreadable == []
    assert side.files_read == 1
    if path.name.startswith("error_"):
        assert side.failures
        assert not side.series
    else:
        assert side.failures == []
        assert side.series
