"""The App's comment with its history, in headless Chromium with GitHub's markdown CSS and
mermaid (the harness of tests/test_render_browser.py): collapsed, the history's sections
are summaries only; opened, their tables are grids and the chart an xychart of the
branch's commits then this PR's pushes; a hostile name changes none of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_history_sections import body, history
from tests.test_render_browser import browse, charts_of, markdown_tables, page

pytestmark = pytest.mark.slow
HOSTILE = 'rx"]; %%{init}%% --> ```</details> @mallory #1 [x]'


@pytest.mark.parametrize("name", ["tcp4_mbps", HOSTILE], ids=["plain", "hostile"])
def test_the_history_is_collapsed_then_drawn(tmp_path: Path, name: str) -> None:
    markdown = body(history(name, unit="Mbps"), name=name)
    closed = browse(tmp_path, page(tmp_path, markdown, "closed"))
    details = closed["details"]
    assert isinstance(details, list)
    assert len(details) == 4  # unchanged metrics, pushes, recent values, charts
    assert all(d["open"] is False and d["shown"] == 0 for d in details)
    opened = browse(tmp_path, page(tmp_path, markdown, "opened"), "#open")
    assert "error" not in opened, opened.get("error")
    tables = opened["tables"]
    assert isinstance(tables, list)
    assert [(t["columns"], t["rows"]) for t in tables] == markdown_tables(markdown)
    assert all(t["visible"] and t["grid"] for t in tables)
    (chart,) = charts_of(opened)
    assert chart["kind"] == "xychart"
    labels = chart["labels"]
    assert isinstance(labels, list)
    assert labels[-3:] == ["PR aaaaaaa", "PR bbbbbbb", "PR ccccccc"]
    assert chart["points"] == 8 + 3  # main's eight commits, then the three pushes
