"""Comment bodies rendered by GitHub's own markdown engine (cmark-gfm, through cmarkgfm,
with GitHub's extensions), and their structure checked on the HTML it produces.

String checks of the markdown (tests/hostile.py) say what the body holds; these say what
GitHub makes of it: every <details> closed where perfbot closes it, with its summary
first; every table a table with its columns; each mermaid chart one code block holding
exactly the chart; no link, no raw HTML, no mention or reference from a report's text.
GitHub finds mentions and references after rendering, in text outside code, so that is
where they are looked for.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser

import cmarkgfm  # type: ignore[import-untyped]  # no stubs, no py.typed
import pytest
from cmarkgfm.cmark import Options  # type: ignore[import-untyped]

from perfbot.engine.judge import acceptance
from perfbot.engine.judge.acceptance import Accepted
from perfbot.engine.judge.compare import Comparison, Stats, compare
from perfbot.engine.show.mermaid import MetricSeries, block, charts_section
from perfbot.engine.show.plot import HistoryPoint
from perfbot.engine.show.render import RenderContext, render
from perfbot.model import FailedCase
from tests.builders import side
from tests.paths import REPO
from tests.test_golden import WHAT_WENT_WRONG, accepted_body, what_went_wrong
from tests.test_mermaid import hostile_strings

GITHUB_EXTENSIONS = ["table", "strikethrough", "autolink", "tagfilter"]
# What cmark-gfm makes of perfbot's markdown, plus the tags perfbot writes itself.
ALLOWED_TAGS = frozenset(
    {
        "p", "h3", "h4", "blockquote", "em", "strong", "del", "code", "pre", "ul", "li", "br",
        "table", "thead", "tbody", "tr", "th", "td", "details", "summary", "sub", "a",
    }
)  # fmt: skip
VOID = frozenset({"br", "hr", "img", "input"})
RUN_URL = "https://github.com/acme/widget/actions/runs/4711"
# What GitHub links in rendered text outside code, after cmark-gfm.
MADE_INTO_LINKS = (
    (r"@[A-Za-z0-9]", "mention"),
    (r"#[0-9]", "reference"),
    (r"gh-[0-9]", "GH- reference"),
    (r"www\.", "bare www. address"),
    (r"[0-9A-F]{7,}", "commit SHA"),
)


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)
    parent: Node | None = None

    def elements(self) -> Iterator[Node]:
        for child in self.children:
            if isinstance(child, Node):
                yield child
                yield from child.elements()

    def find(self, tag: str) -> list[Node]:
        return [node for node in self.elements() if node.tag == tag]

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def ancestors(self) -> Iterator[Node]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent


class _TreeBuilder(HTMLParser):
    """The rendered HTML as a tree; an end tag that closes anything but the element open
    last is a structure error, not something to recover from."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.open = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, parent=self.open)
        self.open.children.append(node)
        if tag not in VOID:
            self.open = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # cmark-gfm writes a hard line break as <br />: one void element, nothing to close.
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        assert tag == self.open.tag, f"</{tag}> closes <{self.open.tag}>"
        assert self.open.parent is not None
        self.open = self.open.parent

    def handle_data(self, data: str) -> None:
        self.open.children.append(data)

    def handle_comment(self, data: str) -> None:
        self.open.children.append(Node("#comment", {"data": data}, parent=self.open))


def github_html(markdown: str) -> str:
    """``markdown`` as GitHub's engine renders a comment: GFM extensions, raw HTML kept
    (GitHub then sanitises it; perfbot must not rely on that)."""
    return str(
        cmarkgfm.markdown_to_html_with_extensions(
            markdown, options=Options.CMARK_OPT_UNSAFE, extensions=GITHUB_EXTENSIONS
        )
    )


def rendered(markdown: str) -> Node:
    builder = _TreeBuilder()
    builder.feed(github_html(markdown))
    builder.close()
    assert builder.open is builder.root, f"<{builder.open.tag}> is never closed"
    return builder.root


def table_widths(markdown: str) -> list[int]:
    """The column count of each table the markdown means to write, from its header rows."""
    lines = markdown.split("\n")
    return [
        line.count("|") - 1
        for line, below in itertools.pairwise(lines)
        if line.startswith("|") and re.fullmatch(r"\|(?:-+:?\|)+", below)
    ]


def outside_pre(node: Node) -> Iterator[str]:
    """The text GitHub scans for mentions, references and SHAs: all but code blocks, and
    but perfbot's own short SHAs (a <code> of exactly seven hex digits, meant to link)."""
    for child in node.children:
        if isinstance(child, str):
            yield child
        elif child.tag == "code" and re.fullmatch(r"[0-9a-f]{7}", child.text()):
            yield " "
        elif child.tag != "pre":
            yield from outside_pre(child)


def assert_structure(markdown: str, links: Sequence[str] = ()) -> Node:
    """What must hold of any comment perfbot writes, as GitHub renders it."""
    root = rendered(markdown)
    tags = {node.tag for node in root.elements()} - {"#comment"}
    assert tags <= ALLOWED_TAGS, tags - ALLOWED_TAGS
    comments = [node.attrs["data"] for node in root.find("#comment")]
    assert comments == [" perfbot:report "], comments  # the marker, and nothing else
    # Every <details> opens with its <summary>, which holds no block of its own.
    details = root.find("details")
    assert len(root.find("summary")) == len(details)
    for node in details:
        first = next(c for c in node.children if not (isinstance(c, str) and not c.strip()))
        assert isinstance(first, Node), first
        assert first.tag == "summary"
        assert not {n.tag for n in first.elements()} & {"details", "table", "pre", "p"}
    # Each table is a table, with the columns its header says on every row.
    tables = root.find("table")
    assert [len(t.find("tr")[0].find("th")) for t in tables] == table_widths(markdown)
    for table in tables:
        width = len(table.find("tr")[0].find("th"))
        for row in table.find("tr")[1:]:
            assert len(row.find("td")) == width, row.text()
    # No link but perfbot's own, no image, no mention, reference, SHA or bare URL.
    assert [a.attrs.get("href") for a in root.find("a")] == list(links)
    shown = " ".join(outside_pre(root))
    for pattern, what in MADE_INTO_LINKS:
        found = re.search(pattern, shown, re.IGNORECASE)
        assert not found, f"a {what}: {shown[max(found.start() - 40, 0) : found.end() + 40]!r}"
    assert "://" not in shown  # perfbot's own links show their label, not their address
    return root


def demo() -> str:
    return (REPO / "tests" / "golden" / "demo.md").read_text(encoding="utf-8")


def hostile_comparison() -> Comparison:
    """Every hostile string as a metric, its unit, its platform, a failed case and its
    reason."""
    base = head = None
    for i, hostile in enumerate(hostile_strings()):
        base = side({hostile: 100.0, f"ok{i}": 1.0}, platform=hostile, unit=hostile, into=base)
        head = side(
            {hostile: 50.0, f"ok{i}": 1.0},
            platform=hostile,
            unit=hostile,
            into=head,
            failures=[FailedCase(hostile, hostile, hostile)],
        )
    assert base is not None
    assert head is not None
    return compare(base, head)


def hostile_body() -> str:
    """One comment of ``hostile_comparison``, with hostile strings in the context too:
    the base branch, the run's label, skipped members and configuration problems."""
    strings = hostile_strings()
    context = RenderContext(
        head_sha="1a2b3c4d5e6f",
        base_sha="9f8e7d6c5b4a",
        base_ref=strings[0],
        run_url=RUN_URL,
        run_label=strings[1],
        skipped=tuple((s, s) for s in strings[:3]),
        config_errors=strings[3:6],
    )
    return render(hostile_comparison(), context)


def history(values: Sequence[float], pushes: Sequence[float]) -> tuple[HistoryPoint, ...]:
    return (
        *(HistoryPoint(f"{i:x}a2b3c4", Stats.of([v])) for i, v in enumerate(values)),
        *(HistoryPoint(f"{i:x}e5f6a7", Stats.of([v]), True) for i, v in enumerate(pushes)),
    )


def chart_series() -> list[MetricSeries]:
    """A line (branch history, then pushes), bars (no history), and a hostile chart."""
    hostile = '</details>```%%{init}%%\n-->"]; @mallory #1 https://evil.example :::x'
    return [
        MetricSeries("tcp4_mbps", "Mbps", "qemu_x86", "main", history([7.1, 7.0, 7.2], [6.6])),
        MetricSeries("udp4_mbps", "Mbps", "qemu_x86", base=Stats.of([14.3]), head=Stats.of([13])),
        MetricSeries(hostile, hostile, hostile, hostile, history([1.0, 2.0], [3.0])),
    ]


def with_charts(body: str, series: Sequence[MetricSeries]) -> str:
    """``body`` with the charts section before its footer, as the comment would hold it."""
    section = charts_section(series, 20_000)
    assert section.dropped == 0
    head, footer = body.rstrip("\n").rsplit("\n\n", 1)
    assert footer.startswith("<sub>")
    return f"{head}\n\n{section.text}\n\n{footer}\n"


def test_the_golden_comment_renders_as_laid_out() -> None:
    root = assert_structure(demo())
    assert len(root.find("details")) == 4  # one of them each UDP run's loss
    assert table_widths(demo()) == [5, 4, 4, 4, 4, 5, 4]
    assert [len(t.find("tr")) - 1 for t in root.find("table")][:3] == [3, 2, 6]
    assert root.find("h3")[0].text().startswith("Performance report: 1 regression")


@pytest.mark.parametrize("name", WHAT_WENT_WRONG)
def test_the_comments_of_what_went_wrong_render_with_no_empty_table(name: str) -> None:
    body = what_went_wrong(name)
    root = assert_structure(body)
    tables = root.find("table")
    assert len(tables) == len(table_widths(body)) > 0
    # Every table GitHub draws has rows under its header.
    assert all(len(table.find("tr")) >= 2 for table in tables)


def test_a_comment_of_every_hostile_name_keeps_its_structure() -> None:
    body = hostile_body()
    root = assert_structure(body, links=[RUN_URL])
    # Every platform has a failed case, so each is an open section of its own.
    assert len(root.find("h4")) == len(hostile_comparison().platforms) > 40


def test_the_accepted_comment_renders_and_a_hostile_reason_or_login_stays_inert() -> None:
    root = assert_structure(accepted_body())
    assert root.find("h3")[0].text().endswith("1 accepted regression, 1 uncertain (single run)")
    comparison = compare(side({"udp": 100.0, "tcp": 10.0}), side({"udp": 50.0, "tcp": 5.0}))
    for hostile in hostile_strings():
        # tcp was accepted at 9 by a hostile login: it no longer holds, and a line says so.
        earlier = Accepted("qemu_x86/atom", "tcp", (), 9.0, hostile, hostile, "b" * 40)
        judged = acceptance.judge(comparison, [earlier])
        accepted = acceptance.accept(
            judged, [("qemu_x86/atom", "udp")], login=hostile, reason=hostile, sha="a" * 40
        )
        body = render(accepted)
        assert "no longer holds" in body
        assert "☑️ −50.00 % (accepted by <code>" in body
        assert_structure(body)


def test_each_chart_is_one_mermaid_block_inside_its_details() -> None:
    series = chart_series()
    body = with_charts(demo(), series)
    root = assert_structure(body)
    blocks = [b for b in map(block, series) if b is not None]
    codes = [c for c in root.find("code") if c.attrs.get("class") == "language-mermaid"]
    assert len(codes) == len(blocks) == 3
    assert len(root.find("pre")) == 3
    for code, chart in zip(codes, blocks, strict=True):
        assert code.parent is not None
        assert code.parent.tag == "pre"
        assert code.text() == "\n".join(chart.split("\n")[1:-1]) + "\n"
        (holder,) = [a for a in code.ancestors() if a.tag == "details"]
        assert holder.find("summary")[0].text() == "3 charts of the metrics that moved"
    # The footer still follows the charts, outside every <details>.
    (footer,) = root.find("sub")
    assert not [a for a in footer.ancestors() if a.tag == "details"]


@pytest.mark.parametrize("hostile", hostile_strings(), ids=lambda s: repr(s[:24]))
def test_no_hostile_string_breaks_a_chart_out_of_its_fence(hostile: str) -> None:
    series = [MetricSeries(hostile, hostile, hostile, hostile, history([1.0, 2.0], [3.0]))]
    root = assert_structure(with_charts(demo(), series))
    (code,) = [c for c in root.find("code") if c.attrs.get("class") == "language-mermaid"]
    chart = block(series[0])
    assert chart is not None
    assert code.text() == "\n".join(chart.split("\n")[1:-1]) + "\n"


def test_the_checks_catch_a_label_left_raw() -> None:
    """The checks can fail: a title written as is (a line break, a fence, a mention)
    ends the code block early, and what follows is markdown again."""

    def section(title: str) -> str:
        chart = f'```mermaid\nxychart-beta\n    title "{title}"\n```'
        return f"<details><summary>1 chart</summary>\n\n{chart}\n\n</details>"

    def body(title: str) -> str:
        return demo().replace("\n\n<sub>", f"\n\n{section(title)}\n\n<sub>")

    assert_structure(body("tcp4_mbps (Mbps)"))  # the same chart, its title made safe
    # Its own closing fence then opens a block that swallows the </details>.
    with pytest.raises(AssertionError, match="<details> is never closed"):
        assert_structure(body("x\n```\n\nping"))
    with pytest.raises(AssertionError, match="a mention"):
        assert_structure(body("x\n```\n\n@mallory\n\n```mermaid\nx"))
