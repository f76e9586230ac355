"""The App's HTTP path to GitHub (its wire, perfbot's pools) against real sockets on loopback."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from perfbot.github import wire
from perfbot.github.app import GitHubApp
from perfbot.github.errors import GitHubError
from perfbot.sandbox.fakegithub import rsa_keypair
from perfbot.support.metrics import Metrics


def listening_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


@contextmanager
def served(app: Starlette) -> Iterator[str]:
    """``app`` under uvicorn in a thread on 127.0.0.1; its base URL."""
    sock = listening_socket()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: server.run(sockets=[sock]), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the test server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@asynccontextmanager
async def app_client(base_url: str) -> AsyncIterator[GitHubApp]:
    app = GitHubApp(1, rsa_keypair().private_pem, base_url)
    try:
        yield app
    finally:
        await app.close()


async def test_cookies_set_for_one_installation_never_reach_another() -> None:
    seen: list[str | None] = []

    async def token(request: Request) -> JSONResponse:
        installation = request.path_params["installation"]
        answer = JSONResponse(
            {"token": f"ghs_{installation}", "expires_at": "2099-01-01T00:00:00Z"}, 201
        )
        answer.set_cookie("session", f"installation-{installation}")
        return answer

    async def pull(request: Request) -> JSONResponse:
        seen.append(request.headers.get("cookie"))
        return JSONResponse({"message": "Not Found"}, 404)

    routes = [
        Route("/app/installations/{installation}/access_tokens", token, methods=["POST"]),
        Route("/repos/acme/widget/pulls/{number}", pull),
    ]
    with served(Starlette(routes=routes)) as base_url:
        # A host name, not an IP address: a cookie jar (aiohttp's, httpx's) may ignore
        # cookies from IP addresses, and GitHub is always reached by name.
        async with app_client(base_url.replace("127.0.0.1", "localhost")) as app:
            for installation in (5, 6, 5):
                async with app.installation(installation) as calls:
                    assert await calls.get_pull("acme", "widget", 7) is None
    assert seen == [None, None, None]


async def test_a_peer_that_never_answers_costs_one_deadline_not_a_hung_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pools have no write timeout: the call's deadline ends a request nobody reads."""
    monkeypatch.setattr(wire, "DEADLINE_SECONDS", 0.5)
    held: list[asyncio.StreamWriter] = []

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # accepted, never read, never answered

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    metrics = Metrics()
    app = GitHubApp(1, rsa_keypair().private_pem, f"http://127.0.0.1:{port}", metrics=metrics)
    try:
        # Only a guard against a hang of the test itself: far above the deadline under test.
        async with asyncio.timeout(60):
            with pytest.raises(GitHubError):
                async with app.installation(5) as calls:
                    await calls.create_comment("acme", "widget", 7, "x" * 4_000_000)
    finally:
        await app.close()
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()
    # The call's own deadline ended it (counted as such), not the read timeout or the guard.
    calls_by_status = {
        sample.labels["status"]: sample.value
        for metric in metrics.github_calls.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    }
    assert calls_by_status.get("deadline", 0) >= 1, calls_by_status
