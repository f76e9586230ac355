"""httpx at the edges of the wire (``wire``): githubkit's requests into it, and an httpx
transport (the fake GitHub's in-process one, the Actions path's) under it.

* ``HttpxEdge`` is the transport of every githubkit client: each request githubkit builds
  becomes a ``Call`` and goes through the same layers as perfbot's direct calls (the
  gate, the API version, the deadline and the metrics, the shared pools).
* ``HttpxWire`` is a ``RawWire`` over an httpx transport, for what hands perfbot one.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx
from multidict import CIMultiDict

from perfbot.github.wire import (
    ACCEPT_ENCODING,
    CONNECT_SECONDS,
    READ_SECONDS,
    Answer,
    Call,
    Wire,
    read_within,
)

_TIMEOUT = httpx.Timeout(READ_SECONDS, connect=CONNECT_SECONDS).as_dict()
# What describes the body as it came over the wire, not as the answer holds it (read whole,
# its gzip undone): httpx would decode it again.
_OF_TRANSFER = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class HttpxEdge(httpx.AsyncBaseTransport):
    """githubkit's requests sent through a ``Wire``; closing it is a no-op (githubkit
    closes its client after each call or job, the wire outlives them)."""

    def __init__(self, wire: Wire) -> None:
        self._wire = wire

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        headers = CIMultiDict(request.headers.multi_items())
        headers["Accept-Encoding"] = ACCEPT_ENCODING
        call = Call(request.method, str(request.url), request.url.path, headers, body or None)
        try:
            answer = await self._wire.send(call)
        except TimeoutError as exc:
            # githubkit turns httpx's timeouts (only) into its RequestTimeout.
            raise httpx.ReadTimeout(str(exc), request=request) from exc
        return as_response(answer, request)

    async def aclose(self) -> None:
        """Kept open on purpose: see the class docstring."""


def as_response(answer: Answer, request: httpx.Request) -> httpx.Response:
    """``answer`` as httpx's response to ``request``."""
    headers = [(k, v) for k, v in answer.headers.items() if k.lower() not in _OF_TRANSFER]
    return httpx.Response(
        answer.status_code, headers=headers, content=answer.content, request=request
    )


class _Opened:
    __slots__ = ("_response", "headers", "status_code")

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.status_code = response.status_code
        self.headers: Mapping[str, str] = response.headers

    async def read(self, limit: int | None) -> tuple[bytes, bool]:
        try:
            if limit is None:
                return await self._response.aread(), True
            return await read_within(self._response.aiter_bytes(), limit)
        except httpx.TimeoutException as exc:
            raise TimeoutError(str(exc)) from exc

    async def release(self) -> None:
        await self._response.aclose()


class HttpxWire:
    """A ``RawWire`` over an httpx transport."""

    def __init__(self, transport: httpx.AsyncBaseTransport) -> None:
        self._transport = transport

    async def open(self, call: Call) -> _Opened:
        request = httpx.Request(
            call.method,
            call.url,
            headers=list(call.headers.items()),
            content=call.body,
            extensions={"timeout": _TIMEOUT},
        )
        try:
            response = await self._transport.handle_async_request(request)
        except httpx.TimeoutException as exc:
            raise TimeoutError(str(exc)) from exc
        response.request = request
        return _Opened(response)

    async def close(self) -> None:
        await self._transport.aclose()
