"""The fake's two ASGI apps: every request of an origin handed to one handler, as Starlette's
``Request``, and its ``Response`` sent.

Starlette's application around a single catch-all route did the same through its router
and two middlewares (twice in bench/fakeserver.py, which mounted it): a sixth of the
fake's Python time per request in bench/service.py.
What is kept of them: a method the fake does not serve is answered 405 with ``Allow``, as
Starlette's route answers it; an exception propagates to the server (uvicorn answers 500,
httpx's ASGITransport raises it into the test).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Final

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

# What the fake's routes are declared with, and HEAD, which Starlette adds beside GET.
METHODS: Final = ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")

Handler = Callable[[Request], Awaitable[Response]]


class HandlerApp:
    """An ASGI app answering every HTTP request with ``handler``."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # lifespan and websockets: the fake serves neither
        if scope["method"] in METHODS:
            response = await self.handler(Request(scope, receive))
        else:
            allow = ", ".join(METHODS)
            response = PlainTextResponse("Method Not Allowed", 405, {"allow": allow})
        await response(scope, receive, send)


def path_of(request: Request) -> str:
    """``request.url.path``, without building and parsing the whole URL (a tenth of the
    fake's Python time per request): the decoded path with what would end it escaped."""
    path: str = request.scope["path"]
    return path.replace("?", "%3F").replace("#", "%23").replace("\\", "%5C")


def set_headers(response: Response, values: Mapping[str, str]) -> None:
    """``response.headers[name] = value`` for each, in one pass over the headers it has
    (each assignment alone looks through all of them)."""
    present = {name for name, _ in response.raw_headers}
    for name, value in values.items():
        encoded = name.lower().encode("latin-1")
        if encoded in present:
            response.headers[name] = value
        else:
            response.raw_headers.append((encoded, value.encode("latin-1")))
