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
    extra: dict[str, Any] = getattr(request, "param", {})
    server = uvicorn.Server(server_config(hello, "127.0.0.1", 0, lifespan="off", **extra))
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
