"""The benches' load generator: HTTP/1.1 requests built in advance, written over kept-alive
asyncio connections, their answers read with a few lines of parsing.

Why not an HTTP library: on this 2-core machine the load generator shares the CPU with
what it measures. httpx's AsyncClient cost the bench process about 2 ms of CPU a
delivery (bench/service.py, 2026-12-04: 2.1 and 2.5 ms, as much as the fake GitHub
itself), CPU taken from the perfbot processes being measured. Here a request costs a
write and a read; GitHub's own deliveries come from other machines.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from urllib.parse import urlsplit

# As long as httpx's client, which this replaced, waited for an answer in the benches.
ANSWER_SECONDS = 30.0


def raw_request(host: str, path: str, headers: Mapping[str, str], body: bytes) -> bytes:
    """A POST of ``body`` to ``path``, headers and all, as it goes on the wire."""
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    head = f"POST {path} HTTP/1.1\r\nHost: {host}\r\n{lines}Content-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """One request as the benches' loopback servers read it: its head, and the body its
    Content-Length gives (none without one)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    return head + await reader.readexactly(length)


def host_port(url: str) -> tuple[str, int]:
    """The loopback address of ``http://host:port``."""
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname is None or parts.port is None:
        raise ValueError(f"not an http://host:port address: {url!r}")
    return parts.hostname, parts.port


class Connection:
    """One kept-alive connection; one request on it at a time."""

    def __init__(self, host: str, port: int) -> None:
        self._address = (host, port)
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The connection's streams, connected now if they were not (or were closed)."""
        if self._streams is None:
            self._streams = await asyncio.open_connection(*self._address)
        return self._streams

    async def send(self, request: bytes, timeout: float = ANSWER_SECONDS) -> tuple[int, bytes]:
        """The status and the body of the answer to ``request``; a ``TimeoutError`` that
        says so when it has not come whole within ``timeout`` seconds."""
        try:
            async with asyncio.timeout(timeout):
                return await self._exchange(request)
        except TimeoutError:
            self.close()
            host, port = self._address
            raise TimeoutError(f"no whole answer from {host}:{port} within {timeout} s") from None

    async def _exchange(self, request: bytes) -> tuple[int, bytes]:
        reader, writer = await self.open()
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head[:-4].split(b"\r\n")
        status = int(status_line.split(b" ", 2)[1])
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        if b"transfer-encoding" in headers or b"content-length" not in headers:
            # The servers measured here answer with a length; anything else is a surprise
            # worth stopping for rather than a body misread.
            raise RuntimeError(f"an answer not framed by Content-Length alone: {head[:200]!r}")
        body = await reader.readexactly(int(headers[b"content-length"]))
        connection = headers.get(b"connection", b"").lower()
        if connection == b"close" or (
            status_line.startswith(b"HTTP/1.0 ") and connection != b"keep-alive"
        ):
            self.close()
        return status, body

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None
