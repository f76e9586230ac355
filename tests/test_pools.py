"""The production wire's HTTP/1.1 (perfbot/github/pools.py, http11.py) against raw sockets
on loopback: peers that answer byte for byte as a test says, well or badly."""

from __future__ import annotations

import asyncio
import gzip

import pytest
from multidict import CIMultiDict

from perfbot.github import http11, pools
from perfbot.github.errors import GitHubUnavailable
from perfbot.github.pools import Pools
from perfbot.github.storage import fetch_blob
from perfbot.github.wire import Call, Metered, WireError
from tests.rawpeer import Answerer, Peer, peer_answering


def get(url: str, path: str = "/x", **headers: str) -> Call:
    return Call("GET", url + path, path, CIMultiDict(headers))


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


async def test_an_answer_is_read_from_a_connection_kept_for_the_next_request() -> None:
    async with peer_answering(OK, OK, OK) as peer:
        wire = Metered(Pools(4), None)
        try:
            answers = [await wire.send(get(peer.url)) for _ in range(3)]
        finally:
            await wire.close()
    assert [(a.status_code, a.content) for a in answers] == [(200, b"ok")] * 3
    assert peer.connections == 1


async def test_a_connection_the_peer_closes_or_that_idled_too_long_is_not_used_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    closing = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"
    async with peer_answering(closing) as peer:
        await _after_close(peer)
    async with peer_answering(OK, OK) as peer:
        wire = Metered(Pools(4), None)
        try:
            await wire.send(get(peer.url))
            monkeypatch.setattr(pools, "KEEPALIVE_SECONDS", 0.0)
            # The first connection idled "too long"; the peer is still serving it, so
            # this request is answered only on a new one.
            assert (await wire.send(get(peer.url))).content == b"ok"
        finally:
            await wire.close()
    assert peer.connections == 2


async def _after_close(peer: Peer) -> None:
    wire = Metered(Pools(4), None)
    try:
        assert (await wire.send(get(peer.url))).content == b"ok"
        # The peer said it closes: a second request needs (and gets) a new connection,
        # which this peer, done with its answers, closes unanswered.
        with pytest.raises(WireError, match="closed before the answer"):
            await wire.send(get(peer.url))
    finally:
        await wire.close()
    assert peer.connections == 2


async def test_chunked_gzip_a_1xx_and_a_body_that_ends_with_the_connection() -> None:
    packed = gzip.compress(b'{"ok": true}')
    chunked = (
        b"HTTP/1.1 103 Early Hints\r\nLink: </s>\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n"
        + b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (packed[:7], packed[7:]))
        + b"0\r\n\r\n"
    )
    until_close = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nthe rest"

    async def then_close(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(until_close)
        await writer.drain()
        writer.close()

    async with peer_answering(chunked, then_close) as peer:
        wire = Metered(Pools(4), None)
        try:
            first = await wire.send(get(peer.url))
            second = await wire.send(get(peer.url))
        finally:
            await wire.close()
    assert (first.status_code, first.content) == (200, b'{"ok": true}')
    assert "link" not in first.headers  # the 103's headers are not the answer's
    assert (second.content, second.whole) == (b"the rest", True)


async def test_a_body_past_the_limit_is_cut_and_its_connection_closed() -> None:
    big = b"HTTP/1.1 200 OK\r\nContent-Length: 3000000\r\n\r\n" + b"z" * 3_000_000
    async with peer_answering(big, OK) as peer:
        wire = Metered(Pools(4), None)
        try:
            cut = await wire.send(get(peer.url), limit=1_000)
            after = await wire.send(get(peer.url))
        finally:
            await wire.close()
    assert (cut.whole, cut.content) == (False, b"z" * 1_000)
    assert after.content == b"ok"
    assert peer.connections == 2  # the cut answer's rest was never read: a new connection


async def test_a_body_nobody_reads_yet_stops_the_reading_of_its_socket() -> None:
    big = b"HTTP/1.1 200 OK\r\nContent-Length: 8000000\r\n\r\n" + b"z" * 8_000_000
    async with peer_answering(big) as peer:
        raw = Pools(1)
        try:
            opened = await raw.open(get(peer.url))
            await asyncio.sleep(0.3)  # the peer writes on; the socket is not read past the mark
            conn = next(iter(raw._busy))
            held = sum(len(chunk) for chunk in conn.take())
            assert held <= http11.BUFFER_HIGH_BYTES + 1024 * 1024
            body, whole = await opened.read(None)
            await opened.release()
        finally:
            await raw.close()
    assert whole
    assert len(body) + held == 8_000_000


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "closed before the answer"),
        (b"HTTP/1.1 200 OK\r\nContent-", "closed before the answer"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"y" * 70_000 + b"\r\n\r\n", "head is too large"),
        (b"NOT HTTP AT ALL\r\n\r\n", "malformed HTTP answer"),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 1\r\n\r\nx", "encoding"),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nnope", "corrupt"),
    ],
)
async def test_a_broken_answer_is_a_wire_error(answer: bytes, message: str) -> None:
    async def then_close(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(answer)
        await writer.drain()
        writer.close()

    async with peer_answering(then_close) as peer:
        wire = Metered(Pools(4), None)
        try:
            with pytest.raises(WireError, match=message):
                await wire.send(get(peer.url))
        finally:
            await wire.close()


async def test_a_broken_download_is_githubs_unavailability_naming_no_url() -> None:
    cut_short = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"

    async def then_close(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(cut_short)
        writer.close()

    async with peer_answering(then_close) as peer:
        storage = Metered(Pools(4), None)
        try:
            with pytest.raises(GitHubUnavailable) as raised:
                await fetch_blob(storage, f"{peer.url}/blob?sig=secret", 100)
        finally:
            await storage.close()
    assert str(raised.value) == "artifact download failed (WireError)"


async def test_a_refused_connection_is_a_wire_error() -> None:
    async with peer_answering() as peer:
        url = peer.url
    wire = Metered(Pools(4), None)  # the peer has gone: nothing listens on its port
    try:
        with pytest.raises(WireError, match=r"could not connect \(ConnectionRefusedError\)"):
            await wire.send(get(url))
    finally:
        await wire.close()


@pytest.mark.parametrize(
    "call",
    [
        Call("GET", "http://127.0.0.1:9/a b", "/a b", CIMultiDict()),
        Call("GET", "http://127.0.0.1:9/\u00e9", "/\u00e9", CIMultiDict()),
        Call("GET", "http://127.0.0.1:9/x", "/x", CIMultiDict({"X": "a\r\nHost: evil"})),
        Call("GET", "http://127.0.0.1:9/x", "/x", CIMultiDict({"X": "a\nb"})),
        Call("GET", "http://127.0.0.1:9/x", "/x", CIMultiDict({"X": "\u2603"})),
        Call("GET", "ftp://127.0.0.1:9/x", "/x", CIMultiDict()),
        Call("HEAD", "http://127.0.0.1:9/x", "/x", CIMultiDict()),
    ],
)
async def test_a_call_that_could_split_its_request_is_refused_before_any_connection(
    call: Call,
) -> None:
    wire = Pools(4)
    try:
        with pytest.raises(ValueError, match=r"request target|header|http and https|HEAD"):
            await wire.open(call)
    finally:
        await wire.close()


async def test_requests_past_the_limit_wait_for_a_connection_and_a_cancel_frees_its_own() -> None:
    hung_up = asyncio.Event()

    async def never(reader: asyncio.StreamReader, _: asyncio.StreamWriter) -> None:
        # Read, never answered: until the client hangs up.
        if await reader.read() == b"":
            hung_up.set()

    async with peer_answering(never) as peer:
        raw = Pools(1)
        try:
            hung = asyncio.create_task(raw.open(get(peer.url)))
            await asyncio.sleep(0.1)
            waiting = asyncio.create_task(raw.open(get(peer.url)))
            await asyncio.sleep(0.1)
            assert not waiting.done()  # the second waits its turn
            assert len(peer.requests) == 1
            hung.cancel()  # as the call's deadline does
            with pytest.raises(asyncio.CancelledError):
                await hung
            async with asyncio.timeout(10):
                await hung_up.wait()  # its connection closed
            # The cancelled request's connection is closed, its place given to the next:
            # which this peer, with no answers left, closes unanswered.
            with pytest.raises(WireError, match="closed before the answer"):
                async with asyncio.timeout(10):
                    await waiting
        finally:
            await raw.close()
    assert peer.connections == 2


async def late(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(OK)
    await writer.drain()
    await asyncio.sleep(0.05)
    writer.write(b"HTTP/1.1 200 OK\r\n")  # after the answer, before any request


@pytest.mark.parametrize("answering", [OK + OK, late], ids=["with the answer", "after it"])
async def test_bytes_after_an_answer_make_its_connection_unusable(
    answering: bytes | Answerer,
) -> None:
    async with peer_answering(answering, OK) as peer:
        wire = Metered(Pools(4), None)
        try:
            first = await wire.send(get(peer.url))
            await asyncio.sleep(0.1)
            second = await wire.send(get(peer.url))
        finally:
            await wire.close()
    assert first.content == second.content == b"ok"
    assert peer.connections == 2
