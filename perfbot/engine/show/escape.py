"""Making untrusted report text inert in a GitHub comment.

Everything a report carries (metric and platform names, units, failure reasons) is
written by whoever controls the measurement workflow, which for a fork PR is the PR's
author. GitHub would turn parts of such text into mentions, cross-references, links,
images, HTML or table and fence breaks. The functions here emit text in which none of
that can happen:

* every ASCII character other than a letter, a digit, a space or one of ``.,-/%+=``
  (never markup inside a line) becomes a numeric
  character reference (``&#42;``): CommonMark shows it as the literal character and
  never treats it as markup, so ``*``, ``_``, ``|``, backticks, ``[``, ``<`` and
  friends are inert, inside tables and HTML blocks alike;
* GitHub finds mentions, references and bare URLs in the *rendered* text, where
  character references are already decoded, so a zero-width space follows every ``@``
  and ``#``, splits ``://`` and ``www.``, follows the ``-`` of ``GH-<n>`` (any case), and
  cuts every run of seven or more hex digits (a commit SHA, bare or as ``owner/repo@sha``)
  into pieces of six;
* control, format (bidirectional overrides, zero-width joiners), private-use and
  unassigned characters, every Unicode default-ignorable code point (fillers such as
  U+3164, variation selectors, tag characters) are dropped, and a stack of combining
  marks is cut to ``MAX_COMBINING_MARKS`` per base character; line breaks become spaces;
* the text is cut to a maximum length before encoding.

Only what could become markup is encoded: in a ``<code>`` name an underscore between two
ASCII letters or digits (``qemu_x86_64``) stays as typed, because CommonMark lets such an
underscore neither open nor close emphasis (it is both left- and right-flanking and has no
punctuation beside it). Every other underscore is still a character reference.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Final

ZWSP = "\u200b"
_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_URL_PARTS = re.compile(r"(:)(//)|(www)(\.)", re.IGNORECASE)
# GitHub links GH-26 (any case) to issue 26 just like #26.
_GH_REFERENCE = re.compile(r"(gh-)(?=[0-9])", re.IGNORECASE)
# GitHub links a commit SHA of seven or more hex digits; a zero-width space every six
# characters leaves no such run (the space is not a word character, so each piece stands
# alone and is too short).
_HEX_RUN = re.compile(r"[0-9A-Fa-f]{7,}")
_SHA_PIECE = 6
# Punctuation that is never markup in the middle of a line stays readable in the raw body.
_PLAIN_PUNCTUATION = frozenset(".,-/%+=")
_ENCODED = {
    code: f"&#{code};"
    for code in range(0x21, 0x7F)
    if not chr(code).isalnum() and chr(code) not in _PLAIN_PUNCTUATION
}
_ENCODED[ord("@")] = "&#64;" + ZWSP
_ENCODED[ord("#")] = "&#35;" + ZWSP
# An underscore inside a word: never emphasis (see the module docstring). ASCII only, and
# looked for after the zero-width spaces are in, so both neighbours are final characters.
_INTRAWORD_UNDERSCORE = re.compile(r"(?<=[A-Za-z0-9])_(?=[A-Za-z0-9])")

# Default_Ignorable_Code_Point as Unicode's DerivedCoreProperties.txt defines it
# (unicodedata has no such property). Many are format characters (Cf) and were dropped
# anyway; the others are letters or marks that render as nothing: the Hangul fillers
# U+115F, U+1160, U+3164 and U+FFA0, the combining grapheme joiner, variation selectors,
# Khmer inherent vowels, and reserved code points meant to stay invisible.
_DEFAULT_IGNORABLE_RANGES = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
# Blank glyphs that are not default-ignorable but draw nothing all the same (the braille
# pattern blank is a symbol, So): they make a name look like another or like nothing.
_BLANK_GLYPHS = frozenset({"\u2800"})
DEFAULT_IGNORABLE = _BLANK_GLYPHS | frozenset(
    chr(code) for first, last in _DEFAULT_IGNORABLE_RANGES for code in range(first, last + 1)
)
# Marks kept on one base character: enough for any real script's name (Vietnamese uses
# two), too few to stack "Zalgo" text over the lines above and below.
MAX_COMBINING_MARKS = 3


def is_hidden(char: str) -> bool:
    """Whether ``char`` shows nothing or hides what text says: control, format, private,
    unassigned, a line separator, or default-ignorable (fillers, variation selectors)."""
    return unicodedata.category(char) in _DROPPED_CATEGORIES or char in DEFAULT_IGNORABLE


def is_mark(char: str) -> bool:
    """Whether ``char`` is a combining mark (drawn on the character before it)."""
    return unicodedata.category(char).startswith("M")


def longest_mark_run(value: str) -> int:
    """The most combining marks that follow one another in ``value``."""
    if value.isascii():
        return 0  # no mark is ASCII; this keeps long plain names cheap
    longest = run = 0
    for char in value:
        run = run + 1 if is_mark(char) else 0
        longest = max(longest, run)
    return longest


def clean(text: str, max_length: int = 120) -> str:
    """``text`` on one line, without invisible or control characters, at most ``max_length``."""
    if text.isascii() and text.isprintable():
        flat = " ".join(text.split())  # the common case: a plain name, nothing to drop
    else:
        kept = []
        marks = 0
        for char in text:
            if char in "\r\n\t\v\f":
                kept.append(" ")
                marks = 0
            elif is_hidden(char):
                continue
            elif is_mark(char):
                marks += 1
                if marks <= MAX_COMBINING_MARKS:
                    kept.append(char)
            else:
                kept.append(char)
                marks = 0
        flat = " ".join("".join(kept).split())
    if len(flat) > max_length:
        flat = flat[: max_length - 1].rstrip() + "…"
    return flat


def text(value: str, max_length: int = 200) -> str:
    """Untrusted text as inert markdown (see the module docstring)."""
    if len(value) <= _MEMO_LENGTH:
        return _text_once(value, max_length)
    return _text(value, max_length)


def code(value: str, max_length: int = 120) -> str:
    """Untrusted text as an inert ``<code>`` element, usable in tables and in HTML blocks.

    Underscores inside a word stay readable (``qemu_x86``); the pieces around them are
    encoded like ``text``, and their letters and digits are never encoded, so each kept
    underscore still has a letter or digit on both sides.
    """
    if len(value) <= _MEMO_LENGTH:
        return _code_once(value, max_length)
    return _code(value, max_length)


# A report's names come back in every row of every comment: a short one is made inert
# once per process (~5 µs each time otherwise). Bounded, so that an artifact's names
# cannot grow the memory: at most _MEMO_ENTRIES of each, the least recently used dropped.
_MEMO_LENGTH: Final = 256
_MEMO_ENTRIES: Final = 1024


def _text(value: str, max_length: int) -> str:
    return _defused(value, max_length).translate(_ENCODED)


def _code(value: str, max_length: int) -> str:
    pieces = _INTRAWORD_UNDERSCORE.split(_defused(value, max_length))
    return f"<code>{'_'.join(piece.translate(_ENCODED) for piece in pieces) or '(empty)'}</code>"


_text_once = functools.lru_cache(maxsize=_MEMO_ENTRIES)(_text)
_code_once = functools.lru_cache(maxsize=_MEMO_ENTRIES)(_code)


def title(value: str, max_length: int = 60) -> str:
    """Untrusted text in an issue's title: plain text to GitHub (no markup, no entities),
    where a backtick still opens code and ``@``, ``#`` and ``GH-`` still link. Backticks
    become apostrophes, and mentions, references, links and SHAs are broken as ``text``
    breaks them."""
    flat = _defused(value, max_length).replace("`", "'")
    return flat.replace("@", "@" + ZWSP).replace("#", "#" + ZWSP)


def _defused(value: str, max_length: int) -> str:
    """``value`` cleaned, with its links, references and SHAs broken; not yet encoded."""
    flat = _URL_PARTS.sub(_split_url_part, clean(value, max_length))
    flat = _GH_REFERENCE.sub(r"\1" + ZWSP, flat)
    return _HEX_RUN.sub(_split_hex_run, flat)


_NOT_HEX_DIGITS = re.compile("[^0-9a-f]+")


def short_sha(value: str) -> str:
    """A commit SHA that GitHub gave perfbot, as ``<code>`` with its first seven digits.

    Only hex digits are kept, so the element is inert whatever the value; it is not
    split like untrusted text because showing the commit is the point.
    """
    digits = _NOT_HEX_DIGITS.sub("", value.lower())[:7]
    return f"<code>{digits or '(unknown)'}</code>"


def _split_url_part(match: re.Match[str]) -> str:
    first, second = (match.group(1), match.group(2)) if match.group(1) else match.group(3, 4)
    return f"{first}{ZWSP}{second}"


def _split_hex_run(match: re.Match[str]) -> str:
    run = match.group(0)
    return ZWSP.join(run[i : i + _SHA_PIECE] for i in range(0, len(run), _SHA_PIECE))
