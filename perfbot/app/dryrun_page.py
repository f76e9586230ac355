"""``GET /dry-run``: the writes a dry run did not send, newest first, with the comment
each would have posted (``perfbot serve --dry-run``).

The markdown is shown as perfbot would have sent it, and rendered by cmark-gfm when that
is installed, in its safe mode (raw HTML left out): the text comes from pull requests,
and the page allows no script at all. ``?format=json`` gives the same list as JSON.
"""

from __future__ import annotations

import html
import importlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Final

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from perfbot.github.dryrun import DryRun, WouldWrite

# Nothing on the page may run or load anything: its text is other people's.
_HEADERS: Final = {
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'",
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
}
_STYLE: Final = """
body { font: 14px/1.5 system-ui, sans-serif; margin: 2em auto; max-width: 60em; }
article { border: 1px solid #d0d7de; border-radius: 6px; margin: 1em 0; padding: 0 1em; }
h2 { font-size: 1em; } pre { background: #f6f8fa; padding: 1em; overflow: auto; }
.meta { color: #57606a; } code { font-size: 0.9em; }
"""


def markdown_renderer() -> Callable[[str], str] | None:
    """cmark-gfm's GitHub-flavoured renderer in safe mode, or None when not installed."""
    try:
        cmarkgfm = importlib.import_module("cmarkgfm")
    except ImportError:
        return None
    render: Callable[[str], str] = cmarkgfm.github_flavored_markdown_to_html
    return render


def dry_run_endpoint(dry_run: DryRun | None) -> Callable[[Request], Awaitable[Response]]:
    """The page's handler; 404 with a sentence when perfbot is not in a dry run."""
    render = markdown_renderer()

    # A coroutine: it reads the records on the event loop that writes them.
    async def page(request: Request) -> Response:
        if dry_run is None:
            return JSONResponse(
                {"error": "perfbot is not in a dry run (perfbot serve --dry-run)"}, status_code=404
            )
        entries = dry_run.entries()
        if request.query_params.get("format") == "json":
            return JSONResponse(
                {
                    "dry_run": True,
                    "total": dry_run.total,
                    "writes": [entry.as_json() for entry in entries],
                },
                headers=_HEADERS,
            )
        return HTMLResponse(page_html(entries, dry_run.total, render), headers=_HEADERS)

    return page


def page_html(entries: list[WouldWrite], total: int, render: Callable[[str], str] | None) -> str:
    shown = f"the last {len(entries)} of {total}" if total > len(entries) else f"{total}"
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>perfbot dry run</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>perfbot dry run: nothing is written to GitHub</h1>",
        f"<p>{shown} write(s) perfbot would have made, newest first. Every one is also a "
        "JSON line in perfbot's log (key <code>would_write</code>).</p>",
    ]
    parts += [_entry_html(entry, render) for entry in entries]
    parts.append("</body></html>")
    return "\n".join(parts)


def _entry_html(entry: WouldWrite, render: Callable[[str], str] | None) -> str:
    e = html.escape
    when = datetime.fromtimestamp(entry.at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    meta = " · ".join(
        item
        for item in (
            when,
            f"repository {e(entry.repository)}" if entry.repository else "",
            f"installation {entry.installation}" if entry.installation is not None else "",
            f"delivery <code>{e(entry.delivery)}</code>" if entry.delivery else "",
        )
        if item
    )
    parts = [
        "<article>",
        f"<h2>would {e(entry.summary)}</h2>",
        f"<p class='meta'><code>{e(entry.method)} {e(entry.path)}</code><br>{meta}</p>",
    ]
    if entry.body:
        if render is not None:
            parts.append(f"<section class='rendered'>{render(entry.body)}</section>")
        parts.append(
            f"<details{'' if render else ' open'}><summary>markdown</summary>"
            f"<pre>{e(entry.body)}</pre></details>"
        )
    parts.append("</article>")
    return "\n".join(parts)
