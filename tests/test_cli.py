"""``perfbot compare`` and ``perfbot formats`` as a user runs them."""

from __future__ import annotations

import json
import os
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
    assert "#### <code>qemu_x86</code>" in out
    # A platform with a failed case stays open, though nothing moved there.
    assert "#### <code>fpga-vu13p</code>" in out
    assert "| <code>fpga-vu13p</code> |  |  | 2 | ❌ 1 failed |" in out


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
        pytest.param(["compare", "a", "b", "c"], "give BASE and HEAD", id="three-paths"),
    ],
)
def test_usage_errors_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_dir_with_only_one_side_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "head").mkdir()
    (tmp_path / "head" / "z.log").write_text(ZPERF_BASE.read_text())
    assert main(["compare", str(tmp_path)]) == 2
    assert "has a head/ but no base/ directory" in capsys.readouterr().err


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


def test_compare_loads_no_event_loop(tmp_path: Path) -> None:
    """``perfbot compare`` is a short process: building the parser of every command must
    not import what only ``serve`` and ``replay`` use (asyncio brings ssl and sockets)."""
    probe = (
        "import sys\n"
        "from perfbot.cli import main\n"
        f"code = main(['compare', {str(ZPERF_BASE)!r}, {str(zperf_head(tmp_path))!r}])\n"
        "print(code, sorted(m for m in ('asyncio', 'ssl', 'socket') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.stdout.splitlines()[-1] == "1 []", result.stderr


# --- confinement: an untrusted checkout cannot make compare read outside it ----------------

SECRET = "hunter2_secret_metric"


def untrusted_checkout(tmp_path: Path) -> Path:
    """work/{base,head} with zperf logs, and outside/ holding a secret perfbot could parse."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    for folder in (work / "base", work / "head", outside / "dir"):
        folder.mkdir(parents=True)
    for side in ("base", "head"):
        (work / side / "z.log").write_text(ZPERF_BASE.read_text())
    secret = f'{{"perfbot": 1, "metrics": [{{"name": "{SECRET}", "value": 1}}]}}'
    (outside / "secret.log").write_text(secret)
    (outside / "dir" / "secret.json").write_text(secret)
    return work


def test_a_symlink_out_of_a_side_is_named_and_never_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = untrusted_checkout(tmp_path)
    (work / "head" / "leak.log").symlink_to("../../outside/secret.log")
    (work / "head" / "leakdir").symlink_to("../../outside/dir")
    (work / "base" / "absolute.log").symlink_to(tmp_path / "outside" / "secret.log")
    for argv in (["compare", str(work)], ["compare", str(work / "base"), str(work / "head")]):
        assert main(argv) == 0
        captured = capsys.readouterr()
        assert SECRET not in captured.out + captured.err
        outside = "symbolic link pointing outside the directory given (not followed)"
        assert f"perfbot: head: leak.log: {outside}" in captured.err
        assert f"perfbot: head: leakdir/: {outside}" in captured.err
        assert f"perfbot: base: absolute.log: {outside}" in captured.err
        # Listed in the comment like any unreadable file; the real logs are compared.
        assert "leak.log" in captured.out
        assert "no change beyond the noise floor" not in captured.out  # failed cases count
        assert "3 failed cases" in captured.out


def test_links_inside_a_side_are_read_and_other_entries_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = untrusted_checkout(tmp_path)
    head = work / "head"
    (head / "p").mkdir()
    (head / "p" / "again.log").symlink_to("../z.log")  # inside head/: followed
    (head / "p" / "up").symlink_to("..")  # a directory link, even inside, could loop
    (head / "gone.log").symlink_to("missing.log")
    os.mkfifo(head / "pipe.log")  # must be named, and never block the command
    assert main(["compare", str(work / "base"), str(head)]) == 0
    captured = capsys.readouterr()
    assert "perfbot: head: p/up/: symbolic link to a directory (not followed)" in captured.err
    assert "perfbot: head: gone.log: symbolic link to nothing readable" in captured.err
    assert "perfbot: head: pipe.log: not a regular file" in captured.err
    assert "again.log" not in captured.err
    assert "<code>p</code>" in captured.out  # p/again.log was read as platform p


def test_a_side_directory_linked_out_of_dir_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = untrusted_checkout(tmp_path)
    (work / "head" / "z.log").unlink()
    (work / "head").rmdir()
    (work / "head").symlink_to("../outside/dir")
    assert main(["compare", str(work)]) == 2
    captured = capsys.readouterr()
    assert "head is a symbolic link out of" in captured.err
    assert SECRET not in captured.out + captured.err


@pytest.mark.parametrize(
    ("extra", "role"),
    [
        (["work/base", "outside/secret.log"], "HEAD"),
        (["outside/dir", "work/head"], "BASE"),
        (["work/base", "work/head", "--markdown", "outside/report.md"], "--markdown"),
        (["work/base", "work/head", "--json", "work/link/report.json"], "--json"),
    ],
    ids=["head-outside", "base-outside", "markdown-outside", "json-through-a-link"],
)
def test_base_dir_confines_every_read_and_write(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    extra: list[str],
    role: str,
) -> None:
    work = untrusted_checkout(tmp_path)
    (work / "link").symlink_to("../outside")
    monkeypatch.chdir(tmp_path)
    assert main(["compare", *extra, "--base-dir", "work"]) == 2
    err = capsys.readouterr().err
    (line,) = err.splitlines()
    assert line.startswith(f"perfbot: {role} ")
    assert "resolves outside --base-dir work" in line
    assert not (tmp_path / "outside" / "report.md").exists()
    assert not (tmp_path / "outside" / "report.json").exists()


@pytest.mark.parametrize("option", ["--markdown", "--json"])
def test_an_output_file_that_is_a_link_is_not_written_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    # A link committed in the checkout (report.md -> ~/.bashrc) would have been truncated
    # and overwritten with the comparison, with or without --base-dir.
    work = untrusted_checkout(tmp_path)
    victim = tmp_path / "outside" / "victim"
    victim.write_text("keep me")
    (work / "report.out").symlink_to(victim)
    assert main(["compare", str(work), option, str(work / "report.out")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert (
        line
        == f"perfbot: {option} {work / 'report.out'} is a symbolic link; it is not written through"
    )
    assert victim.read_text() == "keep me"


def test_base_dir_allows_what_is_inside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    untrusted_checkout(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = ["compare", "work", "--base-dir", "work", "--markdown", "work/report.md"]
    assert main(argv) == 0
    assert "no change beyond the noise floor" in (tmp_path / "work" / "report.md").read_text()
    assert main(["compare", "work", "--base-dir", "work/base/z.log"]) == 2
    assert "--base-dir work/base/z.log is not a directory" in capsys.readouterr().err


def test_a_file_name_cannot_start_a_workflow_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = untrusted_checkout(tmp_path)
    (work / "head" / "x\n::error::injected\x1b[2K.log").write_text("not a report\n")
    assert main(["compare", str(work)]) == 0
    err = capsys.readouterr().err
    assert "perfbot: head: x ::error::injected[2K.log: not a supported report format" in err
    assert all(line.startswith("perfbot: ") for line in err.splitlines())
