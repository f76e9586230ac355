"""Draws docs/images/comment.png: the demo's comment (tests/golden/demo.md) as GitHub shows it.

GitHub's engine (cmark-gfm) renders the markdown, GitHub's markdown CSS (fetched by
scripts/bootstrap) styles it, and headless Chromium takes the screenshot. Run it after the
comment's look changed on purpose:

    .venv/bin/python scripts/comment_picture.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import cmarkgfm
from cmarkgfm.cmark import Options

REPO = Path(__file__).resolve().parents[1]
COMMENT = REPO / "tests" / "golden" / "demo.md"
PICTURE = REPO / "docs" / "images" / "comment.png"
ASSETS = Path(
    os.environ.get("PERFBOT_RENDER_ASSETS")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "perfbot" / "render"
)
CSS = ASSETS / "github-markdown-css-5.9.0" / "github-markdown-light.css"
EXTENSIONS = ["table", "strikethrough", "autolink", "tagfilter"]
WIDTH, HEIGHT = 900, 772

PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>{css}
body {{ margin: 0; background: #fff; font-family: sans-serif; }}
.box {{ margin: 12px; border: 1px solid #d1d9e0; border-radius: 6px; }}
.head {{ background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px;
         font: 14px -apple-system, "Segoe UI", sans-serif; color: #59636e; }}
.head b {{ color: #1f2328; }}
.markdown-body {{ padding: 16px; font-size: 14px; }}
</style></head><body><div class="box"><div class="head"><b>perfbot</b> bot commented</div>
<article class="markdown-body">{body}</article></div></body></html>"""


def main() -> int:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None or not CSS.is_file():
        print("comment_picture: needs chromium and the render assets: run scripts/bootstrap")
        return 1
    body = cmarkgfm.markdown_to_html_with_extensions(
        COMMENT.read_text(encoding="utf-8"),
        options=Options.CMARK_OPT_UNSAFE,
        extensions=EXTENSIONS,
    )
    with tempfile.TemporaryDirectory() as work:
        page = Path(work) / "comment.html"
        page.write_text(PAGE.format(css=CSS.read_text(encoding="utf-8"), body=body), "utf-8")
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--disable-background-networking",
                f"--user-data-dir={work}/profile",
                f"--window-size={WIDTH},{HEIGHT}",
                f"--screenshot={PICTURE}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    print(f"wrote {PICTURE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
