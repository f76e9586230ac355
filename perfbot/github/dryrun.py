"""Dry run: the writes perfbot would have sent to GitHub, recorded instead of sent.

``perfbot serve --dry-run`` (``PERFBOT_DRY_RUN=1``) and ``perfbot replay`` read GitHub as
usual and write nothing to it: every request other than a read (and the exchange of the
App's JWT for an installation token, which is how reads are made) stops in the adapter's
wire (``dryrun_transport.WriteGate``), which answers it as GitHub would have. Each
such write becomes a ``WouldWrite``: logged as one JSON line (logger ``perfbot.dry_run``,
key ``would_write``) and kept, the last ``keep`` of them, for the ``/dry-run`` page.

What a dry run creates gets an id of ``SYNTHETIC_BASE`` or more, far above anything
GitHub hands out. The store may keep such an id (a PR's comment, its check run, a watch
issue); a request naming one is never sent to GitHub, in a dry run or not: it is answered
404, as GitHub would answer for an object that does not exist, and perfbot then does what
it does for a comment or an issue someone deleted (creates the comment anew, say).

Importable without any HTTP library: the app's page and the replay command read it.
"""

from __future__ import annotations

import logging
import re
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any, Final

log = logging.getLogger("perfbot.dry_run")

# Ids of what a dry run made up: 2**62, a 19-digit number GitHub's ids (10 or 11 digits
# today for comments and check runs, a few digits for issue numbers) will not reach.
SYNTHETIC_BASE: Final = 1 << 62
# How many would-be writes a process keeps for the page (the JSON lines keep them all).
DEFAULT_KEEP: Final = 200
# How much of a request's body a record keeps: a comment is at most 65,536 characters.
MAX_BODY_CHARS: Final = 65_536

_DELIVERY: ContextVar[str | None] = ContextVar("perfbot_dry_run_delivery", default=None)
_INSTALLATION: ContextVar[int | None] = ContextVar("perfbot_dry_run_installation", default=None)

# The installation-token exchange: a POST that writes nothing anyone sees, and without
# which no read could be made.
_TOKEN_EXCHANGE: Final = re.compile(r"(?:/.*)?/app/installations/\d+/access_tokens")
# A part of a path that is a number as long as SYNTHETIC_BASE or longer.
_LONG_NUMBER: Final = re.compile(rf"(?<![^/])[0-9]{{{len(str(SYNTHETIC_BASE))},}}(?![^/])")
_REPO: Final = re.compile(r"(?:/.*)?/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)(?P<rest>/.*)?")


def is_synthetic(number: int) -> bool:
    """Whether ``number`` is an id a dry run made up."""
    return number >= SYNTHETIC_BASE


def names_synthetic(path: str) -> bool:
    """Whether a request path names an object a dry run made up (a part of it that is a
    number of at least ``SYNTHETIC_BASE``'s digits, looked for in one pass: every request
    asks)."""
    return any(is_synthetic(int(found.group())) for found in _LONG_NUMBER.finditer(path))


def is_token_exchange(method: str, path: str) -> bool:
    return method == "POST" and _TOKEN_EXCHANGE.fullmatch(path) is not None


def is_write(method: str, path: str) -> bool:
    """Whether a request changes something on GitHub (a dry run stops it)."""
    return method not in ("GET", "HEAD", "OPTIONS") and not is_token_exchange(method, path)


@contextmanager
def acting_for(delivery: str | None, installation: int | None) -> Iterator[None]:
    """The delivery and installation the requests made inside are for (their records say)."""
    delivery_token = _DELIVERY.set(delivery)
    installation_token = _INSTALLATION.set(installation)
    try:
        yield
    finally:
        _INSTALLATION.reset(installation_token)
        _DELIVERY.reset(delivery_token)


@dataclass(frozen=True, slots=True)
class WouldWrite:
    """One write a dry run did not send."""

    at: float  # UNIX seconds
    method: str
    path: str
    kind: str  # comment, comment_edit, reaction, check_run, rerun, issue, issue_edit, …
    summary: str  # one line: what GitHub would have been asked to do
    repository: str | None
    installation: int | None
    delivery: str | None
    # The markdown it would have posted: a comment's or issue's body, a check run's summary.
    body: str | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def describe(method: str, path: str, payload: Mapping[str, Any]) -> tuple[str, str, str | None]:
    """(kind, one-line summary, markdown body) of a write to ``path`` with ``payload``."""
    found = _REPO.fullmatch(path)
    rest = (found.group("rest") or "") if found else path
    text = _text(payload.get("body"))
    for pattern, kind, say in _WRITES:
        matched = re.fullmatch(pattern, rest)
        if matched is not None and method in kind[0]:
            return kind[1], say(matched, payload), _body_of(kind[1], payload, text)
    return "other", f"{method} {path}", text


def _body_of(kind: str, payload: Mapping[str, Any], text: str | None) -> str | None:
    if kind in ("check_run", "check_run_edit"):
        output = payload.get("output")
        if isinstance(output, Mapping):
            return _text(output.get("summary"))
        return None
    return text


def _text(value: Any) -> str | None:
    return value[:MAX_BODY_CHARS] if isinstance(value, str) else None


def _short(value: Any, limit: int = 80) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


Say = Callable[[re.Match[str], Mapping[str, Any]], str]


def _check(m: re.Match[str], p: Mapping[str, Any]) -> str:
    sha = str(p.get("head_sha", ""))[:7]
    return f"create check run {_short(p.get('name'))!r} ({p.get('conclusion')}) on {sha}"


def _issue_edit(m: re.Match[str], p: Mapping[str, Any]) -> str:
    fields = ", ".join(f"{k}={_short(p[k], 40)}" for k in sorted(p) if k != "body")
    return (
        f"edit issue #{m['n']}"
        + (f" ({fields})" if fields else "")
        + (" and its body" if "body" in p else "")
    )


# (path after /repos/OWNER/REPO, or the App's own path), (methods, kind), summary.
_WRITES: Final[tuple[tuple[str, tuple[tuple[str, ...], str], Say], ...]] = (
    (r"/issues/(?P<n>\d+)/comments", (("POST",), "comment"), lambda m, p: f"comment on #{m['n']}"),
    (
        r"/issues/comments/(?P<n>\d+)",
        (("PATCH",), "comment_edit"),
        lambda m, p: f"edit comment {m['n']}",
    ),
    (
        r"/issues/comments/(?P<n>\d+)/reactions",
        (("POST",), "reaction"),
        lambda m, p: f"react {_short(p.get('content'))} to comment {m['n']}",
    ),
    (r"/check-runs", (("POST",), "check_run"), _check),
    (
        r"/check-runs/(?P<n>\d+)",
        (("PATCH",), "check_run_edit"),
        lambda m, p: f"complete check run {m['n']} ({p.get('conclusion')})",
    ),
    (
        r"/actions/runs/(?P<n>\d+)/rerun(?:-failed-jobs)?",
        (("POST",), "rerun"),
        lambda m, p: f"re-run workflow run {m['n']}",
    ),
    (r"/issues", (("POST",), "issue"), lambda m, p: f"open issue {_short(p.get('title'))!r}"),
    (r"/issues/(?P<n>\d+)", (("PATCH",), "issue_edit"), _issue_edit),
    (
        r"(?:/.*)?/app/hook/deliveries/(?P<n>\d+)/attempts",
        (("POST",), "redelivery"),
        lambda m, p: f"ask GitHub to redeliver delivery {m['n']}",
    ),
)


class DryRun:
    """The would-be writes of one process: the last ``keep``, newest last, and the ids
    handed out. Used from one event loop (the app's, or the replay's)."""

    def __init__(self, keep: int = DEFAULT_KEEP, clock: Callable[[], float] = time.time) -> None:
        self._kept: deque[WouldWrite] = deque(maxlen=keep)
        self._clock = clock
        self._next_id = SYNTHETIC_BASE
        self.total = 0
        # Called with every request the transport sees: (method, path, status, and the
        # record of the write held back, None for a request sent to GitHub or refused).
        self.observers: list[Callable[[str, str, int, WouldWrite | None], None]] = []
        self.last: WouldWrite | None = None

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def record(self, method: str, path: str, payload: Mapping[str, Any]) -> WouldWrite:
        """Keep (and log as one JSON line) the write ``method path`` with ``payload``."""
        kind, summary, body = describe(method, path, payload)
        found = _REPO.fullmatch(path)
        entry = WouldWrite(
            at=self._clock(),
            method=method,
            path=path,
            kind=kind,
            summary=summary,
            repository=f"{found['owner']}/{found['repo']}" if found else None,
            installation=_INSTALLATION.get(),
            delivery=_DELIVERY.get(),
            body=body,
        )
        self._kept.append(entry)
        self.total += 1
        self.last = entry
        extra = {"would_write": entry.as_json(), "delivery": entry.delivery}
        log.info("dry run: would %s", summary, extra=extra)
        return entry

    def observe(self, method: str, path: str, status: int, record: WouldWrite | None) -> None:
        for observer in self.observers:
            observer(method, path, status, record)

    def entries(self) -> list[WouldWrite]:
        """The kept writes, newest first."""
        return list(reversed(self._kept))
