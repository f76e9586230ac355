"""``perfbot compare`` on a terminal: an aligned table, colour where it belongs, and no
name that can drive the terminal (issue 14, item 8, terminal output)."""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest

from perfbot.cli import _parser
from perfbot.engine.judge.compare import Comparison, MetricResult, compare
from perfbot.engine.judge.noise import Noise, Source
from perfbot.engine.read.sides import SideReport
from perfbot.engine.show.terminal import change_text, comparison_table, wants_colour
from perfbot.model import Better, Measurement, Scale
from tests.paths import shared
from tests.test_cli_platforms import twister_json

ZPERF_BASE = shared("zephyr-zperf/README-loopback-icount_expected_output.txt")
SGR = re.compile(r"\x1b\[[0-9;]*m")
# Escape sequences a metric or platform name could carry: clear screen, move the
# cursor, set the window title (OSC … BEL), the 8-bit CSI, a backspace over text.
ESCAPES = "\x1b[2J\x1b[H\x1b]0;pwned\x07\x9b31m\x08\x08"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(argv: list[str], out: io.StringIO) -> tuple[int, str]:
    args = _parser().parse_args(["compare", *argv])
    err = io.StringIO()
    code: int = args.run(args, out, err)
    return code, out.getvalue()


def zperf_head(tmp_path: Path) -> Path:
    head = tmp_path / "head.log"
    head.write_text(ZPERF_BASE.read_text().replace("tcp4_mbps=5.970", "tcp4_mbps=5.5975"))
    return head


def test_a_terminal_gets_an_aligned_table_not_markdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    code, out = run([str(ZPERF_BASE), str(zperf_head(tmp_path))], Terminal())
    assert code == 1
    assert "<code>" not in out
    assert "&#" not in out
    assert "|" not in out
    assert out.startswith("Performance report: 1 regression")
    rows = [line for line in out.splitlines() if "_mbps" in line]
    assert len(rows) == 8
    # Right-aligned numbers: every row's head column ends at the same place.
    tcp4 = next(row for row in rows if "tcp4_mbps" in row)
    assert "5.97" in tcp4
    assert "5.5975" in tcp4
    assert "−6.24 %  regressed, beyond 5 % tolerance" in tcp4
    header = next(line for line in out.splitlines() if line.strip().startswith("metric"))
    end_of_head = header.index("head") + len("head")
    assert all(row[end_of_head - 1] != " " for row in rows)
    assert all(row[end_of_head] == " " for row in rows)


def test_format_markdown_forces_markdown_on_a_terminal(tmp_path: Path) -> None:
    _, out = run([str(ZPERF_BASE), str(zperf_head(tmp_path)), "--format", "markdown"], Terminal())
    assert out.startswith("<!-- perfbot:report -->")


def test_not_a_terminal_gets_markdown_and_format_text_forces_the_table(tmp_path: Path) -> None:
    argv = [str(ZPERF_BASE), str(zperf_head(tmp_path))]
    _, out = run(argv, io.StringIO())
    assert out.startswith("<!-- perfbot:report -->")
    _, out = run([*argv, "--format", "text"], io.StringIO())
    assert out.startswith("Performance report: ")
    assert "\x1b" not in out  # not a terminal: no colour even when asked for text


@pytest.mark.parametrize(
    ("environ", "tty", "expected"),
    [
        ({}, True, True),
        ({"NO_COLOR": "1"}, True, False),
        ({"NO_COLOR": ""}, True, True),  # no-color.org: only a non-empty value counts
        ({"TERM": "dumb"}, True, False),
        ({}, False, False),
    ],
)
def test_colour_only_on_a_terminal_and_never_with_no_color(
    environ: dict[str, str], tty: bool, expected: bool
) -> None:
    assert wants_colour(Terminal() if tty else io.StringIO(), environ) is expected


def test_colour_marks_the_regression(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    _, out = run([str(ZPERF_BASE), str(zperf_head(tmp_path))], Terminal())
    tcp4 = next(line for line in out.splitlines() if "tcp4_mbps" in line)
    assert tcp4.startswith("\x1b[1;31m")
    assert tcp4.endswith("\x1b[0m")


@pytest.mark.parametrize("colour", [True, False])
def test_a_hostile_name_cannot_drive_the_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, colour: bool
) -> None:
    if colour:
        monkeypatch.delenv("NO_COLOR", raising=False)
        monkeypatch.setenv("TERM", "xterm")
    else:
        monkeypatch.setenv("NO_COLOR", "1")
    platform, metric = f"qemu_x86/{ESCAPES}atom", f"tcp{ESCAPES}4_mbps"
    runs = []
    for side, value in (("base", "100.0"), ("head", "50.0")):
        path = twister_json(tmp_path / side / "twister.json", {platform: 1})
        document = json.loads(path.read_text())
        document["testsuites"][0]["recording"] = [{metric: value}]
        path.write_text(json.dumps(document))
        runs.append(str(path))
    _, out = run(runs, Terminal())
    assert "tcp[2J[H]0;pwned31m4_mbps" in out  # shown, with every control character gone
    plain = SGR.sub("", out) if colour else out
    assert bool(SGR.search(out)) is colour
    for control in ("\x1b", "\x9b", "\x07", "\x08"):
        assert control not in plain


def test_a_single_run_on_a_terminal_is_a_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    code, out = run([str(ZPERF_BASE)], Terminal())
    assert code == 0
    line = next(line for line in out.splitlines() if "tcp4_mbps" in line)
    assert line.split() == ["tcp4_mbps", "(Mbps)", "5.97"]


@dataclass(frozen=True)
class _Moved:
    """The two fields change_text reads, whatever else a MetricResult holds."""

    change_pct: float | None
    scale: Scale = Scale.RATIO


@pytest.mark.parametrize(
    ("moved", "shown"),
    [
        (_Moved(-6.2395), "−6.24 %"),
        (_Moved(0.001), "0.00 %"),
        (_Moved(5.7, Scale.POINTS), "+5.70 pp"),  # UDP loss 0 → 5.7 %: points, not a ratio
        (_Moved(12.0, Scale.COUNT), "+12"),  # retransmits: counts
        (_Moved(None), "from 0"),
    ],
)
def test_a_change_is_shown_in_its_scale(moved: _Moved, shown: str) -> None:
    assert change_text(cast(MetricResult, moved)) == shown


def stochastic_comparison(evidence: str = "21 measurements of main@abc1234") -> Comparison:
    base, head = SideReport(), SideReport()
    for report, samples, lost, single in (
        (base, [100.0, 100.02, 99.99], [0.0, 0.0, 0.0], 1000.0),
        (head, [95.0, 95.01, 94.99], [5.7, 5.5, 6.0], 800.0),
    ):
        for value in samples:
            report.add(
                Measurement("lab", "udp.receiver_mbps", value, "Mbps", Better.HIGHER),
                deterministic=False,
            )
        for value in lost:
            loss = Measurement(
                "lab", "udp.lost_percent", value, "%", Better.LOWER, scale=Scale.POINTS
            )
            report.add(loss, deterministic=False)
        report.add(Measurement("lab", "single", single, "Mbps", Better.HIGHER), deterministic=False)
        report.add(
            Measurement("lab", "learned", single, "Mbps", Better.HIGHER), deterministic=False
        )
    known = {("lab", "learned"): Noise(0.003, 20, Source.LEARNED, evidence)}
    return compare(base, head, noise=known)


def columns(out: str) -> dict[str, list[str]]:
    """Each row's cells (the aligned table's columns are two or more spaces apart)."""
    rows = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()]
    return {row[0]: row for row in rows if row[0]}


def test_the_terminal_shows_the_noise_band_and_its_evidence() -> None:
    out = comparison_table(stochastic_comparison())
    rows = columns(out)
    assert rows["metric"][-1] == "noise"
    assert rows["udp.receiver_mbps (Mbps)"][3:] == [
        "−5.00 %",
        "regressed",
        "±0.092 %, 3 runs per side: clear (54× the band)",
    ]
    assert rows["udp.lost_percent (%)"][3:] == [
        "+5.70 pp",
        "regressed, beyond 1 pp tolerance",
        "±1.3 pp, 3 runs per side: clear (4.6× the band)",
    ]
    assert rows["learned (Mbps)"][-1] == (
        "±1.6 %, 21 measurements of main@abc1234: clear (12× the band)"
    )
    # perfbot compare has no re-run command to offer.
    assert rows["single (Mbps)"][3:] == [
        "−20.00 %",
        "uncertain: single run, noise unknown",
        "repeat each case ×3",
    ]
    assert "/perfbot rerun" not in out
    assert out.startswith(
        "Performance report: 3 regressions (2 beyond tolerance), 1 uncertain (single run)"
    )


def test_hostile_evidence_cannot_drive_the_terminal() -> None:
    out = comparison_table(stochastic_comparison(f"8 measurements of {ESCAPES}main"), colour=True)
    (learned,) = [line for line in SGR.sub("", out).splitlines() if line.startswith("  learned")]
    assert learned.endswith("8 measurements of [2J[H]0;pwned31mmain: clear (12× the band)")
    for control in ("\x9b", "\x07", "\x08"):
        assert control not in out
    assert "\x1b[2J" not in out
