"""uvicorn as ``server_config`` builds it: a request head bounded in size and in time,
connection limits chosen rather than left to defaults, keep-alive intact."""

from __future__ import annotations

import asyncio
import resource
import socket
import threading
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest
import uvicorn

from perfbot.app import processes
from perfbot.app.processes import BoundedHttpTools, server_config
from tests.harness import uvicorn_on_loopback, wait_until


async def hello(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    headers = [(b"content-length", b"2")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture
def port(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[int]:
    """uvicorn serving ``hello`` on 127.0.0.1 with perfbot's config, in a thread
    (``@pytest.mark.parametrize("port", [options], indirect=True)`` overrides options)."""
    monkeypatch.setattr(processes, "HEAD_TIMEOUT_SECONDS", 0.3)
    extra: dict[str, Any] = dict(getattr(request, "param", {}))
    app = extra.pop("app", hello)
    server = uvicorn.Server(server_config(app, "127.0.0.1", 0, lifespan="off", **extra))
    with uvicorn_on_loopback(server) as port:
        yield port


def read_until_closed(sock: socket.socket, timeout: float = 10.0) -> bytes:
    """Everything the server sends until it closes (bounded); fails if it never does."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        pytest.fail(f"the server kept the connection open for {timeout} s")
    return data


def test_the_config_sets_perfbots_limits() -> None:
    config = server_config(hello, "127.0.0.1", 0)
    assert config.http is BoundedHttpTools
    assert config.limit_concurrency == processes.LIMIT_CONCURRENCY
    assert config.timeout_keep_alive == processes.TIMEOUT_KEEP_ALIVE_SECONDS
    assert config.backlog == processes.BACKLOG
    assert config.h11_max_incomplete_event_size == processes.MAX_HEAD_BYTES
    assert server_config(hello, "127.0.0.1", 0, http="h11").http == "h11"


def test_headers_without_end_are_cut_off_with_431(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"POST /webhook HTTP/1.1\r\nHost: perfbot\r\n")
        line = b"X-Junk: " + b"a" * 8000 + b"\r\n"
        try:
            for _ in range(512):  # 4 MB at most; the server stops reading at 16 KiB
                sock.sendall(line)
        except OSError:
            pass  # closed by the server: what this test waits for
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 431 ")


@pytest.mark.parametrize("sent", [b"", b"POST /webhook HTTP/1.1\r\nHost: perf"])
def test_a_connection_that_sends_no_whole_head_is_closed(port: int, sent: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(sent)
        assert read_until_closed(sock) == b""


def test_a_kept_alive_connection_serves_several_requests(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        for _ in range(3):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: perfbot\r\n\r\n")
            answer = b""
            while not answer.endswith(b"ok"):
                chunk = sock.recv(4096)
                assert chunk, "closed while kept alive"
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 200 ")


# A keep-alive far past read_until_closed's bound: only the early close can pass.
@pytest.mark.parametrize("port", [{"timeout_keep_alive": 600}], indirect=True)
def test_an_answer_before_the_body_ended_closes_the_connection(port: int) -> None:
    # hello answers without reading the body; uvicorn dropped the rest as it came and
    # kept the connection, so a byte now and then held a connection place for ever.
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: perfbot\r\nContent-Length: 100000\r\n\r\na")
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 200 ")


def test_a_pipelined_request_with_its_body_on_the_way_is_still_served(port: int) -> None:
    # The close above is for the answered request's own body, not the next request's.
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            b"GET /healthz HTTP/1.1\r\nHost: perfbot\r\n\r\n"
            b"POST /webhook HTTP/1.1\r\nHost: perfbot\r\nContent-Length: 4\r\n\r\nab"
        )
        answer = b""
        while answer.count(b"ok") < 1:
            chunk = sock.recv(4096)
            assert chunk, "closed before the first answer"
            answer += chunk
        sock.sendall(b"cd")
        while answer.count(b"ok") < 2:
            chunk = sock.recv(4096)
            assert chunk, "closed before the pipelined request was answered"
            answer += chunk
    assert answer.count(b"HTTP/1.1 200 ") == 2


class Gate:
    """An app that counts the requests it starts and the bodies it has read whole, and
    answers a request to ``/hold`` only once ``release`` is set (bounded: 10 s)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.started = 0
        self.bodies = 0
        self.release = threading.Event()

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.started += 1
        while (message := await receive()).get("more_body"):
            pass
        if message["type"] == "http.disconnect":
            return
        self.bodies += 1
        if scope["path"] == "/hold":
            for _ in range(1000):
                if self.release.is_set():
                    break
                await asyncio.sleep(0.01)
        await hello(scope, receive, send)


GATE = Gate()  # the app of the tests below; each starts with a new server and resets it


@pytest.fixture
def gate() -> Gate:
    GATE.reset()
    return GATE


def healthz(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: perfbot\r\nConnection: close\r\n\r\n")
        return read_until_closed(sock)


def served(sock: socket.socket) -> bool:
    """Whether a request sent on this open connection is answered 200."""
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: perfbot\r\n\r\n")
        return sock.recv(4096).startswith(b"HTTP/1.1 200 ")
    except OSError:
        return False


LIMIT = 4
HEAD = b"POST /webhook HTTP/1.1\r\nHost: perfbot\r\nContent-Length: 2\r\n\r\n"


@pytest.mark.parametrize("port", [{"limit_concurrency": LIMIT, "app": GATE}], indirect=True)
def test_connections_without_a_request_do_not_count_against_the_limit(
    gate: Gate, port: int
) -> None:
    # uvicorn counted them: LIMIT connections that send nothing refused every delivery.
    idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(2 * LIMIT)]
    try:
        assert healthz(port).startswith(b"HTTP/1.1 200 ")
    finally:
        for sock in idle:
            sock.close()


@pytest.mark.parametrize("port", [{"limit_concurrency": LIMIT, "app": GATE}], indirect=True)
def test_at_the_limit_the_request_waiting_longest_for_its_body_makes_room(
    gate: Gate, port: int
) -> None:
    # LIMIT requests that sent their heads and hold their bodies back refused every
    # delivery (503) until the body deadline; now each new request closes the oldest.
    held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(LIMIT)]
    try:
        for count, sock in enumerate(held, 1):
            sock.sendall(HEAD)
            # One at a time, so that the oldest is known.
            wait_until(lambda: gate.started == count, 10, "the request to start")  # noqa: B023
        assert healthz(port).startswith(b"HTTP/1.1 200 ")
        oldest = read_until_closed(held[0])
        assert oldest.startswith(b"HTTP/1.1 503 ")
        assert b"retry-after: 10" in oldest
        for sock in held[1:]:  # the others are still being read: their bodies are answered
            sock.sendall(b"ok")
            assert sock.recv(4096).startswith(b"HTTP/1.1 200 ")
    finally:
        for sock in held:
            sock.close()


@pytest.mark.parametrize("port", [{"limit_concurrency": LIMIT, "app": GATE}], indirect=True)
def test_requests_in_flight_with_their_bodies_past_the_limit_are_answered_503(
    gate: Gate, port: int
) -> None:
    held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(LIMIT)]
    try:
        for sock in held:
            sock.sendall(HEAD.replace(b"/webhook", b"/hold") + b"ok")
        wait_until(lambda: gate.bodies == LIMIT, 10, "the held requests' bodies to be read")
        # None of them waits on its sender, so none makes room: the new one is refused.
        assert healthz(port).startswith(b"HTTP/1.1 503 ")
        gate.release.set()
        for sock in held:
            assert sock.recv(4096).startswith(b"HTTP/1.1 200 ")
    finally:
        for sock in held:
            sock.close()


CAP = 8


@pytest.mark.parametrize("port", [{"max_connections": CAP}], indirect=True)
def test_past_the_connection_cap_the_oldest_connections_without_a_request_are_closed(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # uvicorn accepted every connection: open descriptors grew with the connection rate
    # times the head timeout. A head timeout far past read_until_closed's bound: only the
    # cap can close them.
    monkeypatch.setattr(processes, "HEAD_TIMEOUT_SECONDS", 600)
    extra = 3
    idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(CAP + extra)]
    try:
        for sock in idle[:extra]:
            assert read_until_closed(sock, 5) == b""
        assert healthz(port).startswith(b"HTTP/1.1 200 ")  # a real request: served
        assert read_until_closed(idle[extra], 5) == b""  # made room for it, the oldest
        assert all(served(sock) for sock in idle[extra + 1 :])  # the newer ones stay
    finally:
        for sock in idle:
            sock.close()


def test_the_connection_cap_stays_below_the_descriptor_limit() -> None:
    assert processes.connection_cap(-1) == processes.MAX_CONNECTIONS  # unlimited
    assert processes.connection_cap(1_000_000) == processes.MAX_CONNECTIONS
    assert processes.connection_cap(1024) == 1024 - processes.FD_HEADROOM
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    config = server_config(hello, "127.0.0.1", 0)
    assert config.perfbot_max_connections == processes.connection_cap(soft)  # type: ignore[attr-defined]


@pytest.mark.parametrize("port", [{"max_connections": CAP, "app": GATE}], indirect=True)
def test_past_the_cap_with_every_connection_sending_a_request_the_stalled_one_is_closed(
    gate: Gate, port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No connection is without a request: the one waiting longest for its body makes
    # room; a request that has its body is never the one closed.
    monkeypatch.setattr(processes, "HEAD_TIMEOUT_SECONDS", 600)
    busy = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(CAP)]
    try:
        busy[0].sendall(HEAD.replace(b"/webhook", b"/hold") + b"ok")  # has its body
        wait_until(lambda: gate.bodies == 1, 10, "the first body to be read")
        for count, sock in enumerate(busy[1:], 2):
            sock.sendall(HEAD)  # holds its body back
            wait_until(lambda: gate.started == count, 10, "the request to start")  # noqa: B023
        with socket.create_connection(("127.0.0.1", port), timeout=10) as new:
            oldest_stalled = read_until_closed(busy[1], 5)
            assert oldest_stalled.startswith(b"HTTP/1.1 503 ")
            assert served(new)
        gate.release.set()
        assert busy[0].recv(4096).startswith(b"HTTP/1.1 200 ")  # never closed
    finally:
        for sock in busy:
            sock.close()
