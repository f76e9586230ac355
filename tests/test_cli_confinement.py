"""``--base-dir`` against the wording of issue 14, item 6: every file read or written
resolves under DIR; ``..``, absolute paths and links that leave it are refused, naming
the path (the cases test_cli.py already covers are not repeated here)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from perfbot.cli import main
from perfbot.cli.compare import output_paths
from tests.test_cli import SECRET, untrusted_checkout


@pytest.mark.parametrize(
    ("argv", "role", "shown"),
    [
        (["work/base", "work/../outside/secret.log"], "HEAD", "work/../outside/secret.log"),
        (["work/base", "{abs}/outside/secret.log"], "HEAD", "{abs}/outside/secret.log"),
        (
            ["--baseline", "work/../outside/secret.log", "work/head"],
            "--baseline",
            "work/../outside/secret.log",
        ),
        (
            ["--baseline", "work/missing.json", "work/head", "--save", "../saved.json"],
            "--save",
            "../saved.json",
        ),
        (
            ["work/base", "work/head", "--save", "work/link/saved.json"],
            "--save",
            "work/link/saved.json",
        ),
        (
            ["work/base", "work/head", "--markdown", "{abs}/outside/r.md"],
            "--markdown",
            "{abs}/outside/r.md",
        ),
        (["work/outlink", "--save", "work/s.json"], "RUN", "work/outlink"),
    ],
    ids=[
        "dotdot-read",
        "absolute-read",
        "baseline-dotdot",
        "save-dotdot",
        "save-through-link",
        "absolute-write",
        "single-run-link",
    ],
)
def test_base_dir_refuses_every_way_out_naming_the_path(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    role: str,
    shown: str,
) -> None:
    work = untrusted_checkout(tmp_path)
    (work / "link").symlink_to("../outside")
    (work / "outlink").symlink_to("../outside/dir")
    monkeypatch.chdir(tmp_path)
    argv = [word.replace("{abs}", str(tmp_path)) for word in argv]
    # --exit-zero: confinement is not advisory, a missing baseline outside DIR included.
    assert main(["compare", *argv, "--base-dir", "work", "--exit-zero"]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line == (
        f"perfbot: {role} {shown.replace('{abs}', str(tmp_path))} resolves outside --base-dir work"
    )
    assert SECRET not in captured.out + captured.err
    assert not (tmp_path / "saved.json").exists()
    assert not (tmp_path / "outside" / "saved.json").exists()
    assert not (tmp_path / "outside" / "r.md").exists()


def test_base_dir_allows_save_and_a_baseline_inside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    untrusted_checkout(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = ["compare", "work/head", "--save", "work/saved.json", "--base-dir", "work"]
    assert main(argv) == 0
    argv = ["compare", "--baseline", "work/saved.json", "work/head", "--base-dir", "work"]
    assert main(argv) == 0
    assert "no change beyond the noise floor" in capsys.readouterr().out


def test_every_output_option_is_confined() -> None:
    # --plot comes from another module: whatever adds it is confined by its name.
    args = argparse.Namespace(markdown=None, json=None, save=Path("s"), plot="p.svg")
    assert dict(output_paths(args)) == {
        "--markdown": None,
        "--json": None,
        "--save": Path("s"),
        "--plot": Path("p.svg"),
    }
