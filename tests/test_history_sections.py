"""The comment's history sections (engine/history.py) and their place in the size budget
(render.prepare): pushes newest first, the branch's recent values with where the head
stands, the charts; charts dropped first, then the history, then the comparison's detail,
each said; every name escaped, as GitHub's own markdown engine shows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from perfbot.engine.judge.compare import Comparison, MetricResult, Stats, compare
from perfbot.engine.show.history import (
    History,
    Push,
    Trend,
    chart_series,
    pushes_section,
    standing,
    trend_section,
)
from perfbot.engine.show.render import Footer, RenderContext, render
from perfbot.model import FailedCase
from tests.builders import side
from tests.test_markdown_render import assert_structure
from tests.test_mermaid import hostile_strings

PLATFORM = "qemu_x86/atom"
WHEN = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
MAIN = [f"{i:x}" * 40 for i in range(1, 9)]


def judged(tcp4: float, name: str = "tcp4_mbps") -> tuple[Comparison, MetricResult]:
    comparison = compare(
        side({name: 5.97, "udp4_mbps": 13.1}), side({name: tcp4, "udp4_mbps": 13.1})
    )
    (metric,) = [m for p in comparison.platforms for m in p.metrics if m.name == name]
    return comparison, metric


def history(name: str = "tcp4_mbps", *, branch: str = "main", unit: str = "Mbps") -> History:
    key = (PLATFORM, name)
    _, now = judged(5.37, name)
    _, before = judged(5.6, name)
    _, first = judged(5.8, name)
    points = [(sha, 5.9 + i / 100) for i, sha in enumerate(MAIN)]
    assert now.head is not None
    assert before.head is not None
    assert first.head is not None
    return History(
        branch,
        (key,),
        (
            Push("c" * 40, WHEN, "1 regression", ((key, now),), current=True),
            Push("b" * 40, WHEN, "1 regression", ((key, before),)),
            Push("a" * 40, WHEN, "no change beyond the noise floor", ((key, first),)),
        ),
        (Trend(PLATFORM, name, unit, tuple(points), now.head.value),),
        (
            chart_series(
                [(sha, Stats.of([v])) for sha, v in points],
                [("a" * 40, first.head), ("b" * 40, before.head), ("c" * 40, now.head)],
                metric=name,
                unit=unit,
                platform=PLATFORM,
                branch=branch,
                base=now.base,
                head=now.head,
            ),
        ),
    )


def body(hist: History | None, limit: int = 65_536, name: str = "tcp4_mbps") -> str:
    comparison, _ = judged(5.37, name)
    context = RenderContext(
        head_sha="c" * 40,
        base_sha="9" * 40,
        base_ref="main",
        footer=Footer.APP,
        history=hist,
        limit=limit,
    )
    return render(comparison, context)


def test_the_pushes_newest_first_the_branch_and_a_chart_after_the_comparison() -> None:
    text = body(history())
    root = assert_structure(text)
    pushes = text.index("This PR's pushes: 2 earlier measured pushes")
    trend = text.index("Recent values on <code>main</code>")
    charts = text.index("1 chart of the metrics that moved")
    assert text.index("#### <code>qemu_x86/atom</code>") < pushes < trend < charts
    assert "<code>ccccccc</code> (this report)" in text
    assert text.index("<code>ccccccc</code>") < text.index("<code>bbbbbbb</code>")
    assert text.index("<code>bbbbbbb</code>") < text.index("<code>aaaaaaa</code>")
    assert "🔴 −6.20 %" in text  # push b's change of tcp4
    assert "below all 8 recent <code>main</code> commits" in text
    (code,) = [c for c in root.find("code") if c.attrs.get("class") == "language-mermaid"]
    assert '"PR ccccccc"' in code.text()
    assert "line [5.9, 5.91" in code.text()
    # Each history section is a collapsed <details>, closed before the footer.
    summaries = [s.text() for s in root.find("summary")]
    assert summaries[-3:] == [
        "This PR's pushes: 2 earlier measured pushes",
        "Recent values on main",
        "1 chart of the metrics that moved",
    ]


def test_without_an_earlier_push_or_branch_history_only_the_bars_are_shown() -> None:
    full = history()
    bare = History("main", full.metrics, full.pushes[:1], (), (
        chart_series([], [], metric="tcp4_mbps", unit="Mbps", platform=PLATFORM, branch="main",
                     base=Stats.of([5.97]), head=Stats.of([5.37])),
    ))  # fmt: skip
    text = body(bare)
    assert_structure(text)
    assert "This PR's pushes" not in text
    assert "Recent values" not in text
    assert "bar [5.97, 5.37]" in text
    assert text == body(bare)  # same input, same bytes


@pytest.mark.parametrize(
    ("head", "values", "said"),
    [
        (1.0, [2.0, 3.0], "below all 2 recent main commits"),
        (4.0, [2.0, 3.0], "above all 2 recent main commits"),
        (2.5, [2.0, 3.0, 4.0], "1 of 3 recent main commits lower, 2 higher"),
        (2.0, [2.0], "equal to all 1 recent main commit"),
        (None, [2.0], "—"),
    ],
)
def test_where_the_head_stands(head: float | None, values: list[float], said: str) -> None:
    assert standing(head, values, "main") == said


def test_the_budget_drops_charts_first_then_the_history_then_the_detail() -> None:
    hist = history()
    full = body(hist)
    plain = body(None)
    assert len(full.encode()) > len(plain.encode()) + 1000
    reserve = 2048  # the App's room for live notices
    # Just too small for the chart: it goes, and the comment says so.
    no_chart = body(hist, len(full.encode()) + reserve - 1)
    assert "```mermaid" not in no_chart
    assert "This PR's pushes" in no_chart
    assert "Recent values" in no_chart
    assert "*Left out to stay within GitHub's comment size limit: the charts.*" in no_chart
    assert_structure(no_chart)
    # Too small for the history's tables as well: both go before any row.
    smaller = body(hist, len(no_chart.encode()) + reserve - 1)
    assert "This PR's pushes" not in smaller
    assert "```mermaid" not in smaller
    assert "the charts, this PR's earlier pushes and the target branch's recent values." in (
        smaller
    )
    assert "<details><summary>1 unchanged metric</summary>" in smaller  # the detail stays
    assert_structure(smaller)
    # Smaller still: the comparison's detail goes too, after them in the same sentence.
    least = body(hist, len(plain.encode()) + reserve - 1)
    assert "the target branch's recent values, the unchanged rows" in least
    assert_structure(least)


@pytest.mark.parametrize("hostile", hostile_strings()[:40], ids=lambda s: repr(s[:24]))
def test_a_hostile_name_breaks_no_history_section(hostile: str) -> None:
    text = body(history(hostile, branch=hostile, unit=hostile), name=hostile)
    root = assert_structure(text)
    codes = [c for c in root.find("code") if c.attrs.get("class") == "language-mermaid"]
    assert len(codes) == 1
    assert codes[0].text().startswith("---\nconfig:")
    assert codes[0].text().rstrip("\n").endswith("]")  # the data line, the fence closed after
    assert len(root.find("details")) == 4


def documented_history() -> History:
    """The example of docs/maintainers/comment.md ("History in the comment"): two pushes, six
    main commits."""
    key = ("qemu_x86", "tcp4_mbps")

    def moved(head: float) -> MetricResult:
        comparison = compare(
            side({"tcp4_mbps": 7.094}, platform="qemu_x86"),
            side({"tcp4_mbps": head}, platform="qemu_x86"),
        )
        return comparison.platforms[0].metrics[0]

    now, before = moved(6.81), moved(6.651)
    main = [("3f1c2a9", 7.09), ("8b0d4e1", 7.12), ("c47a9f0", 7.05)]
    main += [("19e6b3d", 7.1), ("5a2f8c7", 7.08), ("e0b91d4", 7.11)]
    return History(
        "main",
        (key,),
        (
            Push("7d8e9f0", WHEN, "1 regression", ((key, now),), current=True),
            Push("1a2b3c4", WHEN.replace(hour=9, minute=12), "1 regression", ((key, before),)),
        ),
        (Trend("qemu_x86", "tcp4_mbps", "Mbps", tuple(main), 6.81),),
    )


def test_the_docs_show_the_sections_this_module_writes() -> None:
    from tests.paths import REPO  # noqa: PLC0415

    page = (REPO / "docs" / "maintainers" / "comment.md").read_text(encoding="utf-8")
    section = page.split("## History in the comment", 1)[1].split("\n## ", 1)[0]
    example = section.split("```markdown\n", 1)[1].split("\n```", 1)[0]
    hist = documented_history()
    assert example == "\n".join([*pushes_section(hist), "", *trend_section(hist)])


def test_a_hard_line_break_is_no_structure_error() -> None:
    """Two failed cases of one platform are two lines joined by a hard break (``<br />``,
    a void element written self-closed): the structure checks take it as one element."""
    base = side({"tcp4_mbps": 5.97})
    head = side(
        {"tcp4_mbps": 5.37},
        failures=[FailedCase(PLATFORM, "udp_a", "busy"), FailedCase(PLATFORM, "udp_b", "busy")],
    )
    text = body_of(compare(base, head))
    assert "  \n❌" in text
    root = assert_structure(text)
    assert root.find("br")


def body_of(comparison: Comparison) -> str:
    return render(comparison, RenderContext(footer=Footer.APP, history=history()))
