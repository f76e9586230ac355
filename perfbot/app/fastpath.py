"""``POST /webhook`` answered without ASGI when its request arrives whole.

A delivery is a head and a body of tens of KB, so its request is most often read whole
in one ``data_received``, or in two or three that follow each other within a millisecond
(a client that writes its head and body apart, as httpx does; a proxy that streams the
body, as Caddy does). For such a request ``BoundedHttpTools`` hands head and body straight
to ingest (``WebhookEndpoint.answer_whole``, the same checks and answers as its ASGI
path) and writes the answer itself: no ASGI scope, cycle, event, receive or send. Those
cost two fifths of a delivery's CPU under uvicorn with httptools (``bench/ingest.py``).

Anything else takes uvicorn's path as before: another route or method, HTTP/1.0, an
``Expect`` or ``Transfer-Encoding`` header, an upgrade, a request behind another one
still being answered, a process at its request limit. So does a body that has not come
whole when the read ends, if it is larger than ``WHOLE_WAIT_BYTES``, or once
``WHOLE_WAIT_SECONDS`` have passed (``perfbot.app.processes``): the part already read is
handed to uvicorn's cycle, which goes on as if it had read it itself, and the body
deadline and budget apply from there (the deadline so starts up to that wait later, and
a waiting body, at most ``WHOLE_WAIT_BYTES``, is not charged to the budget: the request
limit bounds what all of them hold). A head whose signature header ingest would refuse
before reading the body is handed on at once. While it waits, the request has a task of
its own and counts as one waiting for its body, as it would on uvicorn's path: against
the request limit, and in turn to make room at it.

While a whole request waits or is answered, a ``FastCycle`` stands in for uvicorn's
cycle, so uvicorn's own bookkeeping (a pipelined request queued behind it, the keep-alive
timer, a graceful shutdown, a lost connection) works on it unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable, MutableMapping
from typing import Any, Final, Protocol

from uvicorn.protocols.http.httptools_impl import STATUS_LINE

Message = MutableMapping[str, Any]

# The one request the fast path takes: perfbot's webhook, as GitHub sends it.
PATH: Final = b"/webhook"
METHOD: Final = b"POST"
# Headers whose presence sends a request uvicorn's way: framing or semantics the fast
# path leaves to uvicorn (a chunked body, a 100-continue, an upgrade).
_UVICORNS: Final = frozenset({b"transfer-encoding", b"expect", b"upgrade"})


class WholeAnswerer(Protocol):
    """What answers a whole delivery: ``perfbot.app.ingest.WebhookEndpoint``."""

    def answer_whole(
        self, raw_headers: list[tuple[bytes, bytes]], body: bytes
    ) -> Awaitable[tuple[Message, Message]]: ...

    def refuses_unread(self, raw_headers: list[tuple[bytes, bytes]]) -> bool: ...


class WholeRequest:
    """A webhook request being read on the fast path: its headers and body so far, and
    while it waits for the rest of its body past a read, its task and its timer."""

    __slots__ = (
        "chunks",
        "declared",
        "headers",
        "keep_alive",
        "previous",
        "task",
        "timer",
        "waiting",
    )

    def __init__(self, headers: list[tuple[bytes, bytes]], keep_alive: bool) -> None:
        self.headers = headers
        self.keep_alive = keep_alive
        self.chunks: list[bytes] = []
        self.declared = _declared(headers)
        # Set while it waits past a read: the future its task awaits (True: the body has
        # come; False: it went uvicorn's way, or its connection is lost), the task, its
        # timer, and the cycle uvicorn had before (the fast cycle stands in meanwhile).
        self.waiting: asyncio.Future[bool] | None = None
        self.task: asyncio.Task[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.previous: Any = None

    def arrived(self, whole: bool) -> None:
        """Wake the waiting task: the body has come whole, or it will not on this path."""
        if self.waiting is not None and not self.waiting.done():
            self.waiting.set_result(whole)


def _declared(headers: list[tuple[bytes, bytes]]) -> int:
    """The body's declared length (the parser has checked it), or -1 if unreadable."""
    for name, value in headers:
        if name == b"content-length":
            return int(value) if value.isdigit() else -1
    return -1


class _NoWaiter:
    """uvicorn sets its cycle's message event to wake the app's ``receive``; no app waits."""

    __slots__ = ()

    def set(self) -> None:
        return None


NO_WAITER: Final = _NoWaiter()


class Waker(Protocol):
    def set(self) -> None: ...


class FastCycle:
    """The stand-in for uvicorn's ``RequestResponseCycle`` while a whole request is
    answered (or waits for the rest of its body): the attributes uvicorn's protocol (and
    ``BoundedHttpTools``) read or set."""

    __slots__ = (
        "disconnected",
        "keep_alive",
        "message_event",
        "response_complete",
        "response_started",
    )

    more_body: Final = False  # never answered before its body has come whole

    def __init__(self, keep_alive: bool) -> None:
        self.keep_alive = keep_alive
        self.disconnected = False
        self.response_started = False
        self.response_complete = False
        self.message_event: Waker = NO_WAITER


def takes(
    method: bytes, url: bytes, http_version: str, headers: Iterable[tuple[bytes, bytes]]
) -> bool:
    """Whether a request's head is one the fast path may answer (its body permitting)."""
    if method != METHOD or url != PATH or http_version != "1.1":
        return False
    seen_length = False
    for name, _ in headers:
        if name in _UVICORNS:
            return False
        if name == b"content-length":
            seen_length = True
    return seen_length  # a body of declared length: nothing else frames it


def encoded(
    answer: tuple[Message, Message], default_headers: list[tuple[bytes, bytes]], keep_alive: bool
) -> tuple[bytes, bool]:
    """The bytes of an answer as uvicorn writes them (its status line, its default headers
    first, ``connection: close`` added when the connection is not kept alive), and whether
    the connection closes after it."""
    start, body = answer
    parts = [STATUS_LINE[start["status"]]]
    close = False
    for name, value in (*default_headers, *start["headers"]):
        if name == b"connection" and b"close" in (t.strip().lower() for t in value.split(b",")):
            close = True
        parts += (name, b": ", value, b"\r\n")
    if not keep_alive and not close:
        parts.append(b"connection: close\r\n")
        close = True
    parts += (b"\r\n", body["body"])
    return b"".join(parts), close


# uvicorn's answer when its app fails before answering.
FAILED: Final = (
    {
        "type": "http.response.start",
        "status": 500,
        "headers": [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", b"21"),
            (b"connection", b"close"),
        ],
    },
    {"type": "http.response.body", "body": b"Internal Server Error"},
)
