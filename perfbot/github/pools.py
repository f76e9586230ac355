"""Connections to GitHub's hosts, kept alive and shared by every job of the process: the
``RawWire`` under every request in production (``wire``).

Each request is written whole on an idle connection to its host, or a new one, and its
answer parsed by ``http11.Connection``. aiohttp's client did the same job for twice the
CPU (its request and response objects, its timers, its stream reader): 236 against 109 µs
a request in ``bench/wire.py``, and with six requests an update, 7.6 % of the App's
instructions (``bench/instructions.py``).

A request is sent as its ``Call`` says, with only what HTTP/1.1 needs added: a ``Host``
and a body's ``Content-Length`` where the call names none. No redirect is followed, no
cookie is kept, and nothing is retried here. A URL or header that could split the request
(a space, a control character, a non-ASCII byte) is refused with a ValueError.
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
# What a request target and a header line may not hold: a space (in a target), a control
# character (a line break would end the line early and start another header, or request).
_NOT_TARGET: Final = re.compile(rb"[^\x21-\x7e]")
_NOT_HEADER: Final = re.compile(rb"[^\t\x20-\x7e\x80-\xff]")
_METHODS_WITH_BODY: Final = frozenset({"POST", "PUT", "PATCH"})

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
        decoder = _decoder(self.headers.get("content-encoding"))
        kept: list[bytes] = []
        size = 0
        while True:
            for chunk in conn.take():
                data = _decoded(decoder, chunk)
                size += len(data)
                if limit is not None and size > limit:
                    kept.append(data[: len(data) - (size - limit)])
                    return b"".join(kept), False
                kept.append(data)
            if conn.complete:
                if decoder is not None:
                    kept.append(_decoded(decoder, None))
                return b"".join(kept), True
            async with asyncio.timeout(READ_SECONDS):
                await conn.wait()

    async def release(self) -> None:
        if not self._released:
            self._released = True
            self._pools.give_back(self._origin, self._conn)


def _decoder(encoding: str | None) -> zlib._Decompress | None:
    if encoding is None or encoding.lower() == "identity":
        return None
    if encoding.lower() in ("gzip", "x-gzip", "deflate"):
        # Either wrapping (gzip's, or zlib's as HTTP's "deflate" means), told by its header.
        return zlib.decompressobj(wbits=zlib.MAX_WBITS | 32)
    raise WireError(f"the answer came in an encoding perfbot did not ask for ({encoding[:40]})")


def _decoded(decoder: zlib._Decompress | None, chunk: bytes | None) -> bytes:
    if decoder is None:
        return chunk or b""
    try:
        return decoder.decompress(chunk) if chunk is not None else decoder.flush()
    except zlib.error:
        raise WireError("the answer's compressed body is corrupt") from None


class Pools:
    """The idle connections of each host, and at most ``max_connections`` in use at once."""

    def __init__(self, max_connections: int) -> None:
        self._slots: asyncio.Semaphore | None = None  # made on the loop that first uses it
        self._max_connections = max_connections
        self._idle: dict[Origin, list[tuple[Connection, float]]] = {}
        self._busy: set[Connection] = set()
        self._tls: ssl.SSLContext | None = None
        # Each URL prefix's host, as parsed once: a process talks to a handful of them.
        self._origins: dict[str, tuple[Origin, bytes]] = {}

    async def open(self, call: Call) -> _Opened:
        if call.method == "HEAD":
            # Its answer names a length but has no body: nothing perfbot sends.
            raise ValueError("the pools send no HEAD request")
        origin, host, target = self._split(call.url)
        request = _request(call, host, target)
        slots = self._slots or self._new_slots()
        await slots.acquire()
        conn: Connection | None = None
        try:
            conn = self._idle_connection(origin) or await self._connect(origin)
            self._busy.add(conn)
            conn.expect(request)
            while not conn.head_done:
                async with asyncio.timeout(READ_SECONDS):
                    await conn.wait()
        except BaseException:
            # Cancelled (the call's deadline) or failed: the answer may still be coming,
            # so the connection cannot serve another request.
            if conn is not None:
                self._busy.discard(conn)
                conn.close()
            slots.release()
            raise
        return _Opened(self, origin, conn)

    def give_back(self, origin: Origin, conn: Connection) -> None:
        """``conn``'s answer was read (or given up on): idle again, or closed."""
        self._busy.discard(conn)
        if conn.reusable:
            self._idle.setdefault(origin, []).append((conn, time.monotonic()))
        else:
            conn.close()
        if self._slots is not None:
            self._slots.release()

    async def close(self) -> None:
        for idle in self._idle.values():
            for conn, _ in idle:
                conn.close()
        self._idle.clear()
        for conn in self._busy:
            conn.close()
        self._busy.clear()

    def _new_slots(self) -> asyncio.Semaphore:
        self._slots = asyncio.Semaphore(self._max_connections)
        return self._slots

    def _split(self, url: str) -> tuple[Origin, bytes, bytes]:
        """The URL's host (to connect to), its Host header and its request target."""
        scheme_end = url.find("://")
        path_start = url.find("/", scheme_end + 3) if scheme_end > 0 else -1
        prefix = url if path_start < 0 else url[:path_start]
        known = self._origins.get(prefix)
        if known is None:
            parts = urlsplit(prefix)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError("perfbot calls only http and https URLs")
            port = parts.port or (443 if parts.scheme == "https" else 80)
            known = (parts.scheme, parts.hostname, port), parts.netloc.encode("idna")
            self._origins[prefix] = known
        origin, host = known
        path = (url[len(prefix) :] or "/").split("#", 1)[0]
        target = path.encode("ascii", "replace")
        if not path.isascii() or _NOT_TARGET.search(target):
            raise ValueError("a request target that is not plain ASCII without spaces")
        return origin, host, target

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
        except OSError as exc:  # refused, unreachable, a name that does not resolve, TLS
            raise WireError(f"could not connect ({type(exc).__name__})") from None
        return conn


def _request(call: Call, host: bytes, target: bytes) -> bytes:
    """``call`` as HTTP/1.1 bytes: its headers in its order, and what HTTP needs."""
    head = [call.method.encode("ascii"), b" ", target, b" HTTP/1.1\r\n"]
    headers = call.headers
    if "host" not in headers:
        head += (b"Host: ", host, b"\r\n")
    for name, value in headers.items():
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
