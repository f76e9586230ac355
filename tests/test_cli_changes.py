"""``perfbot changes FILE`` on real ``perfbot history`` files (written from a store), and
``perfbot history --changes``: the table, ``--json``, bad input (one sentence, exit 2),
hostile names (cleaned on the terminal), old files without the newer columns."""

from __future__ import annotations

import argparse
import asyncio
import csv
import dataclasses
import io
import json
import math
import random
import tempfile
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfbot import cli
from perfbot.cli import EXIT_OK, EXIT_USAGE, history_file, main
from perfbot.model import Better, Scale
from perfbot.store import SQLiteStore
from perfbot.store.measurements import MeasurementRecord
from tests.store.test_measurements import record

NOV_1 = 1_793_491_200.0
HOUR = 3600.0
STEP_AT = 40
COMMITS = 80
HOSTILE = "\x1b[2Jevil\u202e\x07name"


def sha_of(index: int) -> str:
    return f"{index + 1:040x}"


def push(
    index: int, metric: str, samples: tuple[float, ...], **changes: object
) -> MeasurementRecord:
    row = record(
        1000 + index,
        side="push",
        sha=sha_of(index),
        metric=metric,
        samples=samples,
        at=NOV_1 + index * HOUR,
    )
    changes.setdefault("settings", ())
    return dataclasses.replace(row, branch="main", event="push", pr_number=None, **changes)  # type: ignore[arg-type]


def trend_rows() -> list[MeasurementRecord]:
    """A −10 % step at commit 40 of tcp_rx (σ 1 %), loss rising 3 points at 40, a series
    with other settings that is 4× higher (never a change), a hostile name with a step,
    a fork PR's base row and a PR head row (neither part of the trend)."""
    rng = random.Random(4)
    rows = []
    for index in range(COMMITS):
        level = 940.0 if index < STEP_AT else 846.0
        samples = tuple(level * math.exp(rng.gauss(0, 0.01)) for _ in range(3))
        rows.append(push(index, "tcp_rx.mbps", samples))
        loss = (0.2 if index < STEP_AT else 3.2) + rng.gauss(0, 0.1)
        rows.append(push(index, "udp.lost_pct", (loss,), scale=Scale.POINTS, better=Better.LOWER))
        rows.append(push(index, HOSTILE, (100.0 * (1 if index < STEP_AT else 2),)))
        other = 3760.0 * math.exp(rng.gauss(0, 0.01))
        rows.append(
            push(index, "tcp_rx.mbps", (other,), settings=(("streams", "4"),), run_id=5000 + index)
        )
    rows.append(dataclasses.replace(record(9001, sha=sha_of(70), samples=(1.0,)), from_fork=True))
    rows.append(record(9002, side="head", sha="f" * 40, samples=(1.0,)))
    return rows


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "perfbot.db"

    async def seed() -> None:
        store = SQLiteStore(str(path))
        await store.setup()
        await store.record_measurements(trend_rows())
        await store.close()

    asyncio.run(seed())
    return path


def run(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def export(database: Path, tmp_path: Path, fmt: str, *extra: str) -> Path:
    out = tmp_path / f"history.{fmt}"
    code = main(
        ["history", "--repo", "acme/r500", "--database", str(database), "--format", fmt,
         "--limit", "100000", "--output", str(out), *extra]
    )  # fmt: skip
    assert code == EXIT_OK
    return out


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_changes_of_a_history_file(
    database: Path, tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = export(database, tmp_path, fmt)
    capsys.readouterr()
    target = tmp_path / "changes.json"
    code, out, err = run("changes", str(path), "--json", str(target), capsys=capsys)
    assert code == EXIT_OK
    document = json.loads(target.read_text())
    found = {(c["metric"], tuple(sorted(c["settings"].items()))): c for c in document["changes"]}
    assert set(found) == {("tcp_rx.mbps", ()), ("udp.lost_pct", ()), (HOSTILE, ())}
    tcp = found["tcp_rx.mbps", ()]
    assert tcp["sha"] == sha_of(STEP_AT)
    assert tcp["previous_sha"] == sha_of(STEP_AT - 1)
    assert tcp["direction"] == "regression"
    assert -11 < tcp["change_pct"] < -9
    assert tcp["change_unit"] == "%"
    assert tcp["branch"] == "main"
    assert 930 < tcp["before"] < 950
    assert tcp["before_spread"][0] <= tcp["before"] <= tcp["before_spread"][1]
    assert tcp["confidence"] > 0.9999
    loss = found["udp.lost_pct", ()]
    assert loss["change_unit"] == "pp"
    assert 2.5 < loss["change_pct"] < 3.5
    assert loss["direction"] == "regression"
    # The table: one row per change, the hostile name without its control characters.
    assert "tcp_rx.mbps" in out
    assert sha_of(STEP_AT)[:12] in out
    assert "\x1b" not in out
    assert "\u202e" not in out
    assert "\x07" not in out
    assert "[2Jevilname" in out
    assert "2 of" in err  # the fork's and the PR head's rows were left out


def test_no_change_is_an_empty_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "flat.csv"
    lines = ["branch,side,sha,platform,metric,unit,samples,from_fork,better,scale,settings"]
    lines += [f"main,push,{sha_of(i)},lab,tcp,Mbps,100.0,false,higher,ratio,[]" for i in range(30)]
    path.write_text("\n".join(lines) + "\n")
    target = tmp_path / "out.json"
    code, out, _ = run("changes", str(path), "--json", str(target), capsys=capsys)
    assert code == EXIT_OK
    assert json.loads(target.read_text()) == {"changes": []}
    assert "no change points" in out


def test_an_old_file_without_the_newer_columns_is_read_with_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "old.csv"
    lines = ["recorded_at,branch,side,sha,platform,metric,unit,median,n,samples,from_fork"]
    for i in range(60):
        value = 100.0 if i < 30 else 150.0
        lines.append(f"x,main,push,{sha_of(i)},lab,'=tcp,Mbps,{value},1,{value},false")
    path.write_text("\n".join(lines) + "\n")
    target = tmp_path / "out.json"
    code, _, err = run("changes", str(path), "--json", str(target), capsys=capsys)
    assert code == EXIT_OK
    (change,) = json.loads(target.read_text())["changes"]
    assert change["metric"] == "=tcp"  # the CSV's formula guard is taken off again
    assert change["direction"] == "improvement"  # higher is better by default
    assert change["sha"] == sha_of(30)
    assert "no better, scale, settings column" in err


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "is not valid JSON"),
        ('{"rows": 3}', "no list of rows"),
        ('{"rows": [1, 2]}', "must be an object"),
        ("branch,samples\n" + "x" * 200_000 + "\n", "is not a valid CSV file"),
        ("a,b\n1,2\n", "it has no branch, side, sha, platform, metric, samples column"),
        ("branch,side,sha,platform,metric,samples\nmain,push,xyz,p,m,1\n", "not a commit SHA"),
        ("branch,side,sha,platform,metric,samples\nmain,push,abcdef0,p,m,one\n", "numbers"),
        (
            "branch,side,sha,platform,metric,samples,better\nmain,push,abcdef0,p,m,1,up\n",
            "better or scale",
        ),
        (
            "branch,side,sha,platform,metric,samples,settings\nmain,push,abcdef0,p,m,1,{\n",
            "settings are not valid JSON",
        ),
        ('{"rows": [' + '{"side": "push"},' * 3 + '{"side": "push"}]}', "column"),
        ('{"rows": [{"branch": "m", "side": "push", "sha": "abcdef0", "platform": "p",'
         ' "metric": "m", "samples": [true]}]}', "numbers"),
        ('{"rows": ' + "[" * 100_000 + "]" * 100_000 + "}", "is not valid JSON"),
    ],
)  # fmt: skip
def test_bad_input_is_one_sentence_and_exit_2(
    tmp_path: Path, content: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad"
    path.write_text(content)
    code, out, err = run("changes", str(path), capsys=capsys)
    assert code == EXIT_USAGE
    assert out == ""
    assert reason in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_missing_or_huge_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run("changes", str(tmp_path / "absent.csv"), capsys=capsys)
    assert code == EXIT_USAGE
    assert "cannot read" in err
    path = tmp_path / "huge.csv"
    path.write_text("branch,side,sha,platform,metric,samples\n" + "main,push,abcdef0,p,m,1\n" * 50)
    monkeypatch.setattr(history_file, "MAX_FILE_BYTES", 100)
    code, _, err = run("changes", str(path), capsys=capsys)
    assert code == EXIT_USAGE
    assert "more than the 100 a history file may be" in err
    monkeypatch.setattr(history_file, "MAX_FILE_BYTES", 10**9)
    monkeypatch.setattr(history_file, "MAX_ROWS", 10)
    code, _, err = run("changes", str(path), capsys=capsys)
    assert code == EXIT_USAGE
    assert "more than 10 rows" in err


def test_the_json_is_never_written_through_a_symbolic_link(
    database: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = export(database, tmp_path, "csv")
    victim = tmp_path / "victim"
    victim.write_text("keep")
    link = tmp_path / "link.json"
    link.symlink_to(victim)
    code, _, err = run("changes", str(path), "--json", str(link), capsys=capsys)
    assert code == EXIT_USAGE
    assert "symbolic link" in err
    assert victim.read_text() == "keep"


def test_history_marks_the_change_points(
    database: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = list(
        csv.DictReader(io.StringIO(export(database, tmp_path, "csv", "--changes").read_text()))
    )
    marked = {
        (row["metric"], row["settings"], row["sha"]): row["change"]
        for row in table
        if row["change"]
    }
    assert marked == {
        ("tcp_rx.mbps", "[]", sha_of(STEP_AT)): marked["tcp_rx.mbps", "[]", sha_of(STEP_AT)],
        ("udp.lost_pct", "[]", sha_of(STEP_AT)): marked["udp.lost_pct", "[]", sha_of(STEP_AT)],
        (HOSTILE, "[]", sha_of(STEP_AT)): marked[HOSTILE, "[]", sha_of(STEP_AT)],
    }
    assert marked["tcp_rx.mbps", "[]", sha_of(STEP_AT)].startswith("regression \u221210")
    assert "pp" in marked["udp.lost_pct", "[]", sha_of(STEP_AT)]
    document = json.loads(export(database, tmp_path, "json", "--changes").read_text())
    assert "change" in document["columns"]
    assert {c["sha"] for c in document["changes"]} == {sha_of(STEP_AT)}
    rows = [r for r in document["rows"] if r["change"]]
    assert len(rows) == 3
    assert all(r["sha"] == sha_of(STEP_AT) for r in rows)


def test_history_svg_marks_the_commit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "one.db"

    async def seed() -> None:
        store = SQLiteStore(str(path))
        await store.setup()
        await store.record_measurements(
            [row for row in trend_rows() if row.metric == "udp.lost_pct"]
        )
        await store.close()

    asyncio.run(seed())
    svg = export(path, tmp_path, "svg", "--changes").read_text()
    texts = [element.text or "" for element in ElementTree.fromstring(svg.encode()).iter()]
    assert any(text.startswith("regression +") for text in texts)
    assert any("change point" in text for text in texts)
    plain = export(path, tmp_path, "svg").read_text()
    assert "change point" not in plain


def test_every_option_is_documented_in_docs_change_points() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "change-points.md").read_text()
    commands = next(
        action
        for action in cli._parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    changes_options = {
        option
        for action in commands.choices["changes"]._actions
        for option in action.option_strings
    }
    history_options = {
        option
        for action in commands.choices["history"]._actions
        for option in action.option_strings
    }
    documented = changes_options - {"-h", "--help"} | {"--changes"} & history_options
    assert "--changes" in documented
    assert "--json" in documented
    for option in sorted(documented):
        assert f"| `{option}" in doc, f"{option} is not in docs/change-points.md"


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        st.text(max_size=300),
        st.builds(
            lambda cells: "branch,side,sha,platform,metric,samples,scale,settings\n"
            + ",".join(cells)
            + "\n",
            st.lists(st.text(max_size=30), min_size=0, max_size=9),
        ),
        st.builds(
            lambda row: json.dumps({"rows": [row]}),
            st.dictionaries(
                st.sampled_from(["branch", "side", "sha", "platform", "metric", "samples",
                                 "settings", "better", "scale", "from_fork"]),
                st.one_of(st.none(), st.text(max_size=20), st.floats(), st.integers(),
                          st.lists(st.one_of(st.floats(), st.text(max_size=5)), max_size=3)),
            ),
        ),
    )
)  # fmt: skip
def test_any_file_is_read_or_refused_in_one_sentence(content: str) -> None:
    """No exception escapes: exit 0 (read) or 2 (refused, the one sentence on stderr)."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "any"
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
        assert main(["changes", str(path)]) in (EXIT_OK, EXIT_USAGE)
