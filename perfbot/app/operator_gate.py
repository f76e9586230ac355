"""The operator's pages (``/metrics``, ``/dry-run``) behind a bearer token, when one is set.

The reverse proxy is the first fence (only ``/webhook`` and ``/healthz`` need to be
public), but a proxy rule is easy to lose in a migration; with ``PERFBOT_OPERATOR_TOKEN``
set, perfbot itself asks for ``Authorization: Bearer <token>`` on those pages, as a
Prometheus scrape job sends with ``authorization: {credentials_file: …}``. The token is
compared in constant time and never written back: a refusal is one sentence.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Final

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

Endpoint = Callable[[Request], Awaitable[Response]]

_CHALLENGE: Final = {
    "www-authenticate": 'Bearer realm="perfbot operator"',
    "cache-control": "no-store",
}


def for_operator(endpoint: Endpoint, token: str | None) -> Endpoint:
    """``endpoint`` as is without a token, else answering 401 to a request without it."""
    if token is None:
        return endpoint
    expected = f"Bearer {token}".encode()

    async def guarded(request: Request) -> Response:
        given = request.headers.get("authorization", "").encode("latin-1", "replace")
        if not hmac.compare_digest(given, expected):
            return PlainTextResponse(
                "This page is for perfbot's operator: send the operator token as "
                "Authorization: Bearer <PERFBOT_OPERATOR_TOKEN>.\n",
                status_code=401,
                headers=_CHALLENGE,
            )
        return await endpoint(request)

    return guarded
