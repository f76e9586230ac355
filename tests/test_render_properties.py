"""Properties of the comment for any report text: size limit, no markup leaks, intact tables."""

from __future__ import annotations

import html
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfbot.engine.judge.compare import compare
from perfbot.engine.read.sides import SideReport
from perfbot.engine.show.escape import (
    DEFAULT_IGNORABLE,
    MAX_COMBINING_MARKS,
    ZWSP,
    longest_mark_run,
)
from perfbot.engine.show.render import RenderContext, render
from perfbot.model import FailedCase
from tests.builders import side

# Text a hostile report could carry: markdown and HTML syntax, mentions, references,
# URLs, control and bidirectional characters, and anything else Unicode has.
HOSTILE_PIECES = st.sampled_from(
    [
        "@",
        "@octocat",
        "#",
        "#12",
        "GH-12",
        "gh-7",
        "Gh-",
        "a5c3785ed8d6a35868bc169f07e40e889087fd2e",
        "acme/widget@",
        "deadbee",
        "\u3164",
        "\u115f",
        "\uffa0",
        "\u034f",
        "\ufe0f",
        "\U000e0041",
        "\u0301",
        "\u0316\u0334\u0358\u035c",
        "[",
        "]",
        "(",
        ")",
        "!",
        "<",
        ">",
        "|",
        "`",
        "```",
        "*",
        "_",
        "~",
        "\\",
        ":",
        "://",
        "https://evil.example/x.png",
        "www.",
        "<img src=x>",
        "<details>",
        "</code>",
        "-->",
        "<!--",
        "&",
        "&#64;",
        "\n",
        "\r",
        "\t",
        "\u202e",
        "\u2066",
        "\u200b",
        "\x00",
        "\x1b",
        "a",
        "Z",
        "9",
        " ",
        ".",
        "/",
    ]
)
HOSTILE_TEXT = st.one_of(
    st.lists(HOSTILE_PIECES, min_size=1, max_size=25).map("".join),
    st.text(min_size=1, max_size=60),
)
OUR_TAGS = {"code", "/code", "details", "/details", "summary", "/summary", "sub", "/sub"}


def hostile_comparison_body(name: str, platform: str, reason: str, unit: str) -> str:
    base = side({name: 1.0, "steady": 5.0}, platform=platform, unit=unit)
    head = side(
        {name: 2.0, "steady": 5.0},
        platform=platform,
        unit=unit,
        failures=[FailedCase(platform, name, reason)],
    )
    return render(compare(base, head), RenderContext(limit=65_536))


def assert_inert(body: str) -> None:
    tags = {m.lower() for m in re.findall(r"<(/?[A-Za-z][A-Za-z0-9]*)", body)}
    assert tags <= OUR_TAGS, tags - OUR_TAGS
    assert "](" not in body
    assert "![" not in body
    assert "://" not in body
    assert "-->" not in body.split("\n", 1)[1]  # only the marker line closes a comment
    decoded = html.unescape(body)
    assert not re.search(r"@[A-Za-z0-9]", decoded)
    assert not re.search(r"#[0-9]", decoded)
    assert not re.search(r"gh-[0-9]", decoded, re.IGNORECASE)
    assert not re.search(r"[0-9A-Fa-f]{7,}", decoded)  # a commit SHA, bare or after @
    assert not re.search(r"www\.", decoded, re.IGNORECASE)
    assert not (set(decoded) & DEFAULT_IGNORABLE) - {ZWSP}
    assert longest_mark_run(decoded) <= MAX_COMBINING_MARKS
    assert "\u202e" not in body
    assert "\x00" not in body


def assert_tables_intact(body: str) -> None:
    for table in re.findall(r"(?:^\|.*\|$\n?)+", body, re.MULTILINE):
        rows = table.strip("\n").split("\n")
        widths = {row.count("|") for row in rows}
        assert len(widths) == 1, rows


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=HOSTILE_TEXT, platform=HOSTILE_TEXT, reason=HOSTILE_TEXT, unit=HOSTILE_TEXT)
def test_report_text_never_becomes_markup(name: str, platform: str, reason: str, unit: str) -> None:
    body = hostile_comparison_body(name, platform, reason, unit)
    assert_inert(body)
    assert_tables_intact(body)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    platforms=st.integers(min_value=1, max_value=40),
    metrics=st.integers(min_value=1, max_value=1200),
    name_length=st.integers(min_value=1, max_value=300),
    moved_every=st.integers(min_value=1, max_value=7),
    failures=st.integers(min_value=0, max_value=400),
    limit=st.sampled_from([65_536, 20_000, 4_000]),
)
def test_body_never_exceeds_the_limit(
    platforms: int, metrics: int, name_length: int, moved_every: int, failures: int, limit: int
) -> None:
    base, head = SideReport(), SideReport()
    per_platform = max(1, metrics // platforms)
    for p in range(platforms):
        names = {f"{'@#|<'[i % 4] * name_length}{i}": 100.0 for i in range(per_platform)}
        side(names, platform=f"p{p}", into=base)
        moved = {n: 100.0 + (i % moved_every) * 3 for i, n in enumerate(names)}
        side(moved, platform=f"p{p}", into=head)
    head.failures.extend(FailedCase("p0", f"case{i}", "x" * 300) for i in range(failures))
    body = render(compare(base, head), RenderContext(limit=limit))
    assert len(body.encode("utf-8")) <= limit
    assert body.startswith("<!-- perfbot:report -->\n### Performance report: ")
