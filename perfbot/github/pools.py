"""Connections to GitHub's hosts, kept alive and shared by every job of the process: the
``RawWire`` under every request in production (``wire``).

Each request is written whole on an idle connection to its host, or a new one, and its
answer parsed by ``http11.Connection``. aiohttp's client did the same job for half as
much CPU again (its request and response objects, its timers, its stream reader): 266
against 174 µs a request in ``bench/wire.py``, and with six requests an update, 6.7 % of
the App's instructions (``bench/instructions.py``), both on 2026-12-03.

A request is sent as its ``Call`` says, with only what HTTP/1.1 needs added: a ``Host``
and a body's ``Content-Length`` where the call names none. No redirect is followed and no
cookie is kept. Nothing is retried here but a GET, PUT or DELETE whose kept connection
turns out closed before a byte of its answer (the peer closed it unseen): it is sent once
more on a new connection. A URL, method or header that could split the request (a space,
a control character, a non-ASCII byte, a name that is no token) is refused with a
ValueError. A body is decoded no further than its limit (a small gzip can hold
gigabytes). A host's addresses are tried in turn, not raced (uvloop has no happy
eyeballs), within ``CONNECT_SECONDS``.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
import zlib
from collections.abc import Mapping
from typing import Final
from urllib.parse import urlsplit

import httpx
from multidict import CIMultiDict, CIMultiDictProxy

from perfbot.github.http11 import Connection
from perfbot.github.wire import CONNECT_SECONDS, READ_SECONDS, Call, WireError

# An idle connection is not used again after this long: the peer may have closed it
# meanwhile, and a request written into a closed connection is lost.
KEEPALIVE_SECONDS: Final = 15.0
# What a URL and a header line may not hold: a space (in a URL), a control character (a
# line break would end the line early and start another header, or request).
_NOT_IN_URL: Final = re.compile(r"[\x00-\x20\x7f]")
_NOT_HEADER: Final = re.compile(rb"[^\t\x20-\x7e\x80-\xff]")
# An HTTP token (RFC 9110): what a method and a header's name are made of.
_TOKEN: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_METHODS_WITH_BODY: Final = frozenset({"POST", "PUT", "PATCH"})
# What may be sent again when a kept connection turns out closed before any answer.
_IDEMPOTENT: Final = frozenset({"GET", "PUT", "DELETE"})
# Hosts whose parsed form is kept: the API's, and the artifact storage's few.
_ORIGINS_KEPT: Final = 64

Origin = tuple[str, str, int]  # scheme, host, port


class _Opened:
    """An answer whose head arrived; its body is read from the connection as it comes."""

    __slots__ = ("_conn", "_origin", "_pools", "_released", "headers", "status_code")

    def __init__(self, pools: Pools, origin: Origin, conn: Connection) -> None:
        self._pools = pools
        self._origin = origin
        self._conn = conn
        self._released = False
        self.status_code = conn.status
        self.headers: Mapping[str, str] = CIMultiDictProxy(CIMultiDict(conn.headers))

    async def read(self, limit: int | None) -> tuple[bytes, bool]:
        """The body decoded of its gzip, up to ``limit`` bytes; whether that was all."""
        conn = self._conn
        encoding = self.headers.get("content-encoding", "identity").strip().lower()
        decoder: _Decoder | None = None
        kept: list[bytes] = []
        size = 0
        while True:
            for chunk in conn.take():
                if decoder is None and encoding != "identity":
                    decoder = _Decoder(encoding)  # only once there is a body to decode
                # Decoded no further than the limit allows: a small gzip can hold gigabytes.
                pieces = [chunk] if decoder is None else decoder.feed(chunk, limit, size)
                for data in pieces:
                    size += len(data)
                    if limit is not None and size > limit:
                        kept.append(data[: len(data) - (size - limit)])
                        return b"".join(kept), False
                    kept.append(data)
            if conn.complete:
                if decoder is not None:
                    decoder.end()
                return b"".join(kept), True
            await conn.wait(READ_SECONDS)

    async def release(self) -> None:
        if not self._released:
            self._released = True
            self._pools.give_back(self._origin, self._conn)


class _Decoder:
    """A body's gzip or deflate undone as it arrives (made once the body is known to
    exist: a 304 may name its resource's encoding and have no body)."""

    def __init__(self, encoding: str) -> None:
        if encoding not in ("gzip", "x-gzip", "deflate"):
            raise WireError(
                f"the answer came in an encoding perfbot did not ask for ({encoding[:40]})"
            )
        self._raw_deflate_allowed = encoding == "deflate"
        self._zlib: zlib._Decompress | None = None
        self._started = False
        self._unsure = b""  # the bytes given to zlib before it could tell their wrapping
        self._ended = False  # the last member ended, and what followed was not another

    def feed(self, chunk: bytes, limit: int | None, size: int) -> list[bytes]:
        """``chunk`` decoded: pieces that stop just past ``limit`` (``size`` so far)."""
        out: list[bytes] = []
        pending = b"" if self._ended else chunk
        while pending:
            if self._zlib is None:
                if self._started and not pending.startswith(b"\x1f"):
                    # After a member, what is not another gzip member is padding (as gzip
                    # itself tolerates): dropped, with all that follows.
                    self._ended = True
                    return out
                # gzip's or zlib's wrapping, told by its header; a gzip of several members
                # starts again here after each.
                self._zlib = zlib.decompressobj(wbits=zlib.MAX_WBITS | 32)
            room = 0 if limit is None else max(limit - size + 1, 1)
            if not self._started:
                self._unsure += pending
            try:
                data = self._zlib.decompress(pending, room)
            except zlib.error:
                if self._started or not self._raw_deflate_allowed:
                    raise WireError("the answer's compressed body is corrupt") from None
                # "deflate" sent bare, without zlib's wrapping, as some servers do.
                self._raw_deflate_allowed = False
                self._zlib = zlib.decompressobj(wbits=-zlib.MAX_WBITS)
                pending, self._unsure = self._unsure, b""
                continue
            # zlib tells a wrapping from bare deflate only with two bytes in hand.
            if not self._started and (data or len(self._unsure) >= 2):
                self._started, self._unsure = True, b""
            if data:
                out.append(data)
                size += len(data)
                if limit is not None and size > limit:
                    return out
            if self._zlib.eof:
                pending = self._zlib.unused_data
                self._zlib = None
            else:
                pending = self._zlib.unconsumed_tail
        return out

    def end(self) -> None:
        """The body ended: refused if its compressed stream did not."""
        if self._zlib is not None and not self._zlib.eof:
            raise WireError("the answer's compressed body was cut short")


class Pools:
    """The idle connections of each host, and at most ``max_connections`` in use at once."""

    def __init__(self, max_connections: int) -> None:
        self._slots: asyncio.Semaphore | None = None  # made on the loop that first uses it
        self._max_connections = max_connections
        self._idle: dict[Origin, list[tuple[Connection, float]]] = {}
        self._busy: set[Connection] = set()
        self._tls: ssl.SSLContext | None = None
        self._closed = False
        # Each scheme and host's parsed form: a process talks to a handful of them.
        self._origins: dict[str, tuple[Origin, bytes]] = {}

    async def open(self, call: Call) -> _Opened:
        if call.method == "HEAD":
            # Its answer names a length but has no body: nothing perfbot sends.
            raise ValueError("the pools send no HEAD request")
        origin, host, target = self._split(call.url)
        request = _request(call, host, target)
        slots = self._slots or self._new_slots()
        await slots.acquire()
        try:
            if self._closed:
                raise WireError("the connection pools are closed")
            conn = self._idle_connection(origin)
            if conn is not None:
                try:
                    return await self._answer_on(origin, conn, request)
                except WireError:
                    # A kept connection the peer had closed unseen: nothing of an answer
                    # came. A request that changes nothing is sent once more, on a new one.
                    if conn.answered_any or call.method not in _IDEMPOTENT or self._closed:
                        raise
            conn = await self._connect(origin)
            return await self._answer_on(origin, conn, request)
        except BaseException:
            slots.release()
            raise

    async def _answer_on(self, origin: Origin, conn: Connection, request: bytes) -> _Opened:
        """``request`` sent on ``conn``, once its answer's head has come."""
        self._busy.add(conn)
        try:
            conn.expect(request)
            while not conn.head_done:
                await conn.wait(READ_SECONDS)
        except BaseException:
            # Cancelled (the call's deadline) or failed: the answer may still be coming,
            # so the connection cannot serve another request.
            self._busy.discard(conn)
            conn.close(abort=True)
            raise
        return _Opened(self, origin, conn)

    def give_back(self, origin: Origin, conn: Connection) -> None:
        """``conn``'s answer was read (or given up on): idle again, or closed."""
        self._busy.discard(conn)
        if conn.reusable:
            self._idle.setdefault(origin, []).append((conn, time.monotonic()))
        else:
            conn.close(abort=True)  # the rest of its answer is not wanted
        if self._slots is not None:
            self._slots.release()

    async def close(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            for conn, _ in idle:
                conn.close()
        self._idle.clear()
        for conn in self._busy:
            conn.close(abort=True)
        self._busy.clear()

    def _new_slots(self) -> asyncio.Semaphore:
        self._slots = asyncio.Semaphore(self._max_connections)
        return self._slots

    def _split(self, url: str) -> tuple[Origin, bytes, bytes]:
        """The URL's host (to connect to), its Host header and its request target."""
        if _NOT_IN_URL.search(url):
            # urlsplit would drop a tab or a line break silently, even from the host.
            raise ValueError("a URL with a space or a control character in it")
        # A host already checked, and a plain target after it: the target is the rest of
        # the URL as it stands (0.4 µs; urlsplit of a URL it has not cached takes 4.4).
        cut = url.find("/", url.find("//") + 2)
        known = self._origins.get(url[:cut]) if cut > 0 else None
        if known is not None and "#" not in url and not url.endswith("?"):
            target = url[cut:]
            if not target.isascii():
                raise ValueError("a request target that is not plain ASCII")
            return known[0], known[1], target.encode("ascii")
        parts = urlsplit(url)
        key = parts.scheme + "://" + parts.netloc
        known = self._origins.get(key)
        if known is None:
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError("perfbot calls only http and https URLs")
            if "@" in parts.netloc:
                raise ValueError("a URL with credentials in it (user:password@host)")
            port = parts.port or (443 if parts.scheme == "https" else 80)
            known = (parts.scheme, parts.hostname, port), parts.netloc.encode("idna")
            if len(self._origins) < _ORIGINS_KEPT:
                self._origins[key] = known
        origin, host = known
        path = (parts.path or "/") + ("?" + parts.query if parts.query else "")
        if not path.isascii():  # spaces and control characters were refused above
            raise ValueError("a request target that is not plain ASCII")
        return origin, host, path.encode("ascii")

    def _idle_connection(self, origin: Origin) -> Connection | None:
        idle = self._idle.get(origin)
        if not idle:
            return None
        now = time.monotonic()
        while idle:
            conn, since = idle.pop()  # the most recently used: the likeliest still open
            if not conn.closed and now - since < KEEPALIVE_SECONDS:
                return conn
            conn.close()
        return None

    async def _connect(self, origin: Origin) -> Connection:
        scheme, host, port = origin
        tls = None
        if scheme == "https":
            # Certificates checked as httpx checks them (its bundled roots).
            tls = self._tls = self._tls or httpx.create_ssl_context()
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(CONNECT_SECONDS):
                _, conn = await loop.create_connection(Connection, host, port, ssl=tls)
        except TimeoutError:
            raise  # no connection in time: a timeout, as any other (an OSError too, in 3.11)
        except OSError as exc:  # refused, unreachable, a name that does not resolve, TLS
            raise WireError(f"could not connect ({type(exc).__name__})") from None
        return conn


def _request(call: Call, host: bytes, target: bytes) -> bytes:
    """``call`` as HTTP/1.1 bytes: its headers in its order, and what HTTP needs."""
    if not _TOKEN.fullmatch(call.method):
        raise ValueError("a method that is not an HTTP token")
    headers = call.headers
    if "transfer-encoding" in headers:
        raise ValueError("a call that names its own transfer coding (its body is sent whole)")
    head = [call.method.encode("ascii"), b" ", target, b" HTTP/1.1\r\n"]
    if "host" not in headers:
        head += (b"Host: ", host, b"\r\n")
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name):
            raise ValueError("a header name that is not an HTTP token")
        try:
            line = name.encode("latin-1") + b": " + value.encode("latin-1")
        except UnicodeEncodeError:
            raise ValueError("a header that is not Latin-1") from None
        if _NOT_HEADER.search(line):
            raise ValueError("a header with a line break or a control character")
        head += (line, b"\r\n")
    body = call.body
    if "content-length" not in headers and (body or call.method in _METHODS_WITH_BODY):
        head += (b"Content-Length: ", str(len(body or b"")).encode(), b"\r\n")
    head.append(b"\r\n")
    if body:
        head.append(body)
    return b"".join(head)
