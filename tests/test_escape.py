"""Untrusted text never becomes markup, a mention, a reference or a link."""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfbot.engine.show.escape import (
    DEFAULT_IGNORABLE,
    MAX_COMBINING_MARKS,
    ZWSP,
    clean,
    code,
    longest_mark_run,
    short_sha,
    text,
)

SHA = "a5c3785ed8d6a35868bc169f07e40e889087fd2e"


@pytest.mark.parametrize(
    ("hostile", "must_not_contain"),
    [
        pytest.param("@octocat", "@octocat", id="mention"),
        pytest.param("@org/team", "@org", id="team-mention"),
        pytest.param("fixes #123", "#123", id="reference"),
        pytest.param("owner/repo#9", "#9", id="cross-repo-reference"),
        pytest.param("see GH-12", "GH-12", id="gh-reference"),
        pytest.param("see gh-7", "gh-7", id="gh-reference-lower"),
        pytest.param("see Gh-3", "Gh-3", id="gh-reference-mixed-case"),
        pytest.param(SHA, SHA[:7], id="bare-sha"),
        pytest.param(f"fixed in {SHA[:7]}", SHA[:7], id="short-sha"),
        pytest.param(f"acme/widget@{SHA}", SHA[:7], id="repo-at-sha"),
        pytest.param(f"mallory@{SHA}", SHA[:7], id="user-at-sha"),
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
    assert code("qemu_x86/atom") == "<code>qemu_x86/atom</code>"
    assert text("tcp4 5.970 Mbps") == "tcp4 5.970 Mbps"


def test_empty_code_says_so() -> None:
    assert code("\u202e") == "<code>(empty)</code>"


# GitHub's references as they are found in the rendered (decoded) text.
LIVE = {
    "mention": re.compile(r"@[A-Za-z0-9]"),
    "reference": re.compile(r"#[0-9]"),
    "gh-reference": re.compile(r"gh-[0-9]", re.IGNORECASE),
    "sha": re.compile(r"[0-9A-Fa-f]{7,}"),
    "url": re.compile(r"://|www\.", re.IGNORECASE),
}


def assert_not_live(escaped: str) -> None:
    # Markup is read in the raw body; references in the decoded text.
    assert not re.search(r"<|\]\(|!\[|`|\|", escaped), escaped
    decoded = html.unescape(escaped)
    for name, pattern in LIVE.items():
        assert not pattern.search(decoded), (name, escaped)
    # The only invisible character left is the zero-width space perfbot itself inserts.
    hidden = {char for char in decoded if char in DEFAULT_IGNORABLE} - {ZWSP}
    assert not hidden, [f"U+{ord(char):04X}" for char in hidden]
    assert longest_mark_run(decoded) <= MAX_COMBINING_MARKS, escaped


@pytest.mark.parametrize(
    "filler",
    [
        "\u3164",
        "\u115f",
        "\u1160",
        "\uffa0",
        "\u034f",
        "\u17b4",
        "\u180b",
        "\u2800",
        "\ufe0f",
        "\u2065",
        "\ufff0",
        "\U000e0100",
        "\U000e0041",
        "\U0001d173",
        "\U0001bca0",
        "\u00ad",
    ],
)
def test_default_ignorable_and_filler_characters_are_dropped(filler: str) -> None:
    # U+3164 and friends are letters (Lo) or marks (Mn), so no category rule catches them.
    assert clean(f"rx{filler}{filler}tx") == "rxtx"
    assert filler not in code(f"{filler}@{filler}admin")


def test_a_name_of_fillers_only_is_empty() -> None:
    assert code("\u3164\u3164") == "<code>(empty)</code>"


def test_combining_stacks_are_cut() -> None:
    zalgo = "Z" + "\u0301\u0316\u0334\u0358\u035c" * 20 + "a"
    assert clean(zalgo) == "Z\u0301\u0316\u0334a"
    assert longest_mark_run(text(zalgo)) == MAX_COMBINING_MARKS
    # Real accented text keeps its marks.
    assert clean("Ve\u0302\u0301t") == "Ve\u0302\u0301t"


def test_gh_reference_and_sha_still_read_the_same() -> None:
    for value in ("GH-12", f"acme/widget@{SHA}", "gh-7 and GH-3"):
        assert html.unescape(text(value)).replace(ZWSP, "") == value


def test_short_sha_keeps_seven_hex_digits_only() -> None:
    assert short_sha(SHA) == "<code>a5c3785</code>"
    assert short_sha("<b>@x") == "<code>b</code>"
    assert short_sha("") == "<code>(unknown)</code>"


# Pieces that become references, links, markup or invisible text if passed through.
TRICKY = st.sampled_from(
    [
        "GH-",
        "gh-",
        "Gh-",
        "#",
        "@",
        "12",
        "7",
        "a5c3785",
        "ed8d6a3",
        "deadbeef",
        "/",
        "acme",
        "://",
        "www.",
        "<b>",
        "<",
        "!",
        "-",
        " ",
        "\n",
        "\u3164",
        "\u115f",
        "\uffa0",
        "\u200b",
        "\u200d",
        "\u034f",
        "\ufe0f",
        "\U000e0041",
        "\u00ad",
        "\u0301",
        "\u0316\u0334\u0358",
        "\u20dd",
        "e",
        "F",
    ]
)
TRICKY_TEXT = st.one_of(st.lists(TRICKY, min_size=1, max_size=30).map("".join), st.text())


@settings(max_examples=400, deadline=None)
@given(value=TRICKY_TEXT)
def test_escaped_text_is_never_live(value: str) -> None:
    assert_not_live(text(value))
    assert_not_live(code(value)[len("<code>") : -len("</code>")])


# An underscore or asterisk that could open or close emphasis: one without a letter or
# digit on both sides (CommonMark's flanking rules; an asterisk may always be emphasis).
LIVE_EMPHASIS = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|[*~]")


@pytest.mark.parametrize(
    ("name", "inner"),
    [
        ("qemu_x86_64", "qemu_x86_64"),
        ("tcp4_nodelay_mbps", "tcp4_nodelay_mbps"),
        ("udp_fpga_rx_20M.lost_percent", "udp_fpga_rx_20M.lost_percent"),
        ("ünï_code", "ünï&#95;code"),  # ASCII neighbours only: a rule simple to check
    ],
)
def test_an_underscore_inside_a_word_needs_no_entity(name: str, inner: str) -> None:
    assert code(name) == f"<code>{inner}</code>"


@pytest.mark.parametrize(
    "hostile",
    ["_it_", "__bold__", "a _b_ c", "x_ y", "_", "snake_case_", "a__b", "*a*", "a*b*c", "~~s~~"],
)
def test_emphasis_cannot_be_injected_through_an_underscore(hostile: str) -> None:
    inner = code(hostile)[len("<code>") : -len("</code>")]
    assert not LIVE_EMPHASIS.search(inner), inner
    assert html.unescape(inner) == hostile


def test_text_outside_code_still_encodes_every_underscore() -> None:
    assert text("qemu_x86") == "qemu&#95;x86"


@settings(max_examples=400, deadline=None)
@given(
    value=st.one_of(
        st.lists(st.sampled_from(["_", "a", "9", " ", "*", "-", ".", "é", "#"]), max_size=20).map(
            "".join
        ),
        st.text(),
    )
)
def test_no_underscore_left_in_code_can_be_emphasis(value: str) -> None:
    inner = code(value)[len("<code>") : -len("</code>")]
    assert not LIVE_EMPHASIS.search(inner), inner
    assert_not_live(inner)
