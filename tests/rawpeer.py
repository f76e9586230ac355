"""A loopback HTTP peer for the wire's tests: it reads requests as bytes and answers
each with the bytes (or the coroutine) a test gives, well-formed or not."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

Answerer = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Peer:
    """A loopback server; what it read of each request, and how many connections it took."""

    def __init__(self) -> None:
        self.requests: list[bytes] = []
        self.connections = 0
        self.url = ""


async def read_request(reader: asyncio.StreamReader, peer: Peer) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    request = head + (await reader.readexactly(length) if length else b"")
    peer.requests.append(request)
    return request


@asynccontextmanager
async def peer_answering(*answers: bytes | Answerer) -> AsyncIterator[Peer]:
    """A peer that answers the requests it reads in turn, whatever their connection, each
    with raw bytes or a coroutine; it keeps a connection open for the next request unless
    the answer says ``Connection: close``, and closes one it has no answer left for."""
    peer = Peer()
    queue = list(answers)
    writers: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer.connections += 1
        writers.append(writer)
        try:
            while not writer.is_closing():
                await read_request(reader, peer)
                if not queue:
                    break
                answer = queue.pop(0)
                if isinstance(answer, bytes):
                    writer.write(answer)
                    await writer.drain()
                    if b"Connection: close" in answer:
                        break
                else:
                    await answer(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    peer.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        yield peer
    finally:
        for writer in writers:
            writer.close()
        server.close()
        await server.wait_closed()


def header_lines(request: bytes) -> list[tuple[str, str]]:
    """A request's headers, as sent: in their order, their names' case kept."""
    head = request.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]
    return [(name, value.strip()) for name, _, value in (line.partition(":") for line in head)]
