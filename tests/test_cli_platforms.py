"""``--platform`` and board-only folders against twister platforms (issue 14, item 2).

The zperf values are those of the real loopback icount log in ../shared/fixtures; the
twister.json around them has the shape twister writes (reference formats.md, 1.3).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from perfbot.app.actions import CommentJob, comment_for_run
from perfbot.cli import main
from perfbot.engine.read import platforms
from tests.harness import ZPERF_BASE as ZPERF_BASE_VALUES
from tests.harness import World, regressed, zip_of, zperf_log
from tests.paths import shared

ZPERF_LOG = shared("zephyr-zperf/README-loopback-icount_expected_output.txt")
SCENARIO = "sample.net.zperf.loopback_icount"


def zperf_values(factor: float = 1.0) -> dict[str, float]:
    found = re.findall(r"ZPERF-RESULT (\w+)=([0-9.]+)", ZPERF_LOG.read_text())
    return {key: float(value) * factor for key, value in found}


def twister_json(path: Path, runs: dict[str, float]) -> Path:
    """A twister.json with one passed zperf suite per platform, values scaled by factor."""
    suites = []
    for platform, factor in runs.items():
        recording = [{k: f"{v:.3f}"} for k, v in zperf_values(factor).items()]
        suites.append(
            {
                "name": SCENARIO,
                "arch": "x86",
                "platform": platform,
                "status": "passed",
                "testcases": [{"identifier": SCENARIO, "status": "passed"}],
                "recording": recording,
            }
        )
    document = {"environment": {"os": "Linux"}, "testsuites": suites}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=4, separators=(",", ":")))
    return path


def two_platforms(tmp_path: Path) -> tuple[Path, Path]:
    base = twister_json(
        tmp_path / "base" / "twister.json", {"qemu_x86/atom": 1, "qemu_x86_64/atom": 1}
    )
    # Only qemu_x86_64 regresses: a filter on qemu_x86 must then exit 0.
    head = twister_json(
        tmp_path / "head" / "twister.json", {"qemu_x86/atom": 1, "qemu_x86_64/atom": 0.9}
    )
    return base, head


@pytest.mark.parametrize("wanted", ["qemu_x86", "qemu_x86/atom"])
def test_platform_matches_the_board_or_the_full_name_never_a_prefix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], wanted: str
) -> None:
    base, head = two_platforms(tmp_path)
    assert main(["compare", str(base), str(head)]) == 1
    capsys.readouterr()
    assert main(["compare", str(base), str(head), "--platform", wanted, "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert "qemu_x86/atom" in out
    assert "qemu_x86_64" not in out


def test_platform_is_repeatable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, head = two_platforms(tmp_path)
    argv = ["compare", str(base), str(head), "--format", "text"]
    assert main([*argv, "--platform", "qemu_x86", "--platform", "qemu_x86_64"]) == 1
    out = capsys.readouterr().out
    assert "qemu_x86/atom" in out
    assert "qemu_x86_64/atom" in out


def test_a_platform_that_matches_nothing_is_a_usage_error_naming_what_is_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = two_platforms(tmp_path)
    assert main(["compare", str(base), str(head), "--platform", "qemu_x86_6"]) == 2
    err = capsys.readouterr().err
    assert "--platform qemu_x86_6 matches no platform measured" in err
    assert "qemu_x86/atom, qemu_x86_64/atom" in err


def test_a_board_folder_is_lined_up_with_the_twister_platform_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "base" / "qemu_x86" / "zperf.log"
    base.parent.mkdir(parents=True)
    base.write_text(ZPERF_LOG.read_text())
    twister_json(tmp_path / "head" / "twister.json", {"qemu_x86/atom": 1})
    assert main(["compare", str(tmp_path), "--format", "markdown"]) == 0
    captured = capsys.readouterr()
    said = "base platform qemu_x86 was compared as qemu_x86/atom, the head's platform"
    assert said in captured.err
    assert "no change beyond the noise floor" in captured.out
    assert "not available" not in captured.out


def test_an_ambiguous_board_is_not_guessed() -> None:
    renames = platforms._renames(
        {"nrf5340dk"}, {"nrf5340dk/nrf5340/cpuapp", "nrf5340dk/nrf5340/cpunet"}
    )
    assert renames == {}
    assert platforms._renames({"qemu_x86"}, {"qemu_x86/atom", "qemu_x86_64/atom"}) == {
        "qemu_x86": "qemu_x86/atom"
    }


@pytest.mark.parametrize(
    ("platform", "wanted", "expected"),
    [
        ("qemu_x86/atom", "qemu_x86", True),
        ("qemu_x86/atom", "qemu_x86/atom", True),
        ("qemu_x86_64/atom", "qemu_x86", False),
        ("qemu_x86_64", "qemu_x86", False),
        ("qemu_x86/atom", "qemu_x86/at", False),
        ("lab", "lab", True),
    ],
)
def test_matches(platform: str, wanted: str, expected: bool) -> None:
    assert platforms.matches(platform, wanted) is expected


# --- the App: the configuration key platforms: ------------------------------------------------


async def test_the_app_reports_only_the_configured_platforms() -> None:
    world = World.create()
    world.repo.files[".github/perfbot.yml"] = "platforms: [qemu_x86_64]\n"
    pull = world.pull(7, "a" * 40)
    files = {
        "base/qemu_x86/zperf.log": zperf_log(ZPERF_BASE_VALUES),
        "head/qemu_x86/zperf.log": zperf_log(regressed()),  # left out by the configuration
        "base/qemu_x86_64/zperf.log": zperf_log(ZPERF_BASE_VALUES),
        "head/qemu_x86_64/zperf.log": zperf_log(ZPERF_BASE_VALUES),
    }
    run = world.measured_run(pull, 3001, report=zip_of(files))
    job = CommentJob(
        owner="acme",
        repo="widget",
        run_id=run.id,
        token=world.fake.issue_actions_token(world.repo),
        api_url=world.fake.api_url,
    )
    await comment_for_run(job, transport=world.fake.transport())
    (comment,) = world.fake.comments_on(world.repo, 7)
    body = comment.body.replace("&#95;", "_")
    assert "<code>qemu_x86_64</code>" in body
    assert "<code>qemu_x86</code>" not in body
    assert "1 regression" not in body
