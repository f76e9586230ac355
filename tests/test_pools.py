"""The production wire's HTTP/1.1 (perfbot/github/pools.py, http11.py) against raw sockets
on loopback: peers that answer byte for byte as a test says, well or badly."""

from __future__ import annotations

import asyncio
import gzip
import socket
import struct
import tracemalloc
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from multidict import CIMultiDict

from perfbot.github import http11, pools
from perfbot.github.errors import GitHubUnavailable
from perfbot.github.pools import Pools
from perfbot.github.storage import fetch_blob
from perfbot.github.wire import Call, Metered, WireError
from perfbot.support.metrics import Metrics
from tests.rawpeer import Answerer, Peer, peer_answering


@asynccontextmanager
async def metered() -> AsyncIterator[Metered]:
    """The pools as the App sends through them (no metrics), closed at the end."""
    wire = Metered(Pools(4), None)
    try:
        yield wire
    finally:
        await wire.close()


def get(url: str, path: str = "/x", **headers: str) -> Call:
    return Call("GET", url + path, path, CIMultiDict(headers))


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


async def test_an_answer_is_read_from_a_connection_kept_for_the_next_request() -> None:
    async with peer_answering(OK, OK, OK) as peer, metered() as wire:
        answers = [await wire.send(get(peer.url)) for _ in range(3)]
    assert [(a.status_code, a.content) for a in answers] == [(200, b"ok")] * 3
    assert peer.connections == 1


async def test_a_connection_the_peer_closes_or_that_idled_too_long_is_not_used_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    closing = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"
    async with peer_answering(closing) as peer:
        await _after_close(peer)
    async with peer_answering(OK, OK) as peer, metered() as wire:
        await wire.send(get(peer.url))
        monkeypatch.setattr(pools, "KEEPALIVE_SECONDS", 0.0)
        # The first connection idled "too long"; the peer is still serving it, so
        # this request is answered only on a new one.
        assert (await wire.send(get(peer.url))).content == b"ok"
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

    async with peer_answering(chunked, then_close) as peer, metered() as wire:
        first = await wire.send(get(peer.url))
        second = await wire.send(get(peer.url))
    assert (first.status_code, first.content) == (200, b'{"ok": true}')
    assert "link" not in first.headers  # the 103's headers are not the answer's
    assert (second.content, second.whole) == (b"the rest", True)


async def test_a_body_past_the_limit_is_cut_and_its_connection_closed() -> None:
    big = b"HTTP/1.1 200 OK\r\nContent-Length: 3000000\r\n\r\n" + b"z" * 3_000_000
    async with peer_answering(big, OK) as peer, metered() as wire:
        cut = await wire.send(get(peer.url), limit=1_000)
        after = await wire.send(get(peer.url))
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

    async with peer_answering(then_close) as peer, metered() as wire:
        with pytest.raises(WireError, match=message):
            await wire.send(get(peer.url))


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
        Call("GET", "https://api.example\r\n.evil.example/x", "/x", CIMultiDict()),
        Call("GET", "https://api.example/a\tb", "/a\tb", CIMultiDict()),
        Call("HEAD", "http://127.0.0.1:9/x", "/x", CIMultiDict()),
    ],
)
async def test_a_call_that_could_split_its_request_is_refused_before_any_connection(
    call: Call,
) -> None:
    wire = Pools(4)
    try:
        with pytest.raises(ValueError, match=r"request target|header|http and https|HEAD|URL with"):
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
    async with peer_answering(answering, OK) as peer, metered() as wire:
        first = await wire.send(get(peer.url))
        await asyncio.sleep(0.1)
        second = await wire.send(get(peer.url))
    assert first.content == second.content == b"ok"
    assert peer.connections == 2


async def test_a_head_line_that_never_ends_is_refused_once_past_the_bound() -> None:
    async def endless(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nX: ")
        for _piece in range(40):  # 320 KB in pieces, never a line's end: bounded, and ended
            writer.write(b"y" * 8_000)
            await writer.drain()
            await asyncio.sleep(0.005)

    async with peer_answering(endless) as peer, metered() as wire:
        with pytest.raises(WireError, match="head is too large"):
            await wire.send(get(peer.url))


async def test_a_small_gzip_of_a_huge_body_is_decoded_no_further_than_the_limit() -> None:
    packed = gzip.compress(b"\0" * 50_000_000)
    bomb = (
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(packed)
        + packed
    )
    async with peer_answering(bomb) as peer:
        wire = Metered(Pools(4), None)
        tracemalloc.start()
        try:
            cut = await wire.send(get(peer.url), limit=1_000)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            await wire.close()
    assert (cut.whole, cut.content) == (False, b"\0" * 1_000)
    assert peak < 5_000_000  # the 50 MB it holds was never held


async def test_a_reset_in_a_body_without_a_length_is_no_end_of_it() -> None:
    async def reset(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npartial-")
        await writer.drain()
        await asyncio.sleep(0.05)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # with SO_LINGER 0: a reset, not a close

    async with peer_answering(reset) as peer, metered() as wire:
        with pytest.raises(WireError, match="closed before the answer"):
            await wire.send(get(peer.url))


class _Transport:
    """What a Connection sees of its socket, recorded."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.events: list[str] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def pause_reading(self) -> None:
        self.events.append("pause")

    def resume_reading(self) -> None:
        self.events.append("resume")

    def close(self) -> None:
        self.events.append("close")

    def abort(self) -> None:
        self.events.append("abort")


def _connection() -> tuple[http11.Connection, _Transport]:
    conn, transport = http11.Connection(), _Transport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    return conn, transport


def test_an_answer_that_ended_while_reading_was_paused_is_not_reused() -> None:
    conn, transport = _connection()
    conn.expect(b"GET / HTTP/1.1\r\n\r\n")
    body = b"z" * (http11.BUFFER_HIGH_BYTES + 1)
    conn.data_received(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    assert conn.complete
    assert transport.events == ["pause"]
    assert not conn.reusable  # its reading is paused: a next answer would never be read


def test_a_connection_given_up_on_is_aborted_and_a_finished_one_kept() -> None:
    wire = Pools(4)
    given_up, aborted = _connection()
    given_up.expect(b"GET / HTTP/1.1\r\n\r\n")
    given_up.data_received(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf")
    wire.give_back(("http", "h", 80), given_up)
    finished, kept = _connection()
    finished.expect(b"GET / HTTP/1.1\r\n\r\n")
    finished.data_received(OK)
    wire.give_back(("http", "h", 80), finished)
    # The rest of an unwanted answer (or an unread request body) is dropped at once.
    assert aborted.events == ["abort"]
    assert kept.events == []
    assert wire._idle_connection(("http", "h", 80)) is finished


@pytest.mark.parametrize(("method", "retried"), [("GET", True), ("POST", False)])
async def test_a_kept_connection_closed_before_any_answer_is_retried_only_if_idempotent(
    method: str, retried: bool
) -> None:
    async def hang_up(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()  # read the request, closed without a byte of answer

    async with peer_answering(OK, hang_up, OK) as peer, metered() as wire:
        await wire.send(get(peer.url))
        again = Call(method, peer.url + "/x", "/x", CIMultiDict())
        if retried:
            assert (await wire.send(again)).content == b"ok"
        else:
            with pytest.raises(WireError, match="closed before the answer"):
                await wire.send(again)
    assert peer.connections == (2 if retried else 1)


async def test_a_connect_past_its_time_is_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pools, "CONNECT_SECONDS", 0.05)
    loop = asyncio.get_running_loop()

    async def never_connects(*args: object, **kwargs: object) -> None:
        await asyncio.sleep(3600)

    monkeypatch.setattr(loop, "create_connection", never_connects)
    metrics = Metrics()
    wire = Metered(Pools(4), metrics)
    try:
        with pytest.raises(TimeoutError):
            await wire.send(get("http://127.0.0.1:9"))
    finally:
        await wire.close()
    statuses = [
        sample.labels["status"]
        for metric in metrics.github_calls.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    ]
    assert statuses == ["TimeoutError"]  # not the CancelledError asyncio's timeout came from


@pytest.mark.parametrize(
    "sent",
    [b"", b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf"],
    ids=["no head", "half a body"],
)
async def test_a_peer_that_stops_sending_is_a_timeout_and_its_connection_is_not_kept(
    monkeypatch: pytest.MonkeyPatch, sent: bytes
) -> None:
    monkeypatch.setattr(pools, "READ_SECONDS", 0.05)
    stalled = asyncio.Event()

    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(sent)
        await writer.drain()
        await stalled.wait()

    async def read_all() -> None:
        answer = await wire.send(get(peer.url))
        assert answer.status_code == 200

    async with peer_answering(stall, b"HTTP/1.1 204 No Content\r\n\r\n") as peer:
        wire = Metered(Pools(4), None)
        try:
            async with asyncio.timeout(10):  # a guard against a hang of the test itself
                with pytest.raises(TimeoutError):
                    await read_all()
                answer = await wire.send(get(peer.url))
        finally:
            stalled.set()
            await wire.close()
    assert answer.status_code == 204
    assert peer.connections == 2  # the stalled one was not used again


@pytest.mark.parametrize(
    ("answer", "body"),
    [
        (b"HTTP/1.1 304 Not Modified\r\nContent-Encoding: br\r\n\r\n", b""),
        (
            b"HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\nContent-Length: 7\r\n\r\n"
            + zlib.compress(b"hello")[2:-4],
            b"hello",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s"
            % (
                len(gzip.compress(b"one,") + gzip.compress(b"two")),
                gzip.compress(b"one,") + gzip.compress(b"two"),
            ),
            b"one,two",
        ),
    ],
    ids=["a 304 naming an encoding", "raw deflate", "two gzip members"],
)
async def test_content_codings_as_servers_send_them(answer: bytes, body: bytes) -> None:
    async with peer_answering(answer) as peer, metered() as wire:
        got = await wire.send(get(peer.url))
    assert (got.content, got.whole) == (body, True)


async def test_a_gzip_cut_short_is_a_wire_error() -> None:
    packed = gzip.compress(b"x" * 1000)[:-8]
    cut = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(packed)
    async with peer_answering(cut + packed) as peer, metered() as wire:
        with pytest.raises(WireError, match="cut short"):
            await wire.send(get(peer.url))


def test_a_query_without_a_path_is_kept_and_credentials_in_a_url_are_refused() -> None:
    wire = Pools(4)
    assert wire._split("http://h.example?per_page=100") == (
        ("http", "h.example", 80),
        b"h.example",
        b"/?per_page=100",
    )
    assert wire._split("https://h.example:8443/a/b?c=/d#frag")[2] == b"/a/b?c=/d"
    with pytest.raises(ValueError, match="credentials"):
        wire._split("https://user:pw@h.example/x")


@pytest.mark.parametrize(
    "url",
    [
        "https://h.example:8443/repos/o/r/pulls/7",
        "https://h.example:8443/a//b?c=/d&e=f",
        "https://h.example:8443/a/b?",
        "https://h.example:8443/a/b#frag",
        "https://h.example:8443/a?b#c?d",
        "https://h.example:8443/",
        "HTTPS://h.example:8443/x",
        "https://h.example:8443?q=1",
        "https://h.example:8443@evil.example/x",
        "https://h.example:8443/caf\u00e9",
    ],
)
def test_a_url_of_a_host_already_seen_is_split_as_the_first_one_was(url: str) -> None:
    # The second URL of a host takes a shortcut past urlsplit; it must not split otherwise.
    seen, fresh = Pools(4), Pools(4)
    seen._split("https://h.example:8443/first")
    try:
        expected: object = fresh._split(url)
    except ValueError as exc:
        expected = str(exc)
    try:
        got: object = seen._split(url)
    except ValueError as exc:
        got = str(exc)
    assert got == expected


@pytest.mark.parametrize(
    "call",
    [
        Call("GET /admin HTTP/1.1\r\nX:", "http://h/x", "/x", CIMultiDict()),
        Call("GET", "http://h/x", "/x", CIMultiDict({"Transfer-Encoding": "chunked"})),
        Call("GET", "http://h/x", "/x", CIMultiDict({"Transfer-Encoding ": "x"})),
        Call("GET", "http://h/x", "/x", CIMultiDict({"A:B": "c"})),
    ],
    ids=["a method with a request in it", "a transfer coding", "a space", "a colon"],
)
def test_a_method_or_header_name_that_is_no_token_is_refused(call: Call) -> None:
    with pytest.raises(ValueError, match=r"token|transfer coding"):
        pools._request(call, b"h", b"/x")


async def test_pools_closed_during_an_answer_end_it_and_send_nothing_again() -> None:
    async def partial(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npartial-")
        await writer.drain()
        await asyncio.sleep(3600)  # the rest never comes

    async def silent(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(3600)

    async with peer_answering(partial) as peer:
        wire = Metered(Pools(4), None)
        reading = asyncio.create_task(wire.send(get(peer.url)))
        await asyncio.sleep(0.2)
        await wire.close()  # a shutdown while a body without a length is being read
        with pytest.raises(WireError, match="closed before the answer"):
            async with asyncio.timeout(10):
                await reading
    async with peer_answering(OK, silent, OK) as peer:
        wire = Metered(Pools(4), None)
        await wire.send(get(peer.url))
        waiting = asyncio.create_task(wire.send(get(peer.url)))  # on the kept connection
        await asyncio.sleep(0.2)
        await wire.close()
        with pytest.raises(WireError):
            async with asyncio.timeout(10):
                await waiting
        with pytest.raises(WireError, match="pools are closed"):
            await wire.send(get(peer.url))
    assert len(peer.requests) == 2  # the GET cut by the close was not sent again
    assert peer.connections == 1


async def test_a_transfer_coding_other_than_chunked_is_refused() -> None:
    packed = gzip.compress(b"hello")
    answer = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
        + b"%x\r\n%s\r\n0\r\n\r\n" % (len(packed), packed)
    )
    async with peer_answering(answer) as peer, metered() as wire:
        with pytest.raises(WireError, match="transfer coding"):
            await wire.send(get(peer.url))


def test_a_gzip_with_padding_and_a_bare_deflate_split_after_a_byte_are_decoded() -> None:
    padded = pools._Decoder("gzip")
    assert b"".join(padded.feed(gzip.compress(b"hello") + b"\0" * 8, None, 0)) == b"hello"
    assert padded.feed(b"\0\0", None, 5) == []
    padded.end()
    members = pools._Decoder("gzip")  # the second member starts just as a chunk does
    decoded = members.feed(gzip.compress(b"one,"), None, 0) + members.feed(
        gzip.compress(b"two"), None, 4
    )
    assert b"".join(decoded) == b"one,two"
    bare = zlib.compress(b"hello world")[2:-4]
    split = pools._Decoder("deflate")
    decoded = split.feed(bare[:1], None, 0) + split.feed(bare[1:], None, 0)
    assert b"".join(decoded) == b"hello world"
    split.end()
