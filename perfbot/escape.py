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
* GitHub finds mentions, ``#123`` references and bare URLs in the *rendered* text, where
  references are already decoded, so a zero-width space follows every ``@`` and ``#``
  and splits ``://`` and ``www.``;
* control, format (bidirectional overrides, zero-width joiners), private-use and
  unassigned characters are dropped, line breaks become spaces;
* the text is cut to a maximum length before encoding.
"""

from __future__ import annotations

import re
import unicodedata

ZWSP = "\u200b"
_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_URL_PARTS = re.compile(r"(:)(//)|(www)(\.)", re.IGNORECASE)
# Punctuation that is never markup in the middle of a line stays readable in the raw body.
_PLAIN_PUNCTUATION = frozenset(".,-/%+=")
_ENCODED = {
    code: f"&#{code};"
    for code in range(0x21, 0x7F)
    if not chr(code).isalnum() and chr(code) not in _PLAIN_PUNCTUATION
}
_ENCODED[ord("@")] = "&#64;" + ZWSP
_ENCODED[ord("#")] = "&#35;" + ZWSP


def clean(text: str, max_length: int = 120) -> str:
    """``text`` on one line, without invisible or control characters, at most ``max_length``."""
    if text.isascii() and text.isprintable():
        flat = " ".join(text.split())  # the common case: a plain name, nothing to drop
    else:
        kept = []
        for char in text:
            if char in "\r\n\t\v\f":
                kept.append(" ")
            elif unicodedata.category(char) not in _DROPPED_CATEGORIES:
                kept.append(char)
        flat = " ".join("".join(kept).split())
    if len(flat) > max_length:
        flat = flat[: max_length - 1].rstrip() + "…"
    return flat


def text(value: str, max_length: int = 200) -> str:
    """Untrusted text as inert markdown (see the module docstring)."""
    flat = _URL_PARTS.sub(_split_url_part, clean(value, max_length))
    return flat.translate(_ENCODED)


def code(value: str, max_length: int = 120) -> str:
    """Untrusted text as an inert ``<code>`` element, usable in tables and in HTML blocks."""
    return f"<code>{text(value, max_length) or '(empty)'}</code>"


def _split_url_part(match: re.Match[str]) -> str:
    first, second = (match.group(1), match.group(2)) if match.group(1) else match.group(3, 4)
    return f"{first}{ZWSP}{second}"
