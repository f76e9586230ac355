"""Untrusted text never becomes markup, a mention, a reference or a link."""

from __future__ import annotations

import html
import re

import pytest

from perfbot.escape import ZWSP, clean, code, text


@pytest.mark.parametrize(
    ("hostile", "must_not_contain"),
    [
        pytest.param("@octocat", "@octocat", id="mention"),
        pytest.param("@org/team", "@org", id="team-mention"),
        pytest.param("fixes #123", "#123", id="reference"),
        pytest.param("owner/repo#9", "#9", id="cross-repo-reference"),
        pytest.param("[x](https://evil.example)", "](", id="link"),
        pytest.param("![x](https://evil.example/a.png)", "![", id="image"),
        pytest.param("https://evil.example", "https://", id="autolink"),
        pytest.param("www.evil.example", "www.", id="www-autolink"),
        pytest.param("<img src=x onerror=alert(1)>", "<img", id="html"),
        pytest.param("</code><b>bold</b>", "</code><b>", id="close-code"),
        pytest.param("a|b", "|", id="table-pipe"),
        pytest.param("```\nfence", "`", id="fence"),
        pytest.param("-->", "-->", id="comment-close"),
        pytest.param(":+1:", ":+1:", id="emoji-shortcode"),
        pytest.param("**bold**", "**", id="emphasis"),
    ],
)
def test_hostile_text_is_inert(hostile: str, must_not_contain: str) -> None:
    for rendered in (text(hostile), code(hostile)[len("<code>") : -len("</code>")]):
        assert must_not_contain not in rendered
        # A reader still sees the original characters once GitHub decodes the references.
        assert html.unescape(rendered).replace(ZWSP, "") == clean(hostile)


def test_decoded_text_breaks_mentions_and_references() -> None:
    # GitHub looks for mentions in the rendered text, after references are decoded.
    decoded = html.unescape(text("ping @octocat about #42 and https://x.example"))
    assert not re.search(r"@\w", decoded)
    assert not re.search(r"#\d", decoded)
    assert "://" not in decoded


@pytest.mark.parametrize(
    "invisible",
    ["\u202e", "\u2066", "\u200d", "\x00", "\x1b[31m", "\ue000"],
    ids=["rlo", "lri", "zwj", "nul", "ansi-escape", "private-use"],
)
def test_control_and_bidi_characters_are_dropped(invisible: str) -> None:
    assert clean(f"a{invisible}b").replace("[31m", "") == "ab"


def test_newlines_become_spaces_and_length_is_capped() -> None:
    assert clean("one\ntwo\r\nthree") == "one two three"
    capped = clean("x" * 500, max_length=50)
    assert len(capped) == 50
    assert capped.endswith("…")


def test_plain_names_stay_readable() -> None:
    assert code("qemu_x86/atom") == "<code>qemu&#95;x86/atom</code>"
    assert text("tcp4 5.970 Mbps") == "tcp4 5.970 Mbps"


def test_empty_code_says_so() -> None:
    assert code("\u202e") == "<code>(empty)</code>"
