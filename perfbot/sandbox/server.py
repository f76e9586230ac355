"""The fake off the test's thread: an in-process httpx transport, a githubkit client for the
App, and real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar, cast

import httpx
import uvicorn
from githubkit import AppAuthStrategy, GitHub
from githubkit.cache import MemCacheStrategy
from starlette.types import ASGIApp

from perfbot.sandbox.models import rsa_keypair

if TYPE_CHECKING:
    from perfbot.sandbox.serving import FakeServing


Fake = TypeVar("Fake", bound="FakeServing")


class FakeTransport(httpx.AsyncBaseTransport):
    """Routes requests for ``api_url``/``storage_url`` to the fake's ASGI apps, in-process.

    httpx enforces timeouts in its network layer, which ASGITransport bypasses; the read
    timeout is applied here so a ``hang_next`` looks to the client as it would on a socket.
    """

    def __init__(self, fake: FakeServing) -> None:
        self._fake = fake
        self._api = httpx.ASGITransport(app=fake.api_app, client=("127.0.0.1", 50001))
        self._storage = httpx.ASGITransport(app=fake.storage_app, client=("127.0.0.1", 50002))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        target = self._target(request.url)
        if target is None:
            raise httpx.ConnectError(
                f"fake GitHub: nothing listens at {request.url}", request=request
            )
        timeout = cast(dict[str, float | None], request.extensions.get("timeout", {})).get("read")
        try:
            # Not asyncio.wait_for: on Python 3.11 it loses the caller's cancellation when
            # the answer comes at the same moment, and the code under test runs on.
            async with asyncio.timeout(timeout):
                return await target.handle_async_request(request)
        except TimeoutError as error:
            raise httpx.ReadTimeout(
                "fake GitHub did not answer in time", request=request
            ) from error

    def _target(self, url: httpx.URL) -> httpx.ASGITransport | None:
        origin = origin_of(url)
        if origin == origin_of(httpx.URL(self._fake.api_url)):
            return self._api
        if origin == origin_of(httpx.URL(self._fake.storage_url)):
            return self._storage
        return None


def origin_of(url: httpx.URL) -> tuple[str, str, int]:
    default_port = 443 if url.scheme == "https" else 80
    return url.scheme, url.host, url.port or default_port


def app_client(
    fake: FakeServing,
    private_key_pem: str | None = None,
    *,
    in_process: bool = True,
    timeout: float = 10.0,
) -> GitHub[AppAuthStrategy]:
    """githubkit authenticated as the App, pointed at ``fake``.

    Its own token cache: githubkit's default cache is process-wide and keyed by app and
    installation id only, so a token issued by one test's fake would be replayed to the next.
    """
    return GitHub(
        AppAuthStrategy(str(fake.app_id), private_key_pem or rsa_keypair().private_pem),
        base_url=fake.api_url + "/",
        async_transport=fake.transport() if in_process else None,
        http_cache=False,
        auto_retry=False,
        cache_strategy=MemCacheStrategy(),
        timeout=timeout,
    )


def listening_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it. asyncio only sets it itself on sockets created
    # with proto=IPPROTO_TCP; without it every response waits 40 ms for a delayed ACK.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


def uvicorn_server(app: ASGIApp) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ws="none",
        http="h11",
        timeout_graceful_shutdown=1,
    )
    return uvicorn.Server(config)


async def serve_all(servers: Sequence[uvicorn.Server], sockets: Sequence[socket.socket]) -> None:
    await asyncio.gather(
        *(s.serve(sockets=[sock]) for s, sock in zip(servers, sockets, strict=True))
    )


@contextmanager
def serve(fake: Fake, *, timeout: float = 10.0) -> Iterator[Fake]:
    """Serve the API and the storage on 127.0.0.1 (ephemeral ports) from a background thread.

    Sets ``fake.api_url``/``fake.storage_url`` to the real addresses while inside, restores them
    after. The sockets are bound before the thread starts, so the ports are known at once.
    """
    sockets = [listening_socket(), listening_socket()]
    servers = [uvicorn_server(fake.api_app), uvicorn_server(fake.storage_app)]
    saved = fake.api_url, fake.storage_url
    fake.api_url, fake.storage_url = (f"http://127.0.0.1:{s.getsockname()[1]}" for s in sockets)
    thread = threading.Thread(
        target=lambda: asyncio.run(serve_all(servers, sockets)), name="fake-github", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not all(s.started for s in servers):
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("fake GitHub servers did not start")
            time.sleep(0.01)
        yield fake
    finally:
        for server in servers:
            server.should_exit = True
        thread.join(timeout)
        for sock in sockets:
            sock.close()
        fake.api_url, fake.storage_url = saved
