"""``POST /webhook`` read whole in one read is answered without ASGI (``perfbot.app.fastpath``),
with the very answer uvicorn's ASGI path gives; anything else still goes uvicorn's way."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from perfbot.app import fastpath, processes
from perfbot.app.ingest import WebhookEndpoint
from perfbot.app.processes import BoundedHttpTools, server_config
from perfbot.app.server import create_app
from perfbot.app.settings import Settings
from perfbot.app.triage import sign
from perfbot.store import SQLiteStore
from perfbot.support.metrics import Metrics
from tests.harness import SECRET, World, settings_env, uvicorn_on_loopback, wait_until


@dataclass
class Served:
    port: int
    database: Path
    asgi_calls: list[str]  # the delivery ids that reached the ASGI endpoint
    server: uvicorn.Server

    def stored(self, delivery_id: str) -> bool:
        with sqlite3.connect(f"file:{self.database}?mode=ro", uri=True) as conn:
            return (
                conn.execute("SELECT 1 FROM deliveries WHERE id = ?", (delivery_id,)).fetchone()
                is not None
            )


@pytest.fixture
def served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[Served]:
    """perfbot's app (workers off) under uvicorn with httptools, as ``perfbot serve`` runs it
    (``@pytest.mark.parametrize("served", [options], indirect=True)``: uvicorn's options)."""
    calls: list[str] = []
    asgi = WebhookEndpoint.__call__

    async def counted(self: WebhookEndpoint, scope: Any, receive: Any, send: Any) -> None:
        ids = [v.decode() for k, v in scope["headers"] if k == b"x-github-delivery"]
        calls.append(ids[0] if ids else "")
        await asgi(self, scope, receive, send)

    monkeypatch.setattr(WebhookEndpoint, "__call__", counted)
    world = World.create()
    database = tmp_path / "perfbot.db"
    env = settings_env(world.fake.api_url, database)
    app = create_app(Settings.from_env(env), run_workers=False)
    options: dict[str, Any] = dict(getattr(request, "param", {}))
    config = server_config(app, "127.0.0.1", 0, http="httptools", log_level="warning", **options)
    server = uvicorn.Server(config)
    with uvicorn_on_loopback(server) as port:
        yield Served(port, database, calls, server)


def request(
    body: bytes,
    *,
    delivery_id: str | None = None,
    event: str = "workflow_run",
    signature: str | None = None,
    extra: str = "",
) -> tuple[bytes, bytes]:
    """The head and body of a delivery as GitHub sends it."""
    head = (
        "POST /webhook HTTP/1.1\r\nHost: perfbot\r\nContent-Type: application/json\r\n"
        f"X-GitHub-Event: {event}\r\nX-GitHub-Delivery: {delivery_id or uuid.uuid4()}\r\n"
        f"X-Hub-Signature-256: {signature or sign(SECRET, body)}\r\n{extra}"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode(), body


def delivery_body() -> bytes:
    world = World.create()
    body, _ = world.delivery(world.measured_run(world.pull(1, "a" * 40), 7001))
    return body


@dataclass(frozen=True)
class Answer:
    status_line: bytes
    headers: tuple[tuple[bytes, bytes], ...]  # in order, as sent; uvicorn's date left out
    body: bytes
    closed: bool


def read_answer(sock: socket.socket, data: bytes = b"") -> tuple[Answer, bytes]:
    """One answer from ``sock`` (``data``: what was read of it already), and whatever
    came after it."""
    sock.settimeout(10)
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before an answer: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *lines = head.split(b"\r\n")
    pairs = [tuple(part.strip() for part in line.split(b":", 1)) for line in lines]
    headers = tuple((name, value) for name, value in pairs if name != b"date")
    length = int(dict(headers)[b"content-length"])
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "closed within the answer's body"
        rest += chunk
    body, after = rest[:length], rest[length:]
    return Answer(status_line, headers, body, closed=False), after


def closed_after(sock: socket.socket) -> bool:
    """Whether the server closes ``sock`` (within a second) with nothing more sent."""
    sock.settimeout(1)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


# Longer than the fast path waits for the rest of a body: past it, uvicorn's path.
HELD_BACK_SECONDS = processes.WHOLE_WAIT_SECONDS + 0.35


# Well within the fast path's wait: how long a client that writes head and body apart
# leaves between them, at most.
APART_SECONDS = 0.01


def exchange(
    port: int,
    head: bytes,
    body: bytes,
    *,
    split: bool,
    pause: float = HELD_BACK_SECONDS,
    apart: bool = False,
) -> Answer:
    """One request on a connection of its own: sent at once (``apart``: its head, then
    its body ``APART_SECONDS`` later), or its body held back for ``pause`` after its first
    byte."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        if apart:
            sock.sendall(head)
            time.sleep(APART_SECONDS)
            sock.sendall(body)
        elif split:
            sock.sendall(head + body[:1])
            time.sleep(pause)
            sock.sendall(body[1:])
        else:
            sock.sendall(head + body)
        answer, after = read_answer(sock)
        assert after == b""
        return Answer(answer.status_line, answer.headers, answer.body, closed_after(sock))


def test_a_whole_delivery_is_stored_and_answered_without_asgi(served: Served) -> None:
    delivery_id = str(uuid.uuid4())
    answer = exchange(served.port, *request(delivery_body(), delivery_id=delivery_id), split=False)
    assert answer.status_line == b"HTTP/1.1 202 Accepted"
    assert json.loads(answer.body) == {"status": "queued"}
    assert not answer.closed  # kept alive
    assert served.stored(delivery_id)
    assert served.asgi_calls == []


def test_a_delivery_whose_body_comes_in_parts_goes_uvicorns_way(served: Served) -> None:
    delivery_id = str(uuid.uuid4())
    answer = exchange(served.port, *request(delivery_body(), delivery_id=delivery_id), split=True)
    assert answer.status_line == b"HTTP/1.1 202 Accepted"
    assert json.loads(answer.body) == {"status": "queued"}
    assert served.stored(delivery_id)
    assert served.asgi_calls == [delivery_id]


def test_a_body_written_apart_from_its_head_is_waited_for(served: Served) -> None:
    # httpx, say, writes a request's head and its body apart; a proxy streams the body.
    delivery_id = str(uuid.uuid4())
    head, body = request(delivery_body(), delivery_id=delivery_id)
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(head)
        time.sleep(APART_SECONDS)
        sock.sendall(body[: len(body) // 2])
        time.sleep(APART_SECONDS)
        sock.sendall(body[len(body) // 2 :])
        answer, after = read_answer(sock)
    assert json.loads(answer.body) == {"status": "queued"}
    assert after == b""
    assert served.stored(delivery_id)
    assert served.asgi_calls == []


def test_a_body_larger_than_the_wait_goes_uvicorns_way_at_once(served: Served) -> None:
    delivery_id = str(uuid.uuid4())
    payload = json.loads(delivery_body())
    payload["padding"] = "x" * processes.WHOLE_WAIT_BYTES
    head, body = request(json.dumps(payload).encode(), delivery_id=delivery_id)
    # Held back for less than the wait: only the size sends it uvicorn's way.
    answer = exchange(served.port, head, body, split=True, pause=processes.WHOLE_WAIT_SECONDS / 3)
    assert json.loads(answer.body) == {"status": "queued"}
    assert served.asgi_calls == [delivery_id]


@pytest.mark.parametrize("served", [{"limit_concurrency": 1}], indirect=True)
def test_at_the_limit_a_request_waiting_for_its_body_makes_room(served: Served) -> None:
    newer_id = str(uuid.uuid4())
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as waiting:
        head, body = request(delivery_body())
        waiting.sendall(head + body[:100])
        time.sleep(0.05)  # waiting for the rest on the fast path: the one request allowed
        answer = exchange(served.port, *request(delivery_body(), delivery_id=newer_id), split=False)
        evicted, _ = read_answer(waiting)
    assert evicted.status_line == b"HTTP/1.1 503 Service Unavailable"
    assert json.loads(answer.body) == {"status": "queued"}
    # The evicted one waited on the fast path; at the limit, the newer went uvicorn's way.
    assert served.asgi_calls == [newer_id]


@pytest.mark.parametrize("served", [{"limit_concurrency": 2}], indirect=True)
def test_a_request_handed_on_after_the_wait_keeps_its_place_to_make_room(
    served: Served,
) -> None:
    head, body = request(delivery_body())
    large_head, large_body = request(b"x" * (processes.WHOLE_WAIT_BYTES + 1))
    with (
        socket.create_connection(("127.0.0.1", served.port), timeout=10) as oldest,
        socket.create_connection(("127.0.0.1", served.port), timeout=10) as younger,
    ):
        oldest.sendall(head + body[:10])  # waits on the fast path, then is handed on
        time.sleep(0.05)
        younger.sendall(large_head + large_body[:10])  # uvicorn's way at once
        time.sleep(HELD_BACK_SECONDS)
        # Both places taken by requests waiting for their bodies: the oldest makes room.
        answer = exchange(served.port, *request(delivery_body()), split=False)
        evicted, _ = read_answer(oldest)
        younger.sendall(large_body[10:])
        kept, _ = read_answer(younger)
    assert evicted.status_line == b"HTTP/1.1 503 Service Unavailable"
    assert json.loads(answer.body) == {"status": "queued"}
    assert kept.status_line == b"HTTP/1.1 400 Bad Request"  # its body is no JSON: answered


def test_a_malformed_signature_is_refused_without_waiting_for_the_body(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A wait far past read_answer's bound: only a refusal at once can pass.
    monkeypatch.setattr(processes, "WHOLE_WAIT_SECONDS", 60.0)
    head, _body = request(delivery_body(), signature="sha1=abc")
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(head)  # and no body
        answer, _ = read_answer(sock)
    assert answer.status_line == b"HTTP/1.1 401 Unauthorized"


def test_one_waited_requests_timer_does_not_hand_on_the_next(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(processes, "WHOLE_WAIT_SECONDS", 1.0)
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        # The first body 0.6 s after its head, the second's 0.8 s after its own: the
        # first's timer, were it left, would go off 0.4 s into the second's wait.
        for pause in (0.6, 0.8):
            head, body = request(delivery_body())
            sock.sendall(head)
            time.sleep(pause)
            sock.sendall(body)
            answer, _ = read_answer(sock)
            assert json.loads(answer.body) == {"status": "queued"}
    assert served.asgi_calls == []


def test_a_waited_answer_leaves_nothing_of_its_body_on_the_connection(served: Served) -> None:
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        for _ in range(3):
            head, body = request(delivery_body())
            sock.sendall(head)
            time.sleep(APART_SECONDS)
            sock.sendall(body)
            read_answer(sock)
        (connection,) = served.server.server_state.connections
        assert isinstance(connection, BoundedHttpTools)
        assert connection.cycle.message_event is fastpath.NO_WAITER
    assert served.asgi_calls == []


@pytest.mark.parametrize("arrives", [True, False], ids=["in-time", "handed-on"])
def test_a_shutdown_while_a_body_is_awaited_makes_its_answer_the_last(
    served: Served, arrives: bool
) -> None:
    head, body = request(delivery_body())
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(head + body[:10])
        time.sleep(0.05)
        served.server.should_exit = True
        time.sleep(0.1 if arrives else HELD_BACK_SECONDS)
        sock.sendall(body[10:])
        answer, _ = read_answer(sock)
        assert json.loads(answer.body) == {"status": "queued"}
        assert (b"connection", b"close") in answer.headers
        assert closed_after(sock)
    assert served.asgi_calls == ([] if arrives else [served.asgi_calls[0]])


@pytest.mark.parametrize("served", [{"limit_concurrency": 1}], indirect=True)
def test_a_request_handed_on_after_the_wait_is_not_counted_twice(served: Served) -> None:
    # Its waiting task stops counting when uvicorn's takes over: with one place, that
    # request is served, not answered 503 as if a second were in flight.
    answer = exchange(served.port, *request(delivery_body()), split=True)
    assert json.loads(answer.body) == {"status": "queued"}
    assert len(served.asgi_calls) == 1


@pytest.mark.parametrize("served", [{"limit_concurrency": 1}], indirect=True)
def test_a_sender_gone_while_its_body_was_awaited_frees_its_place(served: Served) -> None:
    head, body = request(delivery_body())
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(head + body[:100])
        time.sleep(0.05)
    time.sleep(0.1)  # its connection lost: its waiting task ends, and stops counting
    answer = exchange(served.port, *request(delivery_body()), split=False)
    assert json.loads(answer.body) == {"status": "queued"}  # not 503: the place is free
    assert served.asgi_calls == []


def _cases() -> dict[str, Any]:
    body = delivery_body()
    return {
        "queued": lambda: request(body),
        "ping": lambda: request(b'{"zen": "Keep it logically awesome."}', event="ping"),
        "not json": lambda: request(b"{not json"),
        "not an object": lambda: request(b"[1, 2]"),
        "wrong signature": lambda: request(body, signature="sha256=" + "0" * 64),
        "malformed signature": lambda: request(body, signature="sha1=abc"),
        "no delivery id": lambda: (
            request(body)[0].replace(b"X-GitHub-Delivery", b"X-Other"),
            body,
        ),
    }


@pytest.mark.parametrize("case", list(_cases()))
def test_the_fast_answer_is_the_asgi_paths_answer(served: Served, case: str) -> None:
    make = _cases()[case]
    fast = exchange(served.port, *make(), split=False)
    calls = len(served.asgi_calls)
    slow = exchange(served.port, *make(), split=True)
    assert calls == 0
    assert len(served.asgi_calls) == 1
    assert fast == slow
    assert exchange(served.port, *make(), split=False, apart=True) == slow  # waited for


def test_a_repeated_delivery_is_a_duplicate_either_way(served: Served) -> None:
    delivery_id = str(uuid.uuid4())
    head, body = request(delivery_body(), delivery_id=delivery_id)
    first = exchange(served.port, head, body, split=False)
    again_fast = exchange(served.port, head, body, split=False)
    again_slow = exchange(served.port, head, body, split=True)
    assert json.loads(first.body) == {"status": "queued"}
    assert json.loads(again_fast.body) == json.loads(again_slow.body) == {"status": "duplicate"}


def test_deliveries_kept_alive_and_pipelined_are_answered_in_order(served: Served) -> None:
    body = delivery_body()
    ids = [str(uuid.uuid4()) for _ in range(4)]
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        # Two one after the other on the kept connection, then two in one write: the
        # second of those waits behind the first one's answer.
        for delivery_id in ids[:2]:
            sock.sendall(b"".join(request(body, delivery_id=delivery_id)))
            answer, after = read_answer(sock)
            assert json.loads(answer.body) == {"status": "queued"}
            assert after == b""
        ping_id = str(uuid.uuid4())
        ping = request(b"{}", event="ping", delivery_id=ping_id)
        sock.sendall(b"".join((*request(body, delivery_id=ids[2]), *ping)))
        first, after = read_answer(sock)
        second, after = read_answer(sock, after)
        assert json.loads(first.body) == {"status": "queued"}
        assert json.loads(second.body) == {"status": "pong"}
        assert after == b""
    assert all(served.stored(delivery_id) for delivery_id in ids[:3])
    # The ping came while the delivery before it was being answered: uvicorn queued it.
    assert served.asgi_calls == [ping_id]


def test_connection_close_is_honoured_after_the_answer(served: Served) -> None:
    def make() -> tuple[bytes, bytes]:
        return request(delivery_body(), extra="Connection: keep-alive, close\r\n")

    answer = exchange(served.port, *make(), split=False)
    assert answer.status_line == b"HTTP/1.1 202 Accepted"
    assert (b"connection", b"close") in answer.headers
    assert answer.closed
    assert served.asgi_calls == []
    assert answer == exchange(served.port, *make(), split=True)


def test_an_answer_that_fails_is_a_500_and_a_close_as_uvicorns(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def cancelled(*_args: Any) -> Any:
        raise asyncio.CancelledError  # not an Exception: ingest's own handler lets it by

    monkeypatch.setattr(WebhookEndpoint, "_answer_body", cancelled)
    head, body = request(delivery_body())
    fast = exchange(served.port, head, body, split=False)
    slow = exchange(served.port, head, body, split=True)
    assert fast.status_line == b"HTTP/1.1 500 Internal Server Error"
    assert fast.closed
    assert fast == slow


@pytest.mark.parametrize("served", [{"limit_concurrency": 1}], indirect=True)
def test_at_the_request_limit_a_whole_delivery_goes_uvicorns_way(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    record = SQLiteStore.record_delivery

    async def held(self: SQLiteStore, *args: Any) -> bool:
        for _ in range(1000):  # 10 s at most
            if release.is_set():
                break
            await asyncio.sleep(0.01)
        return await record(self, *args)

    monkeypatch.setattr(SQLiteStore, "record_delivery", held)
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as first:
        first.sendall(b"".join(request(delivery_body())))
        time.sleep(0.3)  # its answer in flight: the one request the limit allows
        refused = exchange(served.port, *request(delivery_body()), split=False)
        release.set()
        answer, _ = read_answer(first)
    assert refused.status_line == b"HTTP/1.1 503 Service Unavailable"
    assert answer.status_line == b"HTTP/1.1 202 Accepted"
    assert served.asgi_calls == []


def test_a_sender_gone_before_its_answer_loses_nothing(served: Served) -> None:
    delivery_id = str(uuid.uuid4())
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(b"".join(request(delivery_body(), delivery_id=delivery_id)))
    wait_until(lambda: served.stored(delivery_id), 10, "the delivery to be stored")
    # The server goes on serving.
    answer = exchange(served.port, *request(delivery_body()), split=False)
    assert json.loads(answer.body) == {"status": "queued"}


@pytest.mark.parametrize(
    ("method", "url", "version", "headers", "takes"),
    [
        (b"POST", b"/webhook", "1.1", [(b"content-length", b"2")], True),
        (b"GET", b"/webhook", "1.1", [(b"content-length", b"2")], False),
        (b"POST", b"/healthz", "1.1", [(b"content-length", b"2")], False),
        (b"POST", b"/webhook?x=1", "1.1", [(b"content-length", b"2")], False),
        (b"POST", b"/%77ebhook", "1.1", [(b"content-length", b"2")], False),
        (b"POST", b"/webhook", "1.0", [(b"content-length", b"2")], False),
        (b"POST", b"/webhook", "1.1", [], False),
        (b"POST", b"/webhook", "1.1", [(b"transfer-encoding", b"chunked")], False),
        (
            b"POST",
            b"/webhook",
            "1.1",
            [(b"content-length", b"2"), (b"expect", b"100-continue")],
            False,
        ),
        (
            b"POST",
            b"/webhook",
            "1.1",
            [(b"content-length", b"2"), (b"upgrade", b"websocket")],
            False,
        ),
    ],
)
def test_only_a_plain_webhook_request_takes_the_fast_path(
    method: bytes, url: bytes, version: str, headers: list[tuple[bytes, bytes]], takes: bool
) -> None:
    assert fastpath.takes(method, url, version, headers) is takes


@pytest.mark.parametrize("keep_alive", [True, False])
def test_an_answer_is_written_as_uvicorn_writes_it(keep_alive: bool) -> None:
    start = {"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"2")]}
    data, close = fastpath.encoded(
        (start, {"type": "http.response.body", "body": b"{}"}), [(b"date", b"Thu")], keep_alive
    )
    ending = b"" if keep_alive else b"connection: close\r\n"
    assert (
        data == b"HTTP/1.1 202 Accepted\r\ndate: Thu\r\ncontent-length: 2\r\n" + ending + b"\r\n{}"
    )
    assert close is not keep_alive


# -- the endpoint: answer_whole against its ASGI path, for what sockets cannot show -------


class FailingStore:
    async def record_delivery(self, *args: Any) -> bool:
        raise RuntimeError("the disk is gone")


def endpoint(tmp_path: Path, store: Any) -> WebhookEndpoint:
    settings = Settings.from_env(
        settings_env("http://127.0.0.1:9", tmp_path / "db", PERFBOT_MAX_BODY_BYTES="65536")
    )
    metrics = Metrics()
    return WebhookEndpoint(lambda: (settings, store, metrics, lambda: None), lambda: 1000.0)


async def through_asgi(
    app: WebhookEndpoint, headers: list[tuple[bytes, bytes]], body: bytes
) -> list[Any]:
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/webhook", "headers": headers}
    await app(scope, receive, send)
    return sent


def raw_headers(body: bytes) -> list[tuple[bytes, bytes]]:
    return [
        (b"x-github-event", b"workflow_run"),
        (b"x-github-delivery", b"guid-1"),
        (b"x-hub-signature-256", sign(SECRET, body).encode()),
        (b"content-length", str(len(body)).encode()),
    ]


@pytest.mark.parametrize("case", ["too large", "store fails"])
async def test_answer_whole_gives_the_asgi_paths_answer(tmp_path: Path, case: str) -> None:
    if case == "too large":
        body, store = json.dumps({"padding": "x" * 70_000}).encode(), FailingStore()
        status = 413
    else:
        body, store = delivery_body(), FailingStore()
        status = 500
    app = endpoint(tmp_path, store)
    whole = await app.answer_whole(raw_headers(body), body)
    asgi = await through_asgi(app, raw_headers(body), body)
    assert list(whole) == asgi
    assert whole[0]["status"] == status
