"""Connections to one GitHub host, kept alive and shared by every job of the process: an
aiohttp session as the ``RawWire`` under every request (``wire``).

aiohttp's C parser and connection pool cost about a third less CPU per call than
httpcore's, measured end to end (``bench/service.py``); and a request sent straight into
the session, with no httpx request or response built around it, costs less again.
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp
import httpx

from perfbot.github.wire import CONNECT_SECONDS, READ_SECONDS, Call, read_within

# As httpx's ``Timeout(READ_SECONDS, connect=CONNECT_SECONDS)`` is applied: a connection
# from the pool, a new one, and each read of the answer.
_TIMEOUT = aiohttp.ClientTimeout(
    sock_connect=CONNECT_SECONDS, sock_read=READ_SECONDS, connect=READ_SECONDS
)


class _Opened:
    __slots__ = ("_response", "headers", "status_code")

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status_code = response.status
        self.headers: Mapping[str, str] = response.headers

    async def read(self, limit: int | None) -> tuple[bytes, bool]:
        if limit is None:
            return await self._response.read(), True
        return await read_within(self._response.content.iter_any(), limit)

    async def release(self) -> None:
        self._response.release()


class Pools:
    """One aiohttp session, opened on the first request (it needs the running loop)."""

    def __init__(self, max_connections: int) -> None:
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _open_session(self) -> aiohttp.ClientSession:
        # No cookie jar: one session serves every installation and the App's own calls,
        # which must not carry each other's cookies. Certificates as httpx checks them.
        connector = aiohttp.TCPConnector(
            limit=self._max_connections, ssl=httpx.create_ssl_context()
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=_TIMEOUT,
            # The headers are the call's own: no User-Agent or Accept of aiohttp's.
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding"),
        )
        return self._session

    async def open(self, call: Call) -> _Opened:
        session = self._session or self._open_session()
        response = await session.request(
            call.method,
            call.url,
            headers=call.headers,
            data=call.body,
            allow_redirects=False,
            compress=False,
        )
        return _Opened(response)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
