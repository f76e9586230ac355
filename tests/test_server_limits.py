"""uvicorn as ``server_config`` builds it: a request head bounded in size and in time,
connection limits chosen rather than left to defaults, keep-alive intact."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest
import uvicorn

from perfbot import processes
from perfbot.processes import BoundedHttpTools, server_config
from tests.harness import wait_until


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
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        thread = threading.Thread(target=lambda: server.run(sockets=[sock]), daemon=True)
        thread.start()
        try:
            wait_until(lambda: server.started or not thread.is_alive(), 15, "uvicorn to start")
            yield int(sock.getsockname()[1])
        finally:
            server.should_exit = True
            thread.join(15)


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


async def reads_its_body(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
    """Answers once its request's body has come: a request without one stays in flight."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await hello(scope, receive, send)


def healthz(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: perfbot\r\nConnection: close\r\n\r\n")
        return read_until_closed(sock)


LIMIT = 4


@pytest.mark.parametrize(
    "port", [{"limit_concurrency": LIMIT, "app": reads_its_body}], indirect=True
)
def test_connections_without_a_request_do_not_count_against_the_limit(port: int) -> None:
    # uvicorn counted them: LIMIT connections that send nothing refused every delivery.
    idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(2 * LIMIT)]
    try:
        assert healthz(port).startswith(b"HTTP/1.1 200 ")
    finally:
        for sock in idle:
            sock.close()


@pytest.mark.parametrize(
    "port", [{"limit_concurrency": LIMIT, "app": reads_its_body}], indirect=True
)
def test_requests_in_flight_past_the_limit_are_answered_503(port: int) -> None:
    head = b"POST /webhook HTTP/1.1\r\nHost: perfbot\r\nContent-Length: 2\r\n\r\n"
    held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(LIMIT)]
    try:
        for sock in held:
            sock.sendall(head)  # the app waits for a body that does not come
        # Each held request is in flight once its head is parsed: wait for the refusal.
        answer = b""
        for _ in range(100):
            answer = healthz(port)
            if not answer.startswith(b"HTTP/1.1 200 "):
                break
        assert answer.startswith(b"HTTP/1.1 503 ")
        for sock in held:
            sock.sendall(b"ok")  # their bodies: each is answered
            assert sock.recv(4096).startswith(b"HTTP/1.1 200 ")
    finally:
        for sock in held:
            sock.close()
