"""``perfbot compare`` baselines and single runs (issue 14, item 1).

Inputs are real ``iperf3 -J`` runs on loopback (tests/data/cli/, generated with iperf
3.12: ``iperf3 -c 127.0.0.1 -J -t 1 -b 800M`` and ``-u -b 10M -l 1400``, three each).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from perfbot.cli import main
from perfbot.engine.read.sides import ReportFile, read_side
from tests.paths import REPO, shared

RUN = REPO / "tests" / "data" / "cli"
RECEIVER = "tcp_rx.receiver_mbps"


def lab_run(tmp_path: Path, name: str, platform: str = "lab", factor: float = 1.0) -> Path:
    """The real runs under ``name/platform/``, TCP goodput scaled by ``factor``."""
    folder = tmp_path / name / platform
    folder.mkdir(parents=True)
    for source in sorted(RUN.glob("*.json")):
        document = json.loads(source.read_text())
        if source.name.startswith("tcp_rx"):
            document["end"]["sum_received"]["bits_per_second"] *= factor
        (folder / source.name).write_text(json.dumps(document))
    return tmp_path / name


def test_a_single_run_prints_its_values_and_exits_0(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compare", str(RUN), "--format", "text"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if RECEIVER in line)
    assert "n=3" in line
    assert "Mbps" in line


def test_a_single_run_as_markdown_names_every_metric(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(RUN), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### Measurements: ")
    assert "<code>tcp_rx.receiver_mbps</code> (Mbps)" in out


def test_save_writes_every_sample_with_its_unit_direction_scale_and_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "baseline.json"
    assert main(["compare", str(RUN), "--save", str(saved)]) == 0
    capsys.readouterr()
    document = json.loads(saved.read_text())
    assert document["perfbot"] == 2
    assert document["kind"] == "baseline"
    assert document["saved_from"] == "run"
    metrics = {m["name"]: m for m in document["metrics"]}
    receiver = metrics[RECEIVER]
    assert len(receiver["values"]) == 3
    assert receiver["unit"] == "Mbps"
    assert receiver["better"] == "higher"
    assert receiver["scale"] in ("ratio", "points", "count")
    assert isinstance(receiver["settings"], dict)
    assert metrics["udp_10M.jitter_ms"]["better"] == "lower"
    # Read back, the file is the run: same series, same samples.
    again = read_side([ReportFile("baseline.json", saved.read_bytes())])
    original = read_side([ReportFile(p.name, p.read_bytes()) for p in sorted(RUN.glob("*.json"))])
    assert {k[1]: v.samples for k, v in again.series.items()} == {
        k[1]: v.samples for k, v in original.series.items()
    }


def test_a_saved_baseline_is_a_base_and_baseline_is_its_alias(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = lab_run(tmp_path, "base"), lab_run(tmp_path, "head", factor=0.8)
    saved = tmp_path / "baseline.json"
    assert main(["compare", str(base), str(base), "--save", str(saved)]) == 0
    assert json.loads(saved.read_text())["saved_from"] == "head"
    capsys.readouterr()
    for argv in (
        ["compare", str(saved), str(head), "--format", "text"],
        ["compare", "--baseline", str(saved), str(head), "--format", "text"],
    ):
        assert main(argv) == 1
        out = capsys.readouterr().out
        line = next(line for line in out.splitlines() if RECEIVER in line)
        assert "−20.00 %" in line
        assert "beyond 5 % tolerance" in line
    # The same run against its own baseline: nothing moved.
    assert main(["compare", "--baseline", str(saved), str(base), "--format", "text"]) == 0
    assert "regressed" not in capsys.readouterr().out


def test_a_json_comparison_given_back_as_base_is_its_head_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = lab_run(tmp_path, "base"), lab_run(tmp_path, "head", factor=0.8)
    document = tmp_path / "comparison.json"
    assert main(["compare", str(base), str(head), "--json", str(document)]) == 1
    # The head of that comparison is the base now: against the same head, nothing moved.
    assert main(["compare", str(document), str(head), "--format", "text"]) == 0
    captured = capsys.readouterr()
    assert "not a supported report format" not in captured.err
    line = next(line for line in captured.out.splitlines() if RECEIVER in line)
    assert "n=3" in line
    assert "regressed" not in captured.out


def test_a_baseline_with_hostile_file_names_stays_readable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(RUN / "tcp_rx_1.json", run / "tcp_rx_1.json")
    deep = run / ("d" * 120) / ("e" * 120)
    deep.mkdir(parents=True)
    (deep / "x\n::error::injected\x1b[2K.log").write_text("not a report\n")
    saved = tmp_path / "baseline.json"
    assert main(["compare", str(run), "--save", str(saved)]) == 0
    capsys.readouterr()
    side = read_side([ReportFile("baseline.json", saved.read_bytes())])
    assert not side.unreadable
    (failure,) = side.failures
    assert "\n" not in failure.case
    assert "\x1b" not in failure.case
    assert len(failure.case) <= 200


# --- the perfbot JSON version 2 reader ------------------------------------------------------


def _read(document: object) -> tuple[list[tuple[str, str, float]], list[str]]:
    side = read_side([ReportFile("b.json", json.dumps(document).encode())])
    values = [(p, m, v) for (p, m), s in side.series.items() for v in s.samples]
    return values, [reason for _, reason in side.unreadable]


def _refused(document: object) -> list[str]:
    """Why the file, or an item of it, was not read: a broken file is unreadable, a broken
    item a failed case of the file (its other items are read)."""
    side = read_side([ReportFile("b.json", json.dumps(document).encode())])
    return [failure.reason for failure in side.failures if failure.case == "b.json"]


def test_version_2_reads_scale_settings_and_whole_platform_failures() -> None:
    document = {
        "perfbot": 2,
        "kind": "baseline",
        "metrics": [
            {
                "name": "udp.lost_percent",
                "values": [0.0, 0.1],
                "unit": "%",
                "better": "lower",
                "platform": "lab",
                "scale": "points",
                "settings": {"protocol": "UDP", "target_bitrate": "10000000"},
            }
        ],
        "failures": [{"case": "zperf", "reason": "timeout", "whole_platform": True}],
    }
    values, unreadable = _read(document)
    assert unreadable == []
    assert values == [("lab", "udp.lost_percent", 0.0), ("lab", "udp.lost_percent", 0.1)]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            {"perfbot": 1, "metrics": [{"name": "a", "value": 1, "scale": "ratio"}]},
            'unknown key "scale"',
        ),
        (
            {"perfbot": 2, "metrics": [{"name": "a", "value": 1, "scale": "log"}]},
            "metrics[0].scale must be one of ratio, points, count",
        ),
        (
            {"perfbot": 2, "metrics": [{"name": "a", "value": 1, "settings": {"a": 1}}]},
            "metrics[0].settings.a must be a string",
        ),
        ({"perfbot": 2, "kind": "guess", "metrics": []}, 'kind must be "baseline" or'),
        ({"perfbot": 2, "kind": "comparison", "platforms": []}, "no head measurement"),
        (
            {
                "perfbot": 2,
                "kind": "comparison",
                "platforms": [
                    {"name": "p", "metrics": [{"name": "a", "head": {"samples": ["1"]}}]}
                ],
            },
            "platforms[0].metrics[0].head.samples[0] must be a finite number",
        ),
    ],
)
def test_version_2_refuses_broken_documents_and_items_naming_the_field(
    document: object, message: str
) -> None:
    (reason,) = _refused(document)
    assert message in reason


def test_a_zperf_baseline_gates_like_the_seed_deterministic_metrics_stay_deterministic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The seed's use: save a baseline of the icount run, gate a later run on it. A 1.5 %
    # drop under icount is a real change (the metric is deterministic), not noise.
    zperf = shared("zephyr-zperf/README-loopback-icount_expected_output.txt")
    head = tmp_path / "head.log"
    head.write_text(zperf.read_text().replace("tcp4_mbps=5.970", "tcp4_mbps=5.880"))
    saved = tmp_path / "baseline.json"
    assert main(["compare", str(zperf), "--save", str(saved)]) == 0
    assert all(m["deterministic"] for m in json.loads(saved.read_text())["metrics"])
    capsys.readouterr()
    direct = main(["compare", str(zperf), str(head), "--tolerance", "1", "--format", "text"])
    direct_out = capsys.readouterr().out
    assert direct == 1
    assert (
        main(
            ["compare", "--baseline", str(saved), str(head), "--tolerance", "1", "--format", "text"]
        )
        == 1
    )
    assert capsys.readouterr().out == direct_out


# --- the version 2 schema --------------------------------------------------------------------

SCHEMA_V2 = REPO / "perfbot" / "schema" / "perfbot-report-2.schema.json"


@pytest.fixture(scope="module")
def validator() -> Any:
    schema = json.loads(SCHEMA_V2.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def test_what_perfbot_writes_is_valid_version_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], validator: Any
) -> None:
    base, head = lab_run(tmp_path, "base"), lab_run(tmp_path, "head", factor=0.8)
    (head / "lab" / "broken.json").write_text("{")  # a failure on the head side
    saved, document = tmp_path / "saved.json", tmp_path / "comparison.json"
    main(["compare", str(base), str(head), "--save", str(saved), "--json", str(document)])
    capsys.readouterr()
    for path in (saved, document):
        written = json.loads(path.read_text())
        validator.validate(written)
        assert written["perfbot"] == 2
    assert json.loads(saved.read_text())["failures"]


@pytest.mark.parametrize(
    "document",
    [
        {"perfbot": 2, "kind": "baseline", "metrics": [{"name": "a", "value": 1, "scale": "log"}]},
        {
            "perfbot": 2,
            "kind": "baseline",
            "metrics": [{"name": "a", "value": 1, "settings": {"a": 1}}],
        },
        {
            "perfbot": 2,
            "kind": "baseline",
            "metrics": [{"name": "a", "value": 1, "deterministic": 1}],
        },
        {"perfbot": 2, "kind": "guess", "metrics": [{"name": "a", "value": 1}]},
        {"perfbot": 2, "kind": "baseline", "metrics": []},
    ],
)
def test_the_schema_refuses_what_the_reader_refuses(document: Any, validator: Any) -> None:
    assert not validator.is_valid(document)
    values, _ = _read(document)
    assert values == []
    assert len(_refused(document)) == 1
