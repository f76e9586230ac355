"""The mermaid charts of engine/mermaid.py: what they draw, their bounds, and that no name,
unit, platform, branch or label from a report can change the chart's syntax."""

from __future__ import annotations

import io
import json
import re
import zipfile
from functools import cache

import pytest

from perfbot.engine.judge.compare import Stats
from perfbot.engine.show.escape import clean
from perfbot.engine.show.mermaid import (
    FRONTMATTER,
    MAX_BRANCH_POINTS,
    MAX_CATEGORY,
    MAX_PUSHES,
    MAX_TITLE,
    MAX_UNIT,
    MetricSeries,
    block,
    charts_section,
    label,
)
from perfbot.engine.show.plot import HistoryPoint

# mermaid's number token (xychart.jison): no exponent, no NaN, no infinity.
NUMBER = r"[+-]?(?:\d+(?:\.\d+)?|\.\d+)"
STRING = r'"[^"\n]*"'
STATEMENTS = (
    re.compile(rf"    title {STRING}"),
    re.compile(rf"    x-axis {STRING} \[{STRING}(?:, {STRING})*\]"),
    re.compile(rf"    y-axis {STRING} {NUMBER} --> {NUMBER}"),
    re.compile(rf"    (?:line|bar) \[{NUMBER}(?:, {NUMBER})*\]"),
)
# Comfortably above the largest block (12 categories of 16 characters, titles of 80, at up
# to 4 bytes a character); the point is that no input makes it grow without bound.
MAX_BLOCK_BYTES = 3_000


@cache
def hostile_strings() -> tuple[str, ...]:
    """Every string the hostile tests feed perfbot: the names, units, platforms, case
    names and reasons inside each artifact of tests/test_hostile.py's NAME_CASES (read out
    of the zips they build), and the chart tests' hostile names."""
    from tests.test_hostile import NAME_CASES  # noqa: PLC0415 - heavy, only when needed
    from tests.test_plot import HOSTILE  # noqa: PLC0415

    found: list[str] = list(HOSTILE)
    for case in NAME_CASES.values():
        with zipfile.ZipFile(io.BytesIO(case.build())) as archive:
            for member in archive.namelist():
                parts = member.split("/")
                found += parts[1:-1]  # the platform directories
                found.append(parts[-1].rsplit(".", 1)[0])  # a case is named by its file
                if member.endswith(".json"):
                    found += _json_strings(json.loads(archive.read(member)))
    return tuple(dict.fromkeys(s for s in found if s))


def _json_strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _json_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _json_strings(v)]
    return []


def points(values: list[float], prefix: str = "c", highlight: bool = False) -> list[HistoryPoint]:
    return [
        HistoryPoint(f"{prefix}{i:06x}", Stats.of([v]), highlight) for i, v in enumerate(values)
    ]


def statements(chart: str) -> list[str]:
    """The chart's lines after the fence and perfbot's own frontmatter, checked to be
    exactly the four statements of a chart (so no line was added or split)."""
    lines = chart.split("\n")
    assert lines[0] == "```mermaid"
    assert lines[-1] == "```"
    assert tuple(lines[1 : 1 + len(FRONTMATTER)]) == FRONTMATTER
    body = lines[1 + len(FRONTMATTER) : -1]
    assert body[0] == "xychart-beta"
    assert len(body) == 1 + len(STATEMENTS), body
    for line, pattern in zip(body[1:], STATEMENTS, strict=True):
        assert pattern.fullmatch(line), line
    return body[1:]


def strings_of(line: str) -> list[str]:
    return re.findall(r'"([^"]*)"', line)


def numbers_of(line: str) -> list[float]:
    return [float(n) for n in re.findall(NUMBER, line.split("[", 1)[1])]


def test_branch_history_then_the_prs_pushes_on_one_line() -> None:
    history = (*points([100.0, 101.0, 99.5]), *points([80.0, 85.25], "p", highlight=True))
    chart = block(MetricSeries("tcp4_mbps", "Mbps", "qemu_x86", "main", history))
    assert chart is not None
    title, x_axis, y_axis, data = statements(chart)
    assert strings_of(title) == ["tcp4_mbps (Mbps) on qemu_x86"]
    assert strings_of(x_axis) == [
        "main commits, then this PR's pushes",
        "c000000",
        "c000001",
        "c000002",
        "PR p000000",
        "PR p000001",
    ]
    assert strings_of(y_axis) == ["Mbps"]
    assert data.startswith("    line [")
    assert numbers_of(data) == [100.0, 101.0, 99.5, 80.0, 85.25]
    low, high = (float(n) for n in re.findall(NUMBER, y_axis))
    assert low < 80.0  # a margin: no point on the frame
    assert high > 101.0


def test_without_history_base_and_pr_are_bars_from_zero() -> None:
    chart = block(MetricSeries("rx", "Mbps", base=Stats.of([10.0]), head=Stats.of([7.5])))
    assert chart is not None
    _title, x_axis, y_axis, data = statements(chart)
    assert strings_of(x_axis)[1:] == ["base", "PR"]
    assert data == "    bar [10, 7.5]"
    assert re.fullmatch(rf'    y-axis "Mbps" 0 --> {NUMBER}', y_axis)
    # Earlier pushes, with no branch history, are bars after the base.
    pushes = tuple(points([9.0, 8.0], "p", highlight=True))
    chart = block(MetricSeries("rx", base=Stats.of([10.0]), history=pushes))
    assert chart is not None
    assert strings_of(statements(chart)[1])[1:] == ["base", "PR p000000", "PR p000001"]


def test_nothing_to_compare_draws_nothing() -> None:
    assert block(MetricSeries("rx")) is None
    assert block(MetricSeries("rx", head=Stats.of([1.0]))) is None
    assert block(MetricSeries("rx", base=Stats.of([float("nan")]), head=Stats.of([1.0]))) is None


def test_the_newest_points_are_kept_within_the_bounds() -> None:
    history = (
        *points([float(i) for i in range(40)]),
        *points([float(100 + i) for i in range(20)], "p", highlight=True),
    )
    chart = block(MetricSeries("m", history=history))
    assert chart is not None
    _title, x_axis, _y, data = statements(chart)
    values = numbers_of(data)
    assert len(values) == MAX_BRANCH_POINTS + MAX_PUSHES
    assert values[:MAX_BRANCH_POINTS] == [float(i) for i in range(40 - MAX_BRANCH_POINTS, 40)]
    assert values[MAX_BRANCH_POINTS:] == [float(100 + i) for i in range(20 - MAX_PUSHES, 20)]
    assert len(strings_of(x_axis)) == 1 + len(values)


def test_numbers_never_use_an_exponent_and_unplottable_points_are_left_out() -> None:
    history = points([1e-9, 123456789012.0, float("inf"), float("nan"), 2e15, -0.000123, 0.0])
    chart = block(MetricSeries("m", history=tuple(history)))
    assert chart is not None
    _title, x_axis, y_axis, data = statements(chart)
    assert not re.search("[eEnN]", data.split("[", 1)[1] + y_axis.split('"')[-1])
    # Fractions keep four significant digits; whole numbers keep every digit.
    assert numbers_of(data) == [0.000000001, 123456789012.0, -0.000123, 0.0]
    assert strings_of(x_axis)[1:] == ["c000000", "c000001", "c000005", "c000006"]


def test_equal_labels_stay_distinct_categories() -> None:
    # mermaid's band axis merges equal categories: two re-runs would share one x.
    same = [HistoryPoint("1a2b3c4", Stats.of([1.0])), HistoryPoint("1a2b3c4", Stats.of([2.0]))]
    chart = block(MetricSeries("m", history=tuple(same)))
    assert chart is not None
    assert strings_of(statements(chart)[1])[1:] == ["1a2b3c4", "1a2b3c4 (2)"]


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ('say "hi"', "say 'hi'"),
        ("%%{init: {'theme':'dark'}}%%", "%(init· ('theme'·'dark'))%"),
        ("a --> b", "a --\u203a b"),
        ("x[1]; y{2}", "x(1), y(2)"),
        ("cls:::red", "cls···red"),
        ("`code` ```", "'code' '''"),
        ("<b>&amp;</b>", "\u2039b\u203a+amp,\u2039/b\u203a"),
        ("~~~fence", "---fence"),
        ("line\nbreak", "line break"),
        ("", "(empty)"),
    ],
)
def test_labels_lose_their_syntax_but_stay_readable(raw: str, shown: str) -> None:
    assert label(raw, 80) == shown


@pytest.mark.parametrize("hostile", hostile_strings(), ids=lambda s: repr(s[:24]))
def test_no_hostile_string_changes_the_charts_syntax(hostile: str) -> None:
    history = (
        HistoryPoint(hostile, Stats.of([1.0])),
        HistoryPoint("1a2b3c4", Stats.of([2.0])),
        HistoryPoint(hostile, Stats.of([3.0]), highlight=True),
    )
    for series in (
        MetricSeries(hostile, hostile, hostile, hostile, history),
        MetricSeries(
            hostile,
            hostile,
            base=Stats.of([1.0]),
            head=Stats.of([2.0]),
            base_label=hostile,
            head_label=hostile,
        ),
    ):
        chart = block(series)
        assert chart is not None
        assert len(chart.encode("utf-8")) <= MAX_BLOCK_BYTES
        title, x_axis, y_axis, _data = statements(chart)
        inner = "\n".join(chart.split("\n")[1:-1])
        # Nothing that mermaid or markdown reads as syntax inside a string.
        for forbidden in ("%%", "`", "<", ">", ";", "{", "}", "-->", "~~~", "\r", "\t"):
            assert forbidden not in inner.replace(" --> ", " "), forbidden
        (shown,) = strings_of(title)
        assert len(shown) <= MAX_TITLE
        where = f" on {hostile}" if series.platform else ""
        assert shown == label(f"{hostile} ({hostile}){where}", MAX_TITLE)
        categories = strings_of(x_axis)[1:]
        assert all(len(c) <= MAX_CATEGORY + len(" (2)") for c in categories)
        assert len(categories) == len(set(categories)) == len(numbers_of(_data))
        assert strings_of(y_axis) == [label(hostile, MAX_UNIT)]
        # The name is there, cleaned (no control or invisible characters), not dropped.
        assert label(hostile, MAX_TITLE)[:8].strip() in shown
        assert clean(hostile, MAX_TITLE) != "" or shown.startswith("(empty)")


def four_charts() -> list[MetricSeries]:
    return [
        MetricSeries(f"metric{i}", "Mbps", history=tuple(points([1.0, 2.0, 3.0 + i])))
        for i in range(4)
    ]


def test_the_section_holds_every_chart_that_fits() -> None:
    charts = charts_section(four_charts(), 100_000)
    assert (charts.shown, charts.dropped) == (4, 0)
    assert charts.text.startswith("<details><summary>4 charts of the metrics that moved</summary>")
    assert charts.text.endswith("\n</details>")
    assert charts.text.count("```mermaid") == 4
    assert "left out" not in charts.text


def test_charts_past_the_budget_are_dropped_from_the_end_and_counted() -> None:
    whole = charts_section(four_charts(), 100_000).text
    one = block(four_charts()[0])
    assert one is not None
    # One chart's bytes less than all four: three charts would fit but for the line that
    # says one was left out, so two are shown.
    budget = len(whole.encode()) - len(one.encode())
    charts = charts_section(four_charts(), budget)
    assert len(charts.text.encode("utf-8")) <= budget
    assert (charts.shown, charts.dropped) == (2, 2)
    assert "metric1" in charts.text
    assert "metric2" not in charts.text
    assert charts.text.startswith("<details><summary>2 charts of")
    assert f"*{charts.dropped} more chart" in charts.text
    assert "left out to stay within the comment size limit" in charts.text
    nothing = charts_section(four_charts(), 100)
    assert (nothing.text, nothing.shown, nothing.dropped) == ("", 0, 4)
    assert charts_section([MetricSeries("no data")], 100_000) == charts_section([], 100_000)


# The example chart of docs/maintainers/comment.md ("Charts in the comment"), kept in step.
DOCUMENTED_EXAMPLE = MetricSeries(
    "tcp4_mbps",
    "Mbps",
    "qemu_x86",
    "main",
    (
        *(
            HistoryPoint(sha, Stats.of([value]))
            for sha, value in [
                ("3f1c2a9", 7.09),
                ("8b0d4e1", 7.12),
                ("c47a9f0", 7.05),
                ("19e6b3d", 7.1),
                ("5a2f8c7", 7.08),
                ("e0b91d4", 7.11),
            ]
        ),
        HistoryPoint("1a2b3c4", Stats.of([6.65]), highlight=True),
        HistoryPoint("7d8e9f0", Stats.of([6.81]), highlight=True),
    ),
)


def test_the_docs_show_the_chart_this_module_writes() -> None:
    from tests.paths import REPO  # noqa: PLC0415

    chart = block(DOCUMENTED_EXAMPLE)
    assert chart is not None
    assert chart in (REPO / "docs" / "maintainers" / "comment.md").read_text(encoding="utf-8")
