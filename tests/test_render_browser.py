"""A comment as a reader sees it: rendered by GitHub's engine, styled with GitHub's
markdown CSS (github-markdown-css) and its mermaid charts drawn by mermaid, client-side, as
GitHub draws them, in headless Chromium. scripts/bootstrap installs Chromium and fetches
both npm packages (pinned) into the cache read here.

The page reports what it laid out into a ``data-report`` attribute of its body (read back
with ``--dump-dom``): the details' state and the summaries' boxes, each table's rows, and
for each chart its kind, title, x labels and the points or bars mermaid drew.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from perfbot.engine.show.mermaid import MetricSeries, block
from tests.test_markdown_render import chart_series, demo, github_html, history, with_charts
from tests.test_mermaid import hostile_strings, statements, strings_of
from tests.test_plot import chromium, decode_png

ASSETS = Path(
    os.environ.get("PERFBOT_RENDER_ASSETS")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "perfbot" / "render"
)
MARKDOWN_CSS = ASSETS / "github-markdown-css-5.9.0" / "github-markdown-light.css"
MERMAID_JS = ASSETS / "mermaid-11.12.2" / "dist" / "mermaid.min.js"
WIDTH = 1012  # GitHub's comment column is about 900 px wide, within a page like this
CHART_BLUE = (0x3B, 0x6E, 0xA5)

# What the page does once loaded. Collapsed, it measures the details as they come; opened
# (``#open``), it opens them, turns each mermaid code block into a chart as GitHub does,
# and reports what mermaid drew.
REPORT_SCRIPT = """
const report = {details: [], tables: [], charts: []};
const done = () => {
  report.height = document.documentElement.scrollHeight;
  document.body.setAttribute("data-report", JSON.stringify(report));
};
const open = location.hash === "#open";
// Laid out as a table: each row's cells side by side on one line, each row below the last.
// (GitHub's CSS makes the <table> itself a scrolling block; its rows are still a table.)
const isGrid = table => {
  const rows = [...table.querySelectorAll("tr")].map(r => [...r.children].map(
    c => c.getBoundingClientRect()));
  return rows.every((cells, i) =>
    cells.every((c, j) => c.width > 0 && (j === 0 ||
      (Math.abs(c.top - cells[0].top) < 1 && c.left >= cells[j - 1].right - 1))) &&
    (i === 0 || cells[0].top >= rows[i - 1][0].bottom - 1));
};
for (const details of document.querySelectorAll("details")) {
  if (open) details.open = true;
  const summary = details.querySelector(":scope > summary").getBoundingClientRect();
  const inside = [...details.children].filter(c => c.tagName !== "SUMMARY");
  report.details.push({
    open: details.open,
    summary: [summary.width, summary.height],
    // What of the details shows below its summary, and whether any of its content does.
    below: details.getBoundingClientRect().height - summary.height,
    shown: inside.filter(c => c.checkVisibility()).length,
  });
}
for (const table of document.querySelectorAll("table")) {
  const box = table.getBoundingClientRect();
  report.tables.push({
    rows: table.querySelectorAll("tbody tr").length,
    columns: table.querySelectorAll("thead th").length,
    folded: table.closest("details") !== null,
    visible: table.checkVisibility(),
    grid: isGrid(table),
    height: box.height,
  });
}
if (!open) {
  done();
} else {
  for (const code of document.querySelectorAll("pre > code.language-mermaid")) {
    const chart = document.createElement("div");
    chart.className = "mermaid";
    chart.textContent = code.textContent;
    code.parentElement.replaceWith(chart);
  }
  mermaid.initialize({startOnLoad: false, securityLevel: "strict"});
  mermaid.run().catch(e => { report.error = String(e?.message ?? e); }).then(() => {
    for (const svg of document.querySelectorAll("div.mermaid svg")) {
      const line = svg.querySelector("g[class^='line-plot'] path");
      report.charts.push({
        kind: svg.getAttribute("aria-roledescription"),
        title: svg.querySelector("g.chart-title text")?.textContent ?? null,
        labels: [...svg.querySelectorAll("g.bottom-axis g.label text")].map(t => t.textContent),
        points: line ? (line.getAttribute("d").match(/[ML]/g) || []).length : 0,
        bars: svg.querySelectorAll("g[class^='bar-plot'] rect").length,
        width: svg.getBoundingClientRect().width,
      });
    }
    done();
  });
}
"""


def page(tmp_path: Path, markdown: str, name: str) -> Path:
    """A page like a comment on GitHub: the rendered body in a ``markdown-body`` article."""
    assert MARKDOWN_CSS.is_file(), f"{MARKDOWN_CSS} is missing: run scripts/bootstrap"
    assert MERMAID_JS.is_file(), f"{MERMAID_JS} is missing: run scripts/bootstrap"
    path = tmp_path / f"{name}.html"
    path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<link rel='stylesheet' href='{MARKDOWN_CSS.as_uri()}'>"
        "<style>.markdown-body{box-sizing:border-box;max-width:980px;margin:0 auto;"
        "padding:16px}</style>"
        f"<script src='{MERMAID_JS.as_uri()}'></script></head>"
        f"<body><article class='markdown-body'>{github_html(markdown)}</article>"
        f"<script>{REPORT_SCRIPT}</script></body></html>",
        encoding="utf-8",
    )
    return path


def browse(tmp_path: Path, path: Path, fragment: str = "") -> dict[str, object]:
    """What the page reported, after its scripts ran (virtual time lets mermaid finish)."""
    dom = chromium(
        tmp_path,
        "--virtual-time-budget=20000",
        f"--window-size={WIDTH},900",
        "--dump-dom",
        path.as_uri() + fragment,
    )
    found = re.search(r'data-report="([^"]*)"', dom)
    assert found, "the page never reported (its script failed?)"
    report: dict[str, object] = json.loads(html.unescape(found[1]))
    return report


def screenshot(tmp_path: Path, path: Path, height: int, fragment: str = "") -> Path:
    png = tmp_path / f"{path.stem}{fragment.strip('#')}.png"
    chromium(
        tmp_path,
        "--virtual-time-budget=20000",
        f"--window-size={WIDTH},{height}",
        f"--screenshot={png}",
        path.as_uri() + fragment,
    )
    return png


def expected_charts(series: Sequence[MetricSeries]) -> list[tuple[str, list[str], int]]:
    """Each chart's title, x labels and number of values, from its block."""
    found = []
    for one in series:
        chart = block(one)
        assert chart is not None
        title, x_axis, _y, data = statements(chart)
        found.append((strings_of(title)[0], strings_of(x_axis)[1:], data.count(",") + 1))
    return found


def markdown_tables(markdown: str) -> list[tuple[int, int]]:
    """Each table the markdown writes: its columns (header cells) and body rows."""
    tables: list[tuple[int, int]] = []
    lines = markdown.split("\n")
    for at, line in enumerate(lines):
        if line.startswith("|") and at + 1 < len(lines) and lines[at + 1].startswith("|---"):
            rows = 0
            while at + 2 + rows < len(lines) and lines[at + 2 + rows].startswith("|"):
                rows += 1
            tables.append((line.count("|") - 1, rows))
    return tables


def charts_of(report: dict[str, object]) -> list[dict[str, object]]:
    charts = report["charts"]
    assert isinstance(charts, list)
    return charts


@pytest.mark.slow
def test_the_comment_is_laid_out_collapsed_with_its_tables(tmp_path: Path) -> None:
    series = chart_series()
    body = with_charts(demo(), series)
    path = page(tmp_path, body, "comment")
    report = browse(tmp_path, path)
    details = report["details"]
    assert isinstance(details, list)
    assert len(details) == 5  # the golden comment's four (a UDP loss detail), the charts'
    for one in details:
        assert one["open"] is False
        width, height = one["summary"]
        assert width > 100  # the summary is a visible line of text
        assert height > 10
        assert one["shown"] == 0  # and nothing else of it is
        assert one["below"] < 1
    tables = report["tables"]
    assert isinstance(tables, list)
    assert [(t["columns"], t["rows"]) for t in tables] == markdown_tables(body)
    assert len(tables) == 7
    for table in tables:
        if table["folded"]:
            assert table["visible"] is False
        else:  # a grid, its header and each row at least a line of text tall
            assert table["visible"] is True
            assert table["grid"] is True
            assert table["height"] >= 20 * (1 + table["rows"])
    png = screenshot(tmp_path, path, 900)
    pixels = decode_png(png.read_bytes())
    assert (len(pixels[0]), len(pixels)) == (WIDTH, 900)
    assert Counter(p for row in pixels for p in row)[(255, 255, 255)] < WIDTH * 900  # not blank


@pytest.mark.slow
def test_mermaid_draws_each_chart_with_its_points_and_bars(tmp_path: Path) -> None:
    series = chart_series()
    path = page(tmp_path, with_charts(demo(), series), "charts")
    report = browse(tmp_path, path, "#open")
    assert "error" not in report, report.get("error")
    details, tables = report["details"], report["tables"]
    assert isinstance(details, list)
    assert isinstance(tables, list)
    assert all(d["open"] and d["shown"] > 0 for d in details)
    assert all(t["visible"] and t["grid"] for t in tables)
    assert all(t["height"] >= 20 * (1 + t["rows"]) for t in tables)
    drawn = charts_of(report)
    assert [c["kind"] for c in drawn] == ["xychart"] * 3
    assert [(c["title"], c["labels"]) for c in drawn] == [
        (title, labels) for title, labels, _ in expected_charts(series)
    ]
    # The line: three commits of main and one push; the bars: base and PR.
    assert [(c["points"], c["bars"]) for c in drawn] == [(4, 0), (0, 2), (3, 0)]
    height = report["height"]
    assert isinstance(height, int)
    png = screenshot(tmp_path, path, min(height, 6000), "#open")
    pixels = decode_png(png.read_bytes())
    assert len(pixels) == min(height, 6000)
    blue = Counter(p for row in pixels for p in row)[CHART_BLUE]
    assert blue > 2 * 150 * 180  # the two bars alone cover more than this


@pytest.mark.slow
def test_mermaid_takes_every_hostile_label_as_text(tmp_path: Path) -> None:
    series = [
        MetricSeries(h, h, h, h, history([1.0, 2.0], [3.0]), base_label=h)
        for h in hostile_strings()
    ]
    body = "\n\n".join(b for b in map(block, series) if b is not None) + "\n"
    report = browse(tmp_path, page(tmp_path, body, "hostile"), "#open")
    assert "error" not in report, report.get("error")
    drawn = charts_of(report)
    expected = expected_charts(series)
    assert len(drawn) == len(expected) == len(series)
    for chart, (title, labels, values) in zip(drawn, expected, strict=True):
        assert chart["kind"] == "xychart", title
        assert chart["title"] == title
        assert chart["labels"] == labels
        assert chart["points"] == values == 3
