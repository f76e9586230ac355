"""Markdown as GitHub renders a comment: cmark-gfm (through ``cmarkgfm``) with GitHub's
extensions, and where GitHub's markdown CSS and mermaid are found on this machine.

``scripts/bootstrap`` installs ``cmarkgfm`` (perfbot's ``try`` extra) and fetches the two
npm packages, pinned, into ``~/.cache/perfbot/render`` (``$PERFBOT_RENDER_ASSETS``).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfbot.errors import PerfbotError

# GitHub's extensions of CommonMark; tagfilter drops <script>, <iframe> and the like.
GITHUB_EXTENSIONS = ("table", "strikethrough", "autolink", "tagfilter")
ASSETS_VARIABLE = "PERFBOT_RENDER_ASSETS"
MARKDOWN_CSS = Path("github-markdown-css-5.9.0") / "github-markdown-light.css"
MERMAID_JS = Path("mermaid-11.12.2") / "dist" / "mermaid.min.js"


class RenderUnavailable(PerfbotError):
    """What draws a comment as GitHub does is not installed on this machine."""


def _cmarkgfm() -> Any:
    try:
        return importlib.import_module("cmarkgfm")
    except ModuleNotFoundError:
        raise RenderUnavailable(
            "drawing the comment as GitHub does needs the Python package cmarkgfm, which is "
            "not installed: run scripts/bootstrap, or pip install 'perfbot[try]'"
        ) from None


def check_markdown() -> None:
    """RenderUnavailable now, rather than on the first comment, when cmarkgfm is missing."""
    _cmarkgfm()


def github_html(markdown: str) -> str:
    """``markdown`` rendered by GitHub's engine with GitHub's extensions (raw HTML kept, as
    cmark-gfm hands it to GitHub's sanitiser; tagfilter has already disarmed scripts)."""
    engine = _cmarkgfm()
    options = importlib.import_module("cmarkgfm.cmark").Options.CMARK_OPT_UNSAFE
    return str(
        engine.markdown_to_html_with_extensions(
            markdown, options=options, extensions=list(GITHUB_EXTENSIONS)
        )
    )


@dataclass(frozen=True)
class Assets:
    """GitHub's markdown CSS and mermaid, as files on this machine."""

    markdown_css: Path
    mermaid_js: Path


def render_assets() -> Assets:
    """The two files, or RenderUnavailable naming the one that is missing."""
    folder = Path(
        os.environ.get(ASSETS_VARIABLE)
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "perfbot" / "render"
    )
    assets = Assets(folder / MARKDOWN_CSS, folder / MERMAID_JS)
    for path in (assets.markdown_css, assets.mermaid_js):
        if not path.is_file():
            raise RenderUnavailable(
                f"drawing the comment as GitHub does needs {path}, which is missing: run "
                f"scripts/bootstrap (it fetches GitHub's markdown CSS and mermaid there)"
            )
    return assets
