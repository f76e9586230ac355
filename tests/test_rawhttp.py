"""The benches' load generator (bench/rawhttp.py, bench/fakeprocess.py's post_all) against
loopback servers: it reads each answer whole, follows the server's "Connection: close",
stops at an answer whose length it cannot tell or that does not come, and delivers each
delivery once, to its perfbot, stopping at a refusal."""

from __future__ import annotations

import asyncio
import sys

import pytest

from tests.paths import REPO

sys.path.insert(0, str(REPO / "bench"))

from fakeprocess import post_all
from rawhttp import Connection, host_port, raw_request, read_request


async def _serve(answers: list[bytes]) -> tuple[asyncio.Server, list[bytes], list[int]]:
    """A server on 127.0.0.1 that reads each request whole and writes the next answer;
    the requests it read, and how many connections it accepted."""
    seen: list[bytes] = []
    accepted = [0]
    pending = iter(answers)

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted[0] += 1
        try:
            while True:
                seen.append(await read_request(reader))
                answer = next(pending)
                writer.write(answer)
                await writer.drain()
                if b"Connection: close" in answer:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(on_connection, "127.0.0.1", 0)
    return server, seen, accepted


def _port(server: asyncio.Server) -> int:
    return int(server.sockets[0].getsockname()[1])


async def test_answers_are_read_whole_on_one_kept_connection() -> None:
    server, seen, accepted = await _serve(
        [
            b"HTTP/1.1 202 Accepted\r\nContent-Length: 5\r\n\r\nfirst",
            b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 6\r\n\r\nsecond",
        ]
    )
    async with server:
        connection = Connection("127.0.0.1", _port(server))
        request = raw_request("127.0.0.1", "/webhook", {"X-GitHub-Event": "ping"}, b"{}")
        assert await connection.send(request) == (202, b"first")
        assert await connection.send(request) == (500, b"second")
        connection.close()
    assert accepted == [1]
    assert seen == [request, request]
    assert request.startswith(b"POST /webhook HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    assert request.endswith(b"X-GitHub-Event: ping\r\nContent-Length: 2\r\n\r\n{}")


async def test_a_connection_the_server_closes_is_opened_anew() -> None:
    server, seen, accepted = await _serve(
        [
            b"HTTP/1.1 202 Accepted\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
        ]
    )
    async with server:
        connection = Connection("127.0.0.1", _port(server))
        request = raw_request("127.0.0.1", "/", {}, b"x")
        assert await connection.send(request) == (202, b"")
        assert await connection.send(request) == (202, b"")
        connection.close()
    assert accepted == [2]
    assert len(seen) == 2


async def test_an_answer_without_a_length_stops_the_load() -> None:
    server, _, _ = await _serve([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"])
    async with server:
        connection = Connection("127.0.0.1", _port(server))
        with pytest.raises(RuntimeError, match="not framed by Content-Length alone"):
            await connection.send(raw_request("127.0.0.1", "/", {}, b""))
        connection.close()


def test_only_an_http_address_with_a_port_is_taken() -> None:
    assert host_port("http://127.0.0.1:8080") == ("127.0.0.1", 8080)
    for bad in ("https://127.0.0.1:8080", "http://127.0.0.1", "127.0.0.1:80"):
        with pytest.raises(ValueError, match="not an http://host:port"):
            host_port(bad)


async def test_an_answer_that_does_not_come_is_a_timeout_that_says_so() -> None:
    stalled: list[asyncio.StreamWriter] = []

    async def never_answer(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        stalled.append(writer)  # kept open, never written to

    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    async with server:
        connection = Connection("127.0.0.1", _port(server))
        with pytest.raises(TimeoutError, match=r"no whole answer from 127\.0\.0\.1:\d+ within"):
            await connection.send(raw_request("127.0.0.1", "/", {}, b""), timeout=0.2)
        for writer in stalled:
            writer.close()


async def test_post_all_delivers_each_once_to_its_perfbot_and_stops_at_a_refusal() -> None:
    received: dict[int, list[bytes]] = {}
    status = {0: b"202 Accepted", 1: b"202 Accepted"}

    async def serving(n: int) -> asyncio.Server:
        received[n] = []

        async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while True:
                    received[n].append((await read_request(reader)).split(b"\r\n\r\n", 1)[1])
                    writer.write(b"HTTP/1.1 " + status[n] + b"\r\nContent-Length: 0\r\n\r\n")
                    await writer.drain()
            except asyncio.IncompleteReadError:
                writer.close()

        return await asyncio.start_server(on_connection, "127.0.0.1", 0)

    first, second = await serving(0), await serving(1)
    async with first, second:
        urls = [f"http://127.0.0.1:{_port(first)}", f"http://127.0.0.1:{_port(second)}"]
        deliveries = [(f"delivery {n}".encode(), {"X-GitHub-Event": "ping"}) for n in range(9)]
        await post_all(urls, deliveries)
        assert sorted(received[0]) == [f"delivery {n}".encode() for n in range(0, 9, 2)]
        assert sorted(received[1]) == [f"delivery {n}".encode() for n in range(1, 9, 2)]

        status[1] = b"500 Internal Server Error"
        with pytest.raises(RuntimeError, match="perfbot answered 500"):
            await post_all(urls, deliveries)
