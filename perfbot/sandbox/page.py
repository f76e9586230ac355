"""A pull request's conversation as GitHub shows it, served from the fake's state.

Each comment's body goes through GitHub's markdown engine (``sandbox.markdown``) into a
``markdown-body`` styled by GitHub's own CSS; mermaid draws the charts client-side, as
GitHub does, when their section is opened (``#open`` opens every section at load). Under
the comments: the reactions, then the checks box of the head commit with each check run's
conclusion, title and summary. The page asks ``/conversation`` again every second and
swaps in what changed, so it follows a scene as it is played.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Sequence
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Route

from perfbot.sandbox.fakegithub import CheckRun, Comment, FakeGitHub
from perfbot.sandbox.markdown import Assets, github_html
from perfbot.sandbox.page_style import PAGE_SCRIPT, PAGE_STYLE

EMOJI = {
    "+1": "👍",
    "-1": "👎",
    "laugh": "😄",
    "confused": "😕",
    "heart": "❤️",
    "hooray": "🎉",
    "rocket": "🚀",
    "eyes": "👀",
}
CONCLUSION_MARK = {"success": ("✓", "ok"), "failure": ("✗", "bad"), "neutral": ("■", "meh")}
# A fragment read while the fake's thread changes its state may meet a dict mid-change.
RENDER_ATTEMPTS = 5


@dataclass
class Conversation:
    """What the page shows: one pull request of the fake, and the scene's steps so far."""

    fake: FakeGitHub
    repo: str
    number: int
    steps: list[str] = field(default_factory=list)
    finished: bool = False


def conversation_app(conversation: Conversation, assets: Assets) -> Starlette:
    async def page(request: Request) -> Response:
        return HTMLResponse(_page(conversation))

    async def fragment(request: Request) -> Response:
        return HTMLResponse(render_fragment(conversation), headers={"cache-control": "no-store"})

    async def css(request: Request) -> Response:
        return FileResponse(assets.markdown_css, media_type="text/css")

    async def mermaid(request: Request) -> Response:
        return FileResponse(assets.mermaid_js, media_type="text/javascript")

    return Starlette(
        routes=[
            Route("/", page),
            Route("/conversation", fragment),
            Route("/assets/github-markdown.css", css),
            Route("/assets/mermaid.min.js", mermaid),
        ]
    )


def _page(conversation: Conversation) -> str:
    title = html.escape(f"{conversation.repo}#{conversation.number}")
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{title} · perfbot try</title>"
        "<link rel='stylesheet' href='/assets/github-markdown.css'>"
        f"<style>{PAGE_STYLE}</style>"
        "<script src='/assets/mermaid.min.js'></script></head><body>"
        f"<div id='conversation'>{render_fragment(conversation)}</div>"
        f"<script>{PAGE_SCRIPT}</script></body></html>"
    )


def render_fragment(conversation: Conversation) -> str:
    """The conversation's HTML, with a ``data-version`` that changes when anything does."""
    for _ in range(RENDER_ATTEMPTS):
        try:
            inner = _conversation(conversation)
            break
        except RuntimeError:  # "dictionary changed size during iteration"
            continue
    else:
        inner = "<p>The conversation is changing too fast to draw; it is asked again.</p>"
    version = hashlib.sha256(inner.encode()).hexdigest()[:16]
    finished = "yes" if conversation.finished else "no"
    return f"<div class='frame' data-version='{version}' data-finished='{finished}'>{inner}</div>"


def _conversation(conversation: Conversation) -> str:
    fake = conversation.fake
    repo = fake.repo(conversation.repo)
    pull = repo.pulls[conversation.number]
    comments = fake.comments_on(repo, pull.number)
    checks = fake.check_runs_for(repo, pull.head_sha)
    state = "Merged" if pull.merged else pull.state.capitalize()
    header = (
        "<header class='pr-header'>"
        f"<h1>{html.escape(pull.title)} <span class='number'>#{pull.number}</span></h1>"
        f"<p><span class='state state-{html.escape(pull.state)}'>{state}</span> "
        f"<b>{html.escape(pull.user)}</b> wants to merge into "
        f"<code>{html.escape(pull.base_ref)}</code> from <code>{html.escape(pull.head_ref)}</code>"
        f" · head <code>{html.escape(pull.head_sha[:7])}</code></p></header>"
    )
    timeline = "".join(_comment(fake, c) for c in comments) or (
        "<p class='empty'>No comments yet.</p>"
    )
    return (
        f"{header}<div class='layout'><main class='timeline'>{timeline}"
        f"{_checks(checks, pull.head_sha)}</main>"
        f"<aside class='sidebar'>{_steps(conversation.steps, conversation.finished)}</aside></div>"
    )


def _comment(fake: FakeGitHub, comment: Comment) -> str:
    bot = comment.user_type == "Bot"
    badge = "<span class='badge'>bot</span>" if bot else ""
    edited = " · <span class='edited'>edited</span>" if comment.edits else ""
    when = comment.created_at.strftime("%H:%M:%S")
    counts: dict[str, int] = {}
    for reaction in comment.reactions:
        counts[reaction.content] = counts.get(reaction.content, 0) + 1
    reactions = "".join(
        f"<span class='reaction' data-content='{html.escape(name)}'>"
        f"{EMOJI.get(name, html.escape(name))} {count}</span>"
        for name, count in counts.items()
    )
    return (
        f"<div class='comment{' by-bot' if bot else ''}' id='issuecomment-{comment.id}'>"
        f"<div class='avatar'>{html.escape(comment.user[:1].upper())}</div>"
        "<div class='box'><div class='box-header'>"
        f"<b class='author'>{html.escape(comment.user)}</b>{badge} commented at {when}{edited}"
        "</div>"
        f"<article class='markdown-body'>{github_html(comment.body)}</article>"
        f"{f'<div class=reactions>{reactions}</div>' if reactions else ''}"
        "</div></div>"
    )


def _checks(checks: Sequence[CheckRun], head_sha: str) -> str:
    if not checks:
        return (
            "<section class='checks'><div class='checks-header'>No checks on "
            f"<code>{html.escape(head_sha[:7])}</code> yet</div></section>"
        )
    failing = [c for c in checks if c.conclusion not in ("success", "neutral", "skipped")]
    summary = "Some checks were not successful" if failing else "All checks have passed"
    rows = "".join(_check(c) for c in checks)
    return (
        "<section class='checks'>"
        f"<div class='checks-header {'bad' if failing else 'ok'}'>{summary}"
        f"<span class='muted'> · {len(checks)} check run(s) on "
        f"<code>{html.escape(head_sha[:7])}</code></span></div>{rows}</section>"
    )


def _check(check: CheckRun) -> str:
    conclusion = check.conclusion or check.status
    mark, tone = CONCLUSION_MARK.get(conclusion, ("●", "meh"))
    title = check.output.get("title") or ""
    summary = check.output.get("summary") or ""
    details = (
        f"<details><summary>Summary</summary><article class='markdown-body'>"
        f"{github_html(summary)}</article></details>"
        if summary
        else ""
    )
    return (
        f"<div class='check' data-conclusion='{html.escape(conclusion)}'>"
        f"<span class='mark {tone}'>{mark}</span> <b>{html.escape(check.name)}</b> "
        f"<span class='conclusion'>{html.escape(conclusion)}</span>"
        f"<span class='muted'> — {html.escape(title)}</span>{details}</div>"
    )


def _steps(steps: Sequence[str], finished: bool) -> str:
    items = "".join(f"<li>{html.escape(step)}</li>" for step in steps)
    status = "played" if finished else "playing…"
    return f"<h2>perfbot try</h2><p class='muted'>The scene, {status}</p><ul>{items}</ul>"
